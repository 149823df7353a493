"""`python scripts/gpu_check.py --device cpu`: the GPU check's smoke test on this CPU, so the one command a lent GPU
runs cannot break unseen. One prompt, a few tokens, one round, every entrant of the bench (hf-static included);
float32, so every output must equal greedy `generate`'s. It runs in `make test` (CI). It once ran past 15 minutes
there: torch's two threads spun beside the suite's other worker. With one (OMP_NUM_THREADS, tests/conftest.py) it
took 60 s at a load of 7 on the 2-core CPU (2026-11-26); with two, about 8 minutes at a load of 8."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_gpu_check_runs_on_the_cpu_and_every_method_is_exact(default_model, tmp_path):
    command = [sys.executable, "scripts/gpu_check.py", "--device", "cpu", "--dtypes", "float32", "--sets", "humaneval"]
    command += ["--limit", "1", "--max-new-tokens", "8", "--repeats", "1", "--out", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "humaneval-float32.json").read_text())
    assert "hf-static" in report["summary"] and report["settings"]["static_compiled"] is False
    assert all(row["exact"] == 1 for row in report["summary"].values()), done.stdout
    assert "| over hf-greedy | over hf-static |" in done.stdout
