"""A fresh virtual environment from requirements.txt alone, as a Space builds it, runs the app.

No Makefile: only torch's line is replaced (by the Makefile's LOCAL_TORCH), since the Space's torch
is a multi-GB CUDA build and these machines have the CPU build of the local version on disk. Slow
(minutes of pip), and run in CI all the same: it is what proves requirements.txt is complete.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPLAY = (
    "import app; from visuals import library, replay; run = library.example_run(library.load_presets()[0]['id']); "
    "last = replay.last_step(run); assert 'Step' in replay.panels(run, last)['caption']; print('replayed', last)"
)


def local_torch() -> str:
    return re.search(r"^LOCAL_TORCH := (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)


@pytest.mark.slow
def test_requirements_txt_alone_installs_an_app_that_replays_a_preset(tmp_path):
    requirements = (ROOT / "requirements.txt").read_text().splitlines()
    local = [local_torch() if line.startswith("torch==") else line for line in requirements]
    (tmp_path / "requirements.txt").write_text("\n".join(local) + "\n")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    started = time.perf_counter()
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r", str(tmp_path / "requirements.txt")]
    subprocess.run(pip, check=True, timeout=1500)
    installed = time.perf_counter() - started
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", REPLAY], cwd=tmp_path, env=env, check=True, capture_output=True, text=True
    )
    assert "replayed" in done.stdout
    print(f"\nrequirements.txt alone (torch -> {local_torch()}): installed in {installed:.0f} s, app replayed a preset")
