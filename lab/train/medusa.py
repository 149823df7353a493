"""Medusa-1 training by self-distillation: the model answers prompts greedily, and its heads learn to guess
its own tokens 2..K+1 places ahead from its last hidden states. The model stays frozen; only the heads'
W_k (and b_k) train, with loss = sum_k 0.8^k * CE(logits_k at t, token at t+k+1).

    python -m lab.medusa train [--prompts FILE --source NAME --licence LICENCE] [--out FOLDER]

The prompts and their rules are lab.train.distillation's. A run keeps what it has done in its folder: answers
as they are generated, a checkpoint every N steps, so a stopped run loses minutes, not the job: run the
same command again and it resumes from the last checkpoint.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.nn import functional

from lab.train.distillation import (
    SPOT_PROMPTS,
    DataSource,
    command_inputs,
    distilled,
    greedy_answers,
    run_facts,
    train_command,
    write_record,
)
from lab.train.training import RunClock, TrainingLoop
from lookahead_core.methods.medusa import DEFAULT_HEADS, MedusaHeads, heads_for, save_heads
from lookahead_core.models import LoadedModel

DECAY = 0.8  # head k's loss weighs 0.8^k (Medusa-1)
IGNORE = -100  # a target cross-entropy skips: past the end, or text the model did not write
ACCURACY_RANKS = 10  # how many of each head's choices the accuracy (and so the sparse tree) covers
HEADS = "heads.safetensors"


@dataclass(frozen=True, kw_only=True)
class TrainSettings:
    heads: int = DEFAULT_HEADS
    steps: int = 1000
    batch: int = 64
    learning_rate: float = 1e-3
    checkpoint_every: int = 100
    seed: int = 0
    held_out: float = 0.1  # the share of prompts kept out of training, to measure accuracy on
    answer_tokens: int = 256  # new tokens per greedy answer


@dataclass(frozen=True, kw_only=True)
class HeadAccuracy:
    head: int  # 1-based: head k guesses the token k + 1 places past the hidden state's own
    top1: float
    top5: float


@dataclass(kw_only=True)
class TrainingRecord:
    """What a training run did and measured, written as JSON beside the heads."""

    model: str
    source: str
    licence: str
    prompts: int
    held_out_prompts: int
    train_tokens: int  # positions with at least one head's target, in the training prompts
    held_out_tokens: int
    settings: TrainSettings
    loss: list[float]  # the weighted loss at every step, on its batch
    accuracy: list[HeadAccuracy]  # on the held-out prompts' answers
    seconds: float  # wall time over every invocation of the run: answers, hidden states, training, accuracy
    spot_check: dict | None = None  # on the first SPOT_PROMPTS held-out prompts: what a re-measurement must find


# ----------------------------------------------------------------------------------------------
# Data: the model's last hidden states on its own answers, and each head's targets


@dataclass
class Examples:
    """Last hidden states (positions x d) and each head's target there (positions x K, IGNORE where none)."""

    hidden: torch.Tensor
    targets: torch.Tensor

    def __len__(self) -> int:
        return self.hidden.shape[0]


def head_targets(prompt: list[int], answer: list[int], heads: int) -> torch.Tensor:
    """(positions x K): at position t, head k's target is token t + k + 1, when the model wrote it."""
    ids = prompt + answer
    targets = torch.full((len(ids), heads), IGNORE, dtype=torch.long)
    for t in range(len(ids)):
        for k in range(1, heads + 1):
            if len(prompt) <= t + k + 1 < len(ids):
                targets[t, k - 1] = ids[t + k + 1]
    return targets


@torch.inference_mode()
def examples(model, prompts: list[list[int]], answers_: list[list[int]], heads: int) -> Examples:
    """The model's last hidden states on each prompt + answer (one pass each) and the heads' targets,
    positions with no target left out."""
    hidden, targets = [], []
    for prompt, answer in zip(prompts, answers_, strict=True):
        ids = torch.tensor([prompt + answer], device=model.device)
        wanted = head_targets(prompt, answer, heads)
        keep = (wanted != IGNORE).any(dim=1)
        hidden.append(model.base_model(input_ids=ids).last_hidden_state[0].float().cpu()[keep])
        targets.append(wanted[keep])
    return Examples(torch.cat(hidden), torch.cat(targets))


# ----------------------------------------------------------------------------------------------
# The loss and the accuracy


def head_losses(heads: MedusaHeads, model, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Each head's mean cross-entropy over the positions where it has a target (K,)."""
    logits = heads.logits(model, hidden.to(heads.weight.device))  # (B, K, vocab)
    targets = targets.to(logits.device)
    each = functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE, reduction="none")
    each = each.view(targets.shape)
    counted = (targets != IGNORE).sum(dim=0).clamp(min=1)
    return each.sum(dim=0) / counted


def medusa_loss(losses: torch.Tensor) -> torch.Tensor:
    """sum_k 0.8^k * loss_k, k from 1."""
    weights = DECAY ** torch.arange(1, losses.shape[0] + 1, device=losses.device, dtype=losses.dtype)
    return (weights * losses).sum()


@torch.inference_mode()
def rank_accuracy(heads: MedusaHeads, model, data: Examples, batch: int = 256) -> list[list[float]]:
    """accuracy[k][i]: how often head k + 1's i-th choice was its target, for i < ACCURACY_RANKS."""
    hits = torch.zeros(heads.heads, ACCURACY_RANKS)
    counts = torch.zeros(heads.heads)
    for start in range(0, len(data), batch):
        logits = heads.logits(model, data.hidden[start : start + batch].to(heads.weight.device)).cpu()
        targets = data.targets[start : start + batch]
        top = logits.topk(ACCURACY_RANKS, dim=-1).indices  # (B, K, ranks)
        valid = targets != IGNORE
        hits += ((top == targets[..., None]) & valid[..., None]).sum(dim=0)
        counts += valid.sum(dim=0)
    return (hits / counts.clamp(min=1)[:, None]).tolist()


def spot_check(lm: LoadedModel, heads: MedusaHeads, prompts: list[list[int]], tokens: int) -> dict:
    """Each head's top-1 accuracy on the model's answers to `prompts`, answered here in one batch: what a
    re-measurement on the same prompts must find again."""
    data = examples(lm.model, prompts, greedy_answers(lm, prompts, tokens), heads.heads)
    return {
        "prompts": len(prompts),
        "positions": len(data),
        "top1": [row[0] for row in rank_accuracy(heads, lm.model, data)],
    }


def summary_accuracy(accuracy: list[list[float]]) -> list[HeadAccuracy]:
    return [HeadAccuracy(head=k + 1, top1=a[0], top5=sum(a[:5])) for k, a in enumerate(accuracy)]


# ----------------------------------------------------------------------------------------------
# Training, checkpointed


def train_heads(
    heads: MedusaHeads, model, data: Examples, settings: TrainSettings, folder: Path, clock: RunClock
) -> list[float]:
    """AdamW on the heads alone, random batches of positions from a seeded generator, checkpointed every
    `checkpoint_every` steps and resumed (lab.train.training). The loss curve."""
    model.requires_grad_(False)  # the output layer is shared and frozen

    def batch_loss(generator: torch.Generator) -> torch.Tensor:
        rows = torch.randint(len(data), (settings.batch,), generator=generator)
        return medusa_loss(head_losses(heads, model, data.hidden[rows], data.targets[rows]))

    optimizer = torch.optim.AdamW(heads.parameters(), lr=settings.learning_rate)
    loop = TrainingLoop(steps=settings.steps, checkpoint_every=settings.checkpoint_every, seed=settings.seed)
    return loop.run(heads, optimizer, batch_loss, folder, clock, "medusa heads")


def train(
    lm: LoadedModel, prompts: list[list[int]], source: DataSource, settings: TrainSettings, folder: Path
) -> TrainingRecord:
    """Train heads for `lm` on its greedy answers to `prompts` (token ids); write the heads (with their
    measured accuracy, which shapes their sparse tree) and the training record into `folder`."""
    clock, split = distilled(lm, prompts, settings, folder)
    kept = split.kept
    training = examples(lm.model, *split.training, settings.heads)
    held_out = examples(lm.model, *split.held_out, settings.heads) if kept else training
    heads = heads_for(lm.model, lm.name, settings.heads).float()
    losses = train_heads(heads, lm.model, training, settings, folder, clock)
    heads.accuracy = rank_accuracy(heads, lm.model, held_out)
    save_heads(heads, folder / HEADS)
    record = TrainingRecord(
        **run_facts(lm, source, split, settings, losses, clock),
        train_tokens=len(training),
        held_out_tokens=len(held_out) if kept else 0,
        accuracy=summary_accuracy(heads.accuracy),
        spot_check=spot_check(lm, heads, split.held_out[0][:SPOT_PROMPTS], settings.answer_tokens) if kept else None,
    )
    write_record(folder, record, clock)
    return record


# ----------------------------------------------------------------------------------------------
# The command line


def main(argv: list[str] | None = None) -> int:
    args = train_command(
        "python -m lab.medusa", __doc__.split("\n\n")[0], "Medusa heads", "medusa-training", TrainSettings
    ).parse_args(argv)
    lm, prompts, source, settings = command_inputs(args, TrainSettings)
    record = train(lm, prompts, source, settings, args.out)
    for head in record.accuracy:
        print(f"head {head.head}: top-1 {head.top1:.3f}, top-5 {head.top5:.3f} on {record.held_out_tokens} tokens")
    print(f"heads and record in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
