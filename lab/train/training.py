"""The training loop the lab's trained parts share (Medusa's heads, the EAGLE layer): seeded batches, a
checkpoint every N steps written whole or not at all, resumption to exactly the state an unbroken run would
reach, and a clock that counts the wall time of every invocation.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

CHECKPOINT = "checkpoint.pt"
CLOCK = "clock.json"  # the wall time a run has spent, over every invocation


class RunClock:
    """The wall time a training run has spent in all its invocations: kept in the run's folder and saved with
    its work (each batch of answers, each checkpoint), so a resumed run's record counts the time before it."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / CLOCK
        self.before = json.loads(self.path.read_text())["seconds"] if self.path.exists() else 0.0
        self.start = time.perf_counter()

    def seconds(self) -> float:
        return self.before + time.perf_counter() - self.start

    def save(self) -> None:
        self.path.write_text(json.dumps({"seconds": self.seconds()}))


def save_checkpoint(folder: Path, step: int, module, optimizer, generator, losses: list[float]) -> None:
    """Everything a resumed run needs to go on exactly as this one would have; written whole or not at all."""
    state = {
        "step": step,
        "heads": module.state_dict(),  # the key of the first runs' checkpoints, kept so they still resume
        "optimizer": optimizer.state_dict(),
        "generator": generator.get_state(),
        "losses": losses,
    }
    partial = folder / (CHECKPOINT + ".partial")
    torch.save(state, partial)
    partial.replace(folder / CHECKPOINT)


def resume(folder: Path, module, optimizer, generator) -> tuple[int, list[float]]:
    """Load the folder's last checkpoint into the module, the optimizer and the batch generator, if there is one;
    the step it was taken after and the loss curve so far."""
    path = folder / CHECKPOINT
    if not path.exists():
        return 0, []
    state = torch.load(path, weights_only=True)
    module.load_state_dict(state["heads"])
    optimizer.load_state_dict(state["optimizer"])
    generator.set_state(state["generator"])
    return state["step"], state["losses"]


@dataclass(frozen=True, kw_only=True)
class TrainingLoop:
    """`steps` optimiser steps on batches drawn from a generator seeded with `seed`, a checkpoint every
    `checkpoint_every` steps and at the end, gradients clipped to norm `clip` when it is given."""

    steps: int
    checkpoint_every: int
    seed: int
    clip: float | None = None

    def run(
        self,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        batch_loss: Callable[[torch.Generator], torch.Tensor],
        folder: Path,
        clock: RunClock,
        desc: str,
    ) -> list[float]:
        """Train `module` on `batch_loss(generator)` (one batch's loss, drawn with the run's generator), resuming
        from the folder's checkpoint; the loss at every step, the resumed ones included."""
        generator = torch.Generator().manual_seed(self.seed)
        step, losses = resume(folder, module, optimizer, generator)
        module.train()
        with torch.enable_grad(), tqdm(total=self.steps, initial=step, desc=desc) as bar:
            while step < self.steps:
                loss = batch_loss(generator)
                optimizer.zero_grad()
                loss.backward()
                if self.clip is not None:
                    torch.nn.utils.clip_grad_norm_(module.parameters(), self.clip)
                optimizer.step()
                step += 1
                losses.append(float(loss.detach()))
                bar.update(1)
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
                if step % self.checkpoint_every == 0 or step == self.steps:
                    save_checkpoint(folder, step, module, optimizer, generator, losses)
                    clock.save()
        module.eval()
        return losses
