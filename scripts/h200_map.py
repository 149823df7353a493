"""The tune map's GPU side until a GPU is lent: the CPU map's cells priced off the H200's recorded step cost.

Usage: python scripts/h200_map.py CPU_REPORT.json OUT.json
Reads a tune report measured on the CPU and writes the same cells priced off one NVIDIA H200's step cost as
../shared/GPU.md recorded it on 2026-11-26 (SmolLM2-135M-Instruct, float32, torch 2.11+cu130, transformers
5.23): the engine's greedy step took 17.9 ms, and a step cost the same from 1 to 256 tokens fed within 1.15x.
Tokens per step and rows fed are the CPU sweep's (greedy float32 output is the same on both machines, so the
methods commit the same tokens); nothing in it was measured on the GPU, and the report says so (`source`).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.measure.tune import repriced  # noqa: E402
from lookahead_core.costs import StepCosts  # noqa: E402
from lookahead_core.records.tune import read_tune_report  # noqa: E402

GREEDY_STEP = 0.0179  # seconds: the engine's greedy step on the H200, float32 (GPU.md's table, HumanEval)
WIDE = 1.15  # a 256-token step in 1-token steps (GPU.md: "the same from 1 to 256 tokens fed (1.15x)")
SOURCE = (
    "priced off the NVIDIA H200 figures recorded in ../shared/GPU.md on 2026-11-26 (the engine's greedy step "
    "17.9 ms; a 256-token step 1.15x a 1-token step; SmolLM2-135M-Instruct, float32, torch 2.11+cu130, "
    "transformers 5.23), with the tokens per step and rows fed of the CPU sweep: predicted, not measured on a GPU"
)


def h200_costs(model: str) -> StepCosts:
    return StepCosts(
        sizes=[1, 256],
        seconds=[GREEDY_STEP, GREEDY_STEP * WIDE],
        context=256,
        hardware="NVIDIA H200 (recorded figures)",
        model=model,
        dtype="float32",
        measured_at="2026-11-26",
    )


def main(source: str, out: str) -> None:
    cpu = read_tune_report(Path(source).read_text())
    machine = dataclasses.replace(
        cpu.machine,
        device="cuda",
        device_name="NVIDIA H200 (recorded figures)",
        torch="2.11+cu130",
        transformers="5.23",
        python="not recorded",
        platform="not recorded",
    )
    gpu = repriced(cpu, h200_costs(cpu.machine.model), GREEDY_STEP, machine, SOURCE)
    Path(out).write_text(gpu.to_json())


if __name__ == "__main__":
    main(*sys.argv[1:3])
