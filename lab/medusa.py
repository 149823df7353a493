"""Medusa-1 training by self-distillation: the model answers prompts greedily, and its heads learn to guess
its own tokens 2..K+1 places ahead from its last hidden states. The model stays frozen; only the heads'
W_k (and b_k) train, with loss = sum_k 0.8^k * CE(logits_k at t, token at t+k+1).

    python -m lab.medusa train [--prompts FILE --source NAME --licence LICENCE] [--out FOLDER]

By default the prompts are the shipped Self-Instruct set (assets/prompts/, Apache-2.0). Other prompts
must not overlap the prompt sets the lab measures on (HumanEval, MT-Bench, GSM8K): name where they come
from and under which licence; both go into the training record. A run keeps what it has done in its
folder: answers as they are generated, a checkpoint every N steps, so a stopped run loses minutes, not
the job: run the same command again and it resumes from the last checkpoint.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.nn import functional
from tqdm import tqdm

from lookahead_core.medusa import DEFAULT_HEADS, MedusaHeads, heads_for, save_heads
from lookahead_core.models import LoadedModel, cache_root, encode_prompt, load_model

from .datasets import SHIPPED_SETS
from .training import RunClock, TrainingLoop

DECAY = 0.8  # head k's loss weighs 0.8^k (Medusa-1)
IGNORE = -100  # a target cross-entropy skips: past the end, or text the model did not write
ACCURACY_RANKS = 10  # how many of each head's choices the accuracy (and so the sparse tree) covers
ANSWERS, HEADS, RECORD = "answers.jsonl", "heads.safetensors", "training.json"
ANSWER_BATCH = 16  # prompts answered in one batched generate


@dataclass(frozen=True, kw_only=True)
class DataSource:
    """Where the training prompts come from and under which licence (both recorded)."""

    name: str
    licence: str


SELF_INSTRUCT = DataSource(
    name="Self-Instruct (yizhongw/self-instruct at 0b26cca): its 175 seed tasks and 252 user-oriented instructions",
    licence="Apache-2.0",
)


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
# Data: the model's own greedy answers and its last hidden states on them


def cut_after_eos(tokens: list[int], eos_ids) -> list[int]:
    """`tokens` up to and including the first end-of-sequence token (generate pads a finished row after it)."""
    end = next((i + 1 for i, t in enumerate(tokens) if t in eos_ids), len(tokens))
    return tokens[:end]


@torch.inference_mode()
def greedy_answers(lm: LoadedModel, prompts: list[list[int]], tokens: int) -> list[list[int]]:
    """The model's greedy continuations of a batch of prompts, in one left-padded `generate`.

    Batching changes float rounding a little, so where two tokens are all but tied a batched answer
    may part from the one-at-a-time greedy answer: the targets are still the model's own argmax
    choices, which is what self-distillation asks of them, and a batch makes them several times faster
    on a CPU (16 rows cost about what 3 do)."""
    pad = getattr(lm.tokenizer, "pad_token_id", None)
    pad = pad if pad is not None else min(lm.eos_ids, default=0)
    width = max(map(len, prompts))
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=lm.device)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=lm.device)
    output = lm.model.generate(
        ids, attention_mask=mask, do_sample=False, max_new_tokens=tokens, min_new_tokens=0, pad_token_id=pad
    )
    return [cut_after_eos(row[width:].tolist(), lm.eos_ids) for row in output]


def answers(lm: LoadedModel, prompts: list[list[int]], tokens: int, folder: Path, clock: RunClock) -> list[list[int]]:
    """Each prompt's greedy answer, generated once, ANSWER_BATCH prompts at a time: appended to the folder's
    answers file as each batch is done and read back by a later run, which generates only the rest."""
    path = folder / ANSWERS
    done = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    if [d["prompt"] for d in done] != prompts[: len(done)]:
        raise ValueError(f"{path} holds answers to other prompts: use another folder")
    with path.open("a") as out, tqdm(desc="answers", initial=len(done), total=len(prompts)) as bar:
        for start in range(len(done), len(prompts), ANSWER_BATCH):
            batch = prompts[start : start + ANSWER_BATCH]
            for prompt, answer in zip(batch, greedy_answers(lm, batch, tokens), strict=True):
                done.append({"prompt": prompt, "answer": answer})
                out.write(json.dumps(done[-1]) + "\n")
            out.flush()
            clock.save()
            bar.update(len(batch))
    return [d["answer"] for d in done]


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


SPOT_PROMPTS = 3  # held-out prompts a later re-measurement answers again (tests/test_medusa_shipped.py)


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
    `checkpoint_every` steps and resumed (lab.training). The loss curve."""
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
    folder.mkdir(parents=True, exist_ok=True)
    clock = RunClock(folder)
    torch.manual_seed(settings.seed)
    replies = answers(lm, prompts, settings.answer_tokens, folder, clock)
    kept = max(1, math.ceil(settings.held_out * len(prompts))) if len(prompts) > 1 else 0
    cut = len(prompts) - kept
    training = examples(lm.model, prompts[:cut], replies[:cut], settings.heads)
    held_out = examples(lm.model, prompts[cut:], replies[cut:], settings.heads) if kept else training
    heads = heads_for(lm.model, lm.name, settings.heads).float()
    losses = train_heads(heads, lm.model, training, settings, folder, clock)
    heads.accuracy = rank_accuracy(heads, lm.model, held_out)
    save_heads(heads, folder / HEADS)
    record = TrainingRecord(
        model=lm.name,
        source=source.name,
        licence=source.licence,
        prompts=cut,
        held_out_prompts=kept,
        train_tokens=len(training),
        held_out_tokens=len(held_out) if kept else 0,
        settings=settings,
        loss=losses,
        accuracy=summary_accuracy(heads.accuracy),
        seconds=clock.seconds(),
        spot_check=spot_check(lm, heads, prompts[cut:][:SPOT_PROMPTS], settings.answer_tokens) if kept else None,
    )
    clock.save()
    (folder / RECORD).write_text(json.dumps(asdict(record), indent=1) + "\n")
    return record


# ----------------------------------------------------------------------------------------------
# The command line


def read_prompts(path: Path) -> list[str]:
    """Prompts from a file: JSON lines with a "prompt", "instruction" or "text" field, or plain text, one a line."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if path.suffix != ".jsonl":
        return lines
    fields = ("prompt", "instruction", "text")
    return [next(item[f] for f in fields if f in item) for item in map(json.loads, lines)]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m lab.medusa", description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)
    run = commands.add_parser("train", help="train Medusa heads for a model on its own greedy answers")
    run.add_argument(
        "--prompts",
        type=Path,
        default=SHIPPED_SETS["self-instruct"],
        help=".jsonl or plain text, one prompt a line (default: the shipped Self-Instruct prompts)",
    )
    run.add_argument("--source", default=SELF_INSTRUCT.name, help="where the prompts come from (recorded)")
    run.add_argument("--licence", default=SELF_INSTRUCT.licence, help="the prompts' licence (recorded)")
    run.add_argument(
        "--out",
        type=Path,
        default=cache_root() / "medusa-training",
        help="the run's folder: answers, checkpoints, heads, record (default: in the user cache)",
    )
    run.add_argument("--model", default=None, help="hub id or folder (default: the embedded SmolLM2-135M-Instruct)")
    run.add_argument("--raw", action="store_true", help="feed prompts raw, not as a chat turn")
    defaults = TrainSettings()
    for name, kind in (
        ("heads", int),
        ("steps", int),
        ("batch", int),
        ("learning_rate", float),
        ("checkpoint_every", int),
        ("seed", int),
        ("held_out", float),
        ("answer_tokens", int),
    ):
        run.add_argument(f"--{name.replace('_', '-')}", type=kind, default=getattr(defaults, name))
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    lm = load_model(args.model, device="cpu", dtype="float32")
    prompts = [encode_prompt(lm.tokenizer, text, chat=not args.raw) for text in read_prompts(args.prompts)]
    settings = TrainSettings(
        heads=args.heads,
        steps=args.steps,
        batch=args.batch,
        learning_rate=args.learning_rate,
        checkpoint_every=args.checkpoint_every,
        seed=args.seed,
        held_out=args.held_out,
        answer_tokens=args.answer_tokens,
    )
    record = train(lm, prompts, DataSource(name=args.source, licence=args.licence), settings, args.out)
    for head in record.accuracy:
        print(f"head {head.head}: top-1 {head.top1:.3f}, top-5 {head.top5:.3f} on {record.held_out_tokens} tokens")
    print(f"heads and record in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
