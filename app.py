"""Lookahead Lab, the teaching app: record a real lookahead run, then replay it one forward pass at a time.

The front door: it builds the page from its parts (ui/) and launches it; a Space runs this file and
imports `demo` from it. The engine (lookahead_core) records, the drawings (visuals) render, and the
lab holds the one model, checks every request and runs the model work (lab.serve.server). Run, Race and the
map are the only model work: a question measured a moment ago is answered from that measurement
(lab.serve.questions); the rest wait in one bounded line for the model, told their place (lab.serve.line), report
their progress up to ten times a second, and stop at the pass after the next report when their visitor leaves,
presses Stop or cancels.
Who may load which model is the operator's choice (docs/deploy.md); `python app.py` logs each refused
request on one line.
"""

from __future__ import annotations

try:  # ZeroGPU Spaces: `spaces` must be imported before anything touches CUDA
    import spaces
except ImportError:
    spaces = None

import logging
import os

from lab.serve.server import SERVER_NAME
from ui.page import LAUNCH_OPTIONS, build_demo

demo, PAGE = build_demo()

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    demo.launch(
        server_name=SERVER_NAME, server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")), **LAUNCH_OPTIONS
    )
