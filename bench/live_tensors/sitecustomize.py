"""Put on ``PYTHONPATH`` by bench/cpu_memory.py: live tensor bytes per training-step phase.

Every Python process that imports torch gets, once torch is imported, a
``TorchDispatchMode`` that sees every operator's outputs and keeps a table of the storages
alive (a ``weakref.finalize`` on each storage: torch keeps one Python object per storage for
its whole life, so the callback runs when the memory is given back). Tensors made outside
the dispatcher (weights read from a file by ``frombuffer``) are added by a sweep of the
garbage collector's tensors at the first backward. The run itself is unchanged: the command,
its config and its code are what ftspec compiled.

Phases, from hooks on the run's own calls:
- ``forward``: from the previous optimizer step's end (``zero_grad``, the next batch, the
  forward and the loss) to ``Tensor.backward``; the first step's is ``load`` (model loading
  included) and is left out of the comparison;
- ``backward``: inside ``Tensor.backward`` (recomputation under checkpointing included);
- ``clip``: between backward and the optimizer step (gradient clipping);
- ``optimizer``: between the optimizer's step pre- and post-hooks (global hooks).

At each phase's peak the live bytes are split by when their storage was made (``born``:
load / forward / backward / clip / optimizer of any step; ``grad`` for the parameters'
gradients, retagged by a post-accumulate-grad hook on every trainable parameter) and, in
``born_logits``, the same split of the loss head's tensors: shaped like logits (last
dimension the vocabulary, or one of TRL's fused-head tiles: 32768 wide, the last one what
is left of the vocabulary) or, made in the backward, vocabulary (or tile) rows x hidden (the
head weight's gradient before it is accumulated, the fp32 copy of a weight chunk); ``logit_ops`` names the operators that made those.
At the optimizer's hooks the gradients, trainable parameters and optimizer state are summed
from the optimizer itself. What an operator allocates inside itself and frees before it
returns (kernel scratch) is not seen: the process's peak RSS is the cross-check.

Written here: torch's ``MemTracker`` (``torch.distributed._tools``) needs the model and the
optimizer handed to it, which a compiled run does not do; its split by module is not the
split the estimate makes.
"""

from __future__ import annotations

import atexit
import gc
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import resource
import sys
import warnings
import weakref
from typing import Any

OUT_ENV = "FTSPEC_BENCH_LIVE"
VOCAB_ENV = "FTSPEC_BENCH_VOCAB"
TILE = 32768
"""``trl.trainer.utils._CHUNKED_LOGPROB_CHUNK_SIZE``: the fused head's tile width."""


class _Tracker:
    def __init__(self, vocab: int) -> None:
        self.vocab = vocab
        self.widths = {vocab, TILE, vocab % TILE} - {0} if vocab else set()
        """Logits-shaped: the vocabulary wide, or one of the fused head's tiles (the last
        one is what is left of the vocabulary)."""
        self.widest = 0
        """The widest logits-shaped tensor's last dimension: the vocabulary when the full
        logits were built, a tile's width when only tiles were."""
        self.logit_ops: dict[str, list[int]] = {}
        """Operators that made logits-shaped tensors: [count, bytes, last shape seen]."""
        self.live: dict[int, tuple[int, str, bool]] = {}
        self.total = 0
        self.born: dict[str, int] = {}
        self.logits = 0
        self.born_logits: dict[str, int] = {}
        self.phase = "load"
        self.step = 0
        self.records: dict[tuple[int, str], dict[str, Any]] = {}
        self.steps: list[dict[str, Any]] = []
        self.swept = False
        self.weights = 0
        self.rss_start = 0
        self._enter("load")

    def _enter(self, phase: str) -> None:
        self.phase = phase
        self.records.setdefault((self.step, phase), {
            "step": self.step, "phase": phase, "start": self.total, "peak": self.total,
            "born": dict(self.born), "logits": self.logits,
            "born_logits": dict(self.born_logits)})

    def add(self, t: Any, born: str | None = None, op: str = "") -> None:
        if t.device.type != "cpu":
            return
        st = t.untyped_storage()
        key = st._cdata
        if key in self.live:
            return
        n = st.nbytes()
        phase = born or self.phase
        # the loss head's: logits-shaped, or (made in the backward) vocabulary rows x hidden:
        # the head weight's gradient before autograd accumulates it (then it is retagged
        # grad) and, in TRL's fold without Triton, the fp32 copy of a weight chunk
        shaped = bool(self.vocab) and t.dim() >= 2 and not isinstance(t, _Parameter) \
            and (t.shape[-1] in self.widths
                 or (phase == "backward" and t.dim() == 2 and t.shape[0] in self.widths))
        if shaped and t.shape[-1] in self.widths:
            self.widest = max(self.widest, int(t.shape[-1]))
        if shaped:
            seen = self.logit_ops.setdefault(op, [0, 0, []])
            seen[0] += 1
            seen[1] += n
            seen[2] = [*t.shape, str(t.dtype)]
        self.live[key] = (n, phase, shaped)
        weakref.finalize(st, self.free, key)
        self.total += n
        self.born[phase] = self.born.get(phase, 0) + n
        if shaped:
            self.logits += n
            self.born_logits[phase] = self.born_logits.get(phase, 0) + n
        rec = self.records[(self.step, self.phase)]
        if self.total > rec["peak"]:
            rec["peak"] = self.total
            rec["born"] = dict(self.born)
            rec["logits"] = self.logits
            rec["born_logits"] = dict(self.born_logits)

    def retag(self, t: Any, born: str) -> None:
        """Count a live storage as made in ``born`` from now on (a parameter's gradient,
        once autograd has accumulated it)."""
        if t is None:
            return
        key = t.untyped_storage()._cdata
        entry = self.live.get(key)
        if entry is None or entry[1] == born:
            return
        n, phase, shaped = entry
        self.live[key] = (n, born, shaped)
        self.born[phase] -= n
        self.born[born] = self.born.get(born, 0) + n
        if shaped:
            self.born_logits[phase] -= n
            self.born_logits[born] = self.born_logits.get(born, 0) + n

    def free(self, key: int) -> None:
        entry = self.live.pop(key, None)
        if entry is None:
            return
        n, phase, shaped = entry
        self.total -= n
        self.born[phase] -= n
        if shaped:
            self.logits -= n
            self.born_logits[phase] -= n

    # --- phase hooks ---------------------------------------------------------------------

    def backward_begins(self) -> None:
        if not self.swept:
            self.swept = True
            self.rss_start = _rss()
            seen: set[int] = set()
            with warnings.catch_warnings():  # isinstance on deprecated module proxies
                warnings.simplefilter("ignore")
                objects = gc.get_objects()
                tensors = [o for o in objects if isinstance(o, _Tensor)]
            for obj in tensors:
                if isinstance(obj, _Tensor):
                    self.add(obj, "load")
                    if isinstance(obj, _Parameter) and obj.device.type == "cpu":
                        st = obj.untyped_storage()
                        if st._cdata not in seen:
                            seen.add(st._cdata)
                            self.weights += st.nbytes()
                        if obj.requires_grad:
                            obj.register_post_accumulate_grad_hook(
                                lambda p: self.retag(p.grad, "grad"))
        self._enter("backward")

    def backward_ends(self) -> None:
        self._enter("clip")

    def optimizer_begins(self, optimizer: Any) -> None:
        self._enter("optimizer")
        params = [p for g in optimizer.param_groups for p in g["params"]]
        grads = [p.grad for p in params if p.grad is not None]
        self.steps.append({"step": self.step, "trainable": _bytes(params),
                           "gradients": _bytes(grads)})

    def optimizer_ends(self, optimizer: Any) -> None:
        state = [v for s in optimizer.state.values() for v in s.values()
                 if isinstance(v, _Tensor)]
        self.steps[-1]["optimizer_state"] = _bytes(state)
        self.step += 1
        self._enter("forward")
        _dump()  # now too: a launcher may leave by os._exit, skipping atexit

    def report(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "argv": sys.argv[:4], "weights": self.weights,
                "rss_start": self.rss_start,
                "rss_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                "steps": self.steps, "phases": list(self.records.values()),
                "logit_ops": self.logit_ops, "widest_logits": self.widest}


def _bytes(tensors: list[Any]) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        st = t.untyped_storage()
        seen[st._cdata] = st.nbytes()
    return sum(seen.values())


def _rss() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


_tracker: _Tracker | None = None
_Tensor: Any = None
_Parameter: Any = None


def _install(torch: Any) -> None:
    global _tracker, _Tensor, _Parameter
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    _Tensor, _Parameter = torch.Tensor, torch.nn.Parameter
    tracker = _tracker = _Tracker(int(os.environ.get(VOCAB_ENV) or 0))

    class LiveStorages(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if isinstance(t, _Tensor):
                    tracker.add(t, op=str(func))
            return out

    original_backward = torch.Tensor.backward

    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        tracker.backward_begins()
        try:
            return original_backward(self, *args, **kwargs)
        finally:
            tracker.backward_ends()

    torch.Tensor.backward = backward
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    register_optimizer_step_pre_hook(lambda opt, *_: tracker.optimizer_begins(opt))
    register_optimizer_step_post_hook(lambda opt, *_: tracker.optimizer_ends(opt))
    LiveStorages().__enter__()  # for the rest of the process, in this thread


class _AfterTorch(importlib.abc.MetaPathFinder):
    """Installs the tracker once torch is imported. It stays on ``sys.meta_path`` until
    then: libraries look torch up (``importlib.util.find_spec``) before importing it."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module
        finder = self

        def exec_module(module: Any) -> None:
            run(module)
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
                _install(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _dump() -> None:
    """The record so far, to ``$FTSPEC_BENCH_LIVE.<pid>`` (replaced at every step)."""
    path = os.environ.get(OUT_ENV)
    if not path or _tracker is None or not _tracker.swept:
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(json.dumps(_tracker.report()) + "\n")
    os.replace(tmp, f"{path}.{os.getpid()}")


if os.environ.get(OUT_ENV):
    sys.meta_path.insert(0, _AfterTorch())
    atexit.register(_dump)
# Hand on to the sitecustomize this one shadows, if the interpreter has one.
_here = os.path.dirname(os.path.abspath(__file__))
_rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _spec is not None and _spec.loader is not None:
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
