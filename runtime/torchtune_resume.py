"""torchtune 0.6.1's single-device LoRA recipe, resumed with its step count restored.

Started by ``tune run ftspec/runtime/torchtune_resume.py --config config.yaml`` (``tune run``
runs a custom recipe given as a path as the module of that dotted name), only for a run that
resumes (``targets/torchtune_resume.py``).

Why this is not the shipped recipe as it is: ``LoRAFinetuneRecipeSingleDevice.setup`` sets
``global_step = epochs_run * steps_per_epoch`` inside the branch taken only when
``max_steps_per_epoch`` cuts the epoch short, so a resumed run without it starts its
learning-rate schedule again at warm-up (``last_epoch=-1``) and numbers its steps from 1. The
distributed and full recipes set it unconditionally. Here the recipe's own class and main run
unchanged but for that assignment, made where the recipe builds its scheduler (the step
count is known there), exactly as the other recipes make it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

RECIPE = "lora_finetune_single_device"


def _load_recipe() -> ModuleType:
    """The shipped recipe's module, loaded from its file as ``tune run`` finds it (beside
    the torchtune package; its ``recipes`` folder refuses to be imported as a package)."""
    import torchtune

    path = Path(torchtune.__file__).parent.parent / "recipes" / f"{RECIPE}.py"
    spec = importlib.util.spec_from_file_location(RECIPE, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    recipe: Any = _load_recipe()
    shipped = recipe.LoRAFinetuneRecipeSingleDevice

    class Resumed(shipped):  # type: ignore[misc, valid-type]
        def _setup_lr_scheduler(self, cfg_lr_scheduler: Any, num_training_steps: int,
                                last_epoch: int) -> Any:
            self.global_step = self.epochs_run * self._steps_per_epoch
            return super()._setup_lr_scheduler(cfg_lr_scheduler, num_training_steps,
                                               self.global_step - 1)

    recipe.LoRAFinetuneRecipeSingleDevice = Resumed  # recipe_main builds it by this name
    recipe.recipe_main()


if __name__ == "__main__":
    main()
