"""EAGLE training by self-distillation: the model answers prompts greedily (the same answers Medusa's heads
train on), and one small decoder layer learns to predict the model's next feature from (its feature here,
the next token) and, through the model's frozen output layer, its next greedy choice. Only the layer trains,
with EAGLE's loss: smooth L1 on the feature plus `token_weight` x cross-entropy on the model's choice, the
input features jittered by uniform noise (EAGLE's way to make a layer that will read its own predictions
tolerate their errors). The layer drafts from the `vocabulary` tokens the model chose most often on the
training text (lookahead_core.methods.eagle).

    python -m lab.eagle train [--prompts FILE --source NAME --licence LICENCE] [--out FOLDER]

The prompts and their rules are lab.train.distillation's, and the run's folder works as lab.train.medusa's: answers
kept as they are generated, a checkpoint every N steps, and the same command resumes a stopped run.
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
from lookahead_core.methods.eagle import EagleLayer, draft_head, eagle_for, save_eagle
from lookahead_core.methods.medusa import output_logits
from lookahead_core.models import LoadedModel

LAYER = "eagle.safetensors"
TOP = 5  # the accuracy covers the layer's first TOP choices


@dataclass(frozen=True, kw_only=True)
class TrainSettings:
    steps: int = 1500
    batch: int = 8  # sequences per step
    learning_rate: float = 1e-3
    token_weight: float = 0.1  # EAGLE's w_cls
    token_rows: int = 512  # positions per step whose token loss is computed (the output layer is most of the cost)
    noise: float = 0.1  # half-width of the uniform jitter on input features, relative to their RMS
    vocabulary: int = 8192  # the draft vocabulary's size (0: every token)
    checkpoint_every: int = 50
    seed: int = 0
    held_out: float = 0.1
    answer_tokens: int = 256


@dataclass(kw_only=True)
class TrainingRecord:
    """What a training run did and measured, written as JSON beside the layer."""

    model: str
    source: str
    licence: str
    prompts: int
    held_out_prompts: int
    train_tokens: int  # positions with a next feature, in the training prompts and answers
    held_out_tokens: int
    settings: TrainSettings
    loss: list[float]
    accuracy: dict  # top-1 and top-5 of the first guess from true features, on held-out text, and the share
    # of the model's choices there inside the draft vocabulary (`coverage`)
    seconds: float
    spot_check: dict | None = None  # on the first SPOT_PROMPTS held-out prompts: what a re-measurement must find


@dataclass
class Sequence:
    """One prompt + answer: its ids (L), the model's last hidden states there (L x d) and its greedy choice
    after each position (L)."""

    ids: torch.Tensor
    hidden: torch.Tensor
    choice: torch.Tensor


@torch.inference_mode()
def sequences(model, prompts: list[list[int]], answers_: list[list[int]]) -> list[Sequence]:
    """Each prompt + answer through the model once: its hidden states and greedy choices."""
    out = []
    for prompt, answer in zip(prompts, answers_, strict=True):
        ids = torch.tensor([prompt + answer], device=model.device)
        hidden = model.base_model(input_ids=ids).last_hidden_state[0]
        choice = output_logits(model, hidden).argmax(dim=-1)
        out.append(Sequence(ids[0].cpu(), hidden.float().cpu(), choice.cpu()))
    return out


def positions(data: list[Sequence]) -> int:
    return sum(len(s.ids) - 1 for s in data)


def batch_of(data: list[Sequence], chosen: list[int]):
    """Right-padded inputs for a batch: features h_t, next tokens x_{t+1}, targets h_{t+1} and the model's
    choice after t + 1, for t = 0 .. L - 2, with a (B, T) mask of real positions."""
    picked = [data[i] for i in chosen]
    width = max(len(s.ids) - 1 for s in picked)
    d = picked[0].hidden.shape[1]
    hidden, target = (torch.zeros(len(picked), width, d) for _ in range(2))
    tokens, choice, mask = (torch.zeros(len(picked), width, dtype=torch.long) for _ in range(3))
    for b, s in enumerate(picked):
        n = len(s.ids) - 1
        hidden[b, :n], target[b, :n] = s.hidden[:-1], s.hidden[1:]
        tokens[b, :n], choice[b, :n], mask[b, :n] = s.ids[1:], s.choice[1:], 1
    return hidden, tokens, target, choice, mask


def eagle_loss(layer: EagleLayer, model, batch, settings: TrainSettings, generator: torch.Generator) -> torch.Tensor:
    """Smooth L1 on the predicted features + token_weight x cross-entropy on the model's choice, the latter on
    `token_rows` real positions drawn at random."""
    hidden, tokens, target, choice, mask = batch
    scale = hidden.pow(2).mean().sqrt()
    jitter = (torch.rand(hidden.shape, generator=generator) * 2 - 1) * settings.noise * scale
    with torch.no_grad():
        embedded = model.get_input_embeddings()(tokens).float()
    predicted = layer.features(hidden + jitter, embedded, mask=mask)
    real = mask.bool()
    regression = functional.smooth_l1_loss(predicted[real], target[real])
    rows = torch.nonzero(real)
    rows = rows[torch.randperm(len(rows), generator=generator)[: settings.token_rows]]
    logits = output_logits(model, predicted[rows[:, 0], rows[:, 1]])
    return regression + settings.token_weight * functional.cross_entropy(logits, choice[rows[:, 0], rows[:, 1]])


def draft_vocabulary(data: list[Sequence], size: int) -> torch.Tensor | None:
    """The `size` tokens the model chose most often in `data` (only tokens it chose), most frequent first (the
    lower id first among equals); None for `size` 0 (every token)."""
    if size == 0:
        return None
    counts = torch.bincount(torch.cat([s.choice for s in data]))
    return counts.argsort(descending=True, stable=True)[: min(size, int((counts > 0).sum()))]


@torch.inference_mode()
def first_guess_accuracy(layer: EagleLayer, model, data: list[Sequence]) -> dict:
    """How often the layer's first guess, read from true features and drawn from its draft vocabulary, was the
    model's own greedy choice: top-1 and top-5 over every position of `data`, and the share of those choices
    inside the vocabulary (no guess can be right outside it)."""
    head = draft_head(model, layer.vocabulary)
    hits, count, inside = torch.zeros(TOP), 0, 0
    for s in data:
        embedded = model.get_input_embeddings()(s.ids[1:][None]).float()
        predicted = layer.features(s.hidden[:-1][None], embedded)[0]
        top = head.scores(model, predicted).topk(TOP, dim=-1).indices
        top = top if head.vocabulary is None else head.vocabulary[top]
        hits += (top == s.choice[1:, None]).float().cumsum(dim=1).sum(dim=0)
        count += len(s.ids) - 1
        inside += len(s.ids) - 1 if head.vocabulary is None else int(torch.isin(s.choice[1:], head.vocabulary).sum())
    rates = (hits / max(count, 1)).tolist()
    return {"top1": rates[0], "top5": rates[-1], "positions": count, "coverage": inside / max(count, 1)}


def spot_check(lm: LoadedModel, layer: EagleLayer, prompts: list[list[int]], tokens: int) -> dict:
    """The layer's first-guess accuracy (first_guess_accuracy) on the model's answers to `prompts`, answered here in
    one batch: what a re-measurement on the same prompts must find again."""
    answered = sequences(lm.model, prompts, greedy_answers(lm, prompts, tokens))
    return {"prompts": len(prompts), **first_guess_accuracy(layer, lm.model, answered)}


def train_layer(
    layer: EagleLayer, model, data: list[Sequence], settings: TrainSettings, folder: Path, clock: RunClock
) -> list[float]:
    """AdamW (beta2 0.95, EAGLE's) on the layer alone, random batches of sequences from a seeded generator,
    gradients clipped at 1, checkpointed and resumed (lab.train.training). The loss curve."""
    model.requires_grad_(False)

    def batch_loss(generator: torch.Generator) -> torch.Tensor:
        chosen = torch.randint(len(data), (settings.batch,), generator=generator).tolist()
        return eagle_loss(layer, model, batch_of(data, chosen), settings, generator)

    optimizer = torch.optim.AdamW(layer.parameters(), lr=settings.learning_rate, betas=(0.9, 0.95))
    loop = TrainingLoop(steps=settings.steps, checkpoint_every=settings.checkpoint_every, seed=settings.seed, clip=1.0)
    return loop.run(layer, optimizer, batch_loss, folder, clock, "eagle layer")


def train(
    lm: LoadedModel, prompts: list[list[int]], source: DataSource, settings: TrainSettings, folder: Path
) -> TrainingRecord:
    """Train an EAGLE layer for `lm` on its greedy answers to `prompts`; write the layer (with its measured
    accuracy) and the training record into `folder`."""
    clock, split = distilled(lm, prompts, settings, folder)
    kept = split.kept
    training = sequences(lm.model, *split.training)
    held_out = sequences(lm.model, *split.held_out) if kept else training
    layer = eagle_for(lm.model, lm.name).float()
    losses = train_layer(layer, lm.model, training, settings, folder, clock)
    layer.vocabulary = draft_vocabulary(training, settings.vocabulary)
    layer.accuracy = first_guess_accuracy(layer, lm.model, held_out)
    save_eagle(layer, folder / LAYER)
    spot = split.held_out[0][:SPOT_PROMPTS]
    record = TrainingRecord(
        **run_facts(lm, source, split, settings, losses, clock),
        train_tokens=positions(training),
        held_out_tokens=positions(held_out) if kept else 0,
        accuracy=layer.accuracy,
        spot_check=spot_check(lm, layer, spot, settings.answer_tokens) if kept else None,
    )
    write_record(folder, record, clock)
    return record


def main(argv: list[str] | None = None) -> int:
    args = train_command(
        "python -m lab.eagle", __doc__.split("\n\n")[0], "an EAGLE draft layer", "eagle-training", TrainSettings
    ).parse_args(argv)
    lm, prompts, source, settings = command_inputs(args, TrainSettings)
    record = train(lm, prompts, source, settings, args.out)
    top1, top5, count = (record.accuracy[k] for k in ("top1", "top5", "positions"))
    print(f"first guess: top-1 {top1:.3f}, top-5 {top5:.3f} on {count} held-out positions")
    print(f"layer and record in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
