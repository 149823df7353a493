"""Self-distillation's data and command, shared by the lab's trained parts (Medusa's heads, the EAGLE layer):
the prompts and where they come from, the model's own greedy answers (kept as they are generated, so a
stopped run generates only the rest), the held-out split, the training record written beside what was
trained, and the `train` command line both modules offer.

By default the prompts are the shipped Self-Instruct set (assets/prompts/, Apache-2.0). Other prompts must
not overlap the prompt sets the lab measures on (HumanEval, MT-Bench, GSM8K): name where they come from and
under which licence; both go into the training record.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from tqdm import tqdm

from lab.measure.datasets import SHIPPED_SETS
from lab.train.training import RunClock
from lookahead_core.cache import cache_root
from lookahead_core.models import LoadedModel, encode_prompt, load_model

ANSWERS, RECORD = "answers.jsonl", "training.json"
ANSWER_BATCH = 16  # prompts answered in one batched generate
# held-out prompts a later re-measurement of a trained draft answers again (tests/test_*_shipped.py)
SPOT_PROMPTS = 3


@dataclass(frozen=True, kw_only=True)
class DataSource:
    """Where the training prompts come from and under which licence (both recorded)."""

    name: str
    licence: str


SELF_INSTRUCT = DataSource(
    name="Self-Instruct (yizhongw/self-instruct at 0b26cca): its 175 seed tasks and 252 user-oriented instructions",
    licence="Apache-2.0",
)


def read_prompts(path: Path) -> list[str]:
    """Prompts from a file: JSON lines with a "prompt", "instruction" or "text" field, or plain text, one a line."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if path.suffix != ".jsonl":
        return lines
    names = ("prompt", "instruction", "text")
    return [next(item[f] for f in names if f in item) for item in map(json.loads, lines)]


# ----------------------------------------------------------------------------------------------
# The model's own greedy answers


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


@dataclass(frozen=True)
class Split:
    """The prompts (token ids) and the model's answers to them: those to train on, and those held out to
    measure on (none when there was one prompt)."""

    training: tuple[list[list[int]], list[list[int]]]
    held_out: tuple[list[list[int]], list[list[int]]]

    @property
    def kept(self) -> int:
        return len(self.held_out[0])


def distilled(lm: LoadedModel, prompts: list[list[int]], settings, folder: Path) -> tuple[RunClock, Split]:
    """A run's start in `folder`: its clock, the seed set, the model's greedy answers to `prompts`
    (settings.answer_tokens each, generated once) split by settings.held_out."""
    folder.mkdir(parents=True, exist_ok=True)
    clock = RunClock(folder)
    torch.manual_seed(settings.seed)
    replies = answers(lm, prompts, settings.answer_tokens, folder, clock)
    cut = held_out_cut(len(prompts), settings.held_out)
    return clock, Split((prompts[:cut], replies[:cut]), (prompts[cut:], replies[cut:]))


def held_out_cut(prompts: int, share: float) -> int:
    """How many of `prompts` (the first ones) train: the last `share` of them, at least one, is held out to
    measure on; a single prompt is not split (it trains, and is measured on)."""
    return prompts - max(1, math.ceil(share * prompts)) if prompts > 1 else prompts


def run_facts(
    lm: LoadedModel, source: DataSource, split: Split, settings, losses: list[float], clock: RunClock
) -> dict:
    """What every training record says of its run: the model, the prompts' source and licence, how many
    prompts trained and were held out, the settings, the loss curve and the run's seconds so far."""
    return {
        "model": lm.name,
        "source": source.name,
        "licence": source.licence,
        "prompts": len(split.training[0]),
        "held_out_prompts": split.kept,
        "settings": settings,
        "loss": losses,
        "seconds": clock.seconds(),
    }


def write_record(folder: Path, record, clock: RunClock) -> None:
    """The run's record (a dataclass) as JSON beside what it trained, with the run's clock saved."""
    clock.save()
    (folder / RECORD).write_text(json.dumps(asdict(record), indent=1) + "\n")


# ----------------------------------------------------------------------------------------------
# The `train` command


def train_command(prog: str, description: str, what: str, folder: str, settings: type) -> argparse.ArgumentParser:
    """`prog train`, which trains `what` in the run folder `folder` (in the user cache by default): the prompts'
    file, source and licence, the model, and a flag for every field of the `settings` dataclass."""
    top = argparse.ArgumentParser(prog=prog, description=description)
    commands = top.add_subparsers(dest="command", required=True)
    run = commands.add_parser("train", help=f"train {what} for a model on its own greedy answers")
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
        default=cache_root() / folder,
        help=f"the run's folder: answers, checkpoints, {what}, record (default: in the user cache)",
    )
    run.add_argument("--model", default=None, help="hub id or folder (default: the embedded SmolLM2-135M-Instruct)")
    run.add_argument("--raw", action="store_true", help="feed prompts raw, not as a chat turn")
    for field in fields(settings):
        flag = f"--{field.name.replace('_', '-')}"
        run.add_argument(flag, type=type(field.default), default=field.default, help=f"(default: {field.default})")
    return top


def command_inputs(args: argparse.Namespace, settings: type) -> tuple[LoadedModel, list[list[int]], DataSource, object]:
    """What a parsed `train` command names: the model (float32, on the CPU), its prompts as token ids, their
    source and the `settings` dataclass filled from the flags."""
    lm = load_model(args.model, device="cpu", dtype="float32")
    prompts = [encode_prompt(lm.tokenizer, text, chat=not args.raw) for text in read_prompts(args.prompts)]
    chosen = settings(**{field.name: getattr(args, field.name) for field in fields(settings)})
    return lm, prompts, DataSource(name=args.source, licence=args.licence), chosen
