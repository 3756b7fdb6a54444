"""The training loop: accumulation, clipping, logging, evaluation, early stopping, checkpoints."""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ftspec.targets.entrypoints.hf_sft.features import IGNORE_INDEX

if TYPE_CHECKING:
    import torch
    from accelerate import Accelerator

STATE_FILE = "ftspec_state.json"


def log(accelerator: Accelerator, line: str) -> None:
    """One line on the global main process (accelerator.print prints once per node)."""
    if accelerator.is_main_process:
        print(line, flush=True)


@dataclass
class Loop:
    accelerator: Accelerator
    args: argparse.Namespace
    model: Any
    optimizer: Any
    scheduler: Any
    loader: Any
    eval_loader: Any
    steps: int
    step: int = 0
    epoch: int = 0
    best: float | None = None
    bad_evals: int = 0
    stopped: bool = False
    saved: list[Path] = field(default_factory=list)

    def run(self) -> None:
        import torch

        acc, args = self.accelerator, self.args
        skip = self._resume() if args.resume_from_checkpoint else 0
        window: list[torch.Tensor] = []
        while self.step < self.steps and not self.stopped:
            self.loader.set_epoch(self.epoch)
            batches = acc.skip_first_batches(self.loader, skip) if skip else self.loader
            skip = 0
            self.model.train()
            for batch in batches:
                with acc.accumulate(self.model):
                    loss = self.model(**batch).loss
                    acc.backward(loss)
                    if acc.sync_gradients and args.max_grad_norm > 0:
                        acc.clip_grad_norm_(self.model.parameters(), args.max_grad_norm)
                    self.optimizer.step()
                    self.optimizer.zero_grad()
                window.append(loss.detach())
                if not acc.sync_gradients:
                    continue
                self.scheduler.step()
                self.step += 1
                mean_loss = acc.reduce(torch.stack(window).mean(), reduction="mean")
                window.clear()
                if self.step % args.logging_steps == 0 or self.step == self.steps:
                    lr = self.scheduler.get_last_lr()[0]
                    log(acc, f"step={self.step} loss={mean_loss.item():.4f} lr={lr:.1e}")
                self._after("steps")
                if self.step == self.steps or self.stopped:
                    break
            else:
                self.epoch += 1
                self._after("epoch")
                continue
            self.epoch += 1

    def _after(self, boundary: str) -> None:
        args = self.args
        due = (boundary == "epoch") if args.eval_strategy == "epoch" else \
            (boundary == "steps" and args.eval_strategy == "steps"
             and self.step % args.eval_steps == 0)
        if due and not self.stopped:
            self._evaluate()
        due = (boundary == "epoch") if args.save_strategy == "epoch" else \
            (boundary == "steps" and args.save_strategy == "steps"
             and self.step % args.save_steps == 0)
        if due and self.step < self.steps and not self.stopped:
            self._checkpoint()

    def _evaluate(self) -> None:
        loss = eval_loss(self.accelerator, self.model, self.eval_loader)
        log(self.accelerator, f"step={self.step} eval_loss={loss:.4f}")
        args = self.args
        if args.early_stopping_patience <= 0:
            return
        if self.best is None or self.best - loss > args.early_stopping_threshold:
            self.best, self.bad_evals = loss, 0
            return
        self.bad_evals += 1
        if self.bad_evals >= args.early_stopping_patience:
            self.stopped = True
            log(self.accelerator, f"early stopping at step={self.step}: "
                f"best eval_loss={self.best:.4f}, {self.bad_evals} evaluations without "
                f"an improvement over {args.early_stopping_threshold}")

    def _checkpoint(self) -> None:
        acc = self.accelerator
        folder = self.args.output_dir / f"checkpoint-{self.step}"
        acc.save_state(str(folder))
        if acc.is_main_process:
            (folder / STATE_FILE).write_text(json.dumps(
                {"step": self.step, "epoch": self.epoch, "best": self.best,
                 "bad_evals": self.bad_evals}) + "\n")
            self.saved.append(folder)
            limit = self.args.save_total_limit
            while limit > 0 and len(self.saved) > limit:
                shutil.rmtree(self.saved.pop(0), ignore_errors=True)
        acc.wait_for_everyone()
        log(acc, f"checkpoint step={self.step} in {folder}")

    def _resume(self) -> int:
        """Load a checkpoint; return the batches of the current epoch to skip."""
        folder = Path(self.args.resume_from_checkpoint)
        state_file = folder / STATE_FILE
        if not state_file.is_file():
            raise SystemExit(f"{folder}: not a checkpoint of this entrypoint (no {STATE_FILE})")
        self.accelerator.load_state(str(folder))
        state = json.loads(state_file.read_text())
        self.step, self.best, self.bad_evals = state["step"], state["best"], state["bad_evals"]
        done = self.step * self.args.gradient_accumulation_steps
        self.epoch = done // len(self.loader)
        log(self.accelerator, f"resumed from {folder} at step={self.step}")
        return int(done % len(self.loader))


def eval_loss(accelerator: Accelerator, model: Any, loader: Any) -> float:
    """Mean token cross-entropy over the whole eval set (every rank's share, no duplicates)."""
    import torch

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in loader:
            labels = batch["labels"]
            logits = model(input_ids=batch["input_ids"],
                           attention_mask=batch["attention_mask"]).logits
            logits = logits[:, -labels.shape[1]:]  # prompt tuning prepends virtual tokens
            shifted = labels[:, 1:]
            losses = torch.nn.functional.cross_entropy(
                logits[:, :-1].float().transpose(1, 2), shifted, ignore_index=IGNORE_INDEX,
                reduction="none")
            sums = losses.sum(dim=1).double()
            counts = (shifted != IGNORE_INDEX).sum(dim=1).double()
            sums, counts = accelerator.gather_for_metrics((sums, counts))
            total += float(sums.sum())
            count += int(counts.sum())
    model.train()
    return total / max(count, 1)


def report_world_size(accelerator: Accelerator, model: Any, path: Path) -> None:
    """Gather every rank's index and a checksum of its trainable weights onto the main process."""
    import torch

    checksum = sum(p.detach().double().sum() for p in model.parameters() if p.requires_grad)
    row = torch.tensor([[float(accelerator.process_index), float(checksum)]],
                       dtype=torch.float64, device=accelerator.device)
    rows = accelerator.gather(row).tolist()
    if accelerator.is_main_process:
        sums = [r[1] for r in rows]
        report = {"world_size": accelerator.num_processes,
                  "ranks_seen": sorted(int(r[0]) for r in rows),
                  "params_in_sync": max(sums) - min(sums) <= 1e-9 * max(1.0, abs(sums[0]))}
        path.write_text(json.dumps(report, sort_keys=True) + "\n")


def save(accelerator: Accelerator, model: Any, tokenizer: Any, output_dir: Path) -> None:
    accelerator.wait_for_everyone()
    state = accelerator.get_state_dict(model)  # collective under FSDP / DeepSpeed
    if accelerator.is_main_process:
        accelerator.unwrap_model(model).save_pretrained(
            output_dir, state_dict=state, save_function=accelerator.save)
        tokenizer.save_pretrained(output_dir)
        log(accelerator, f"saved to {output_dir}")
    accelerator.end_training()
