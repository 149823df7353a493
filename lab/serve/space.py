"""Running on a Hugging Face ZeroGPU Space: when that is the case, and how long a GPU slot to ask for.

ZeroGPU attaches a GPU only inside functions decorated with `spaces.GPU`, for the duration they
declare; a shorter declaration gets queue priority, and each visitor has a small daily quota.
So a request declares what its own size needs: a fixed start plus a per-token allowance for
each decoding run it makes. Outside a ZeroGPU Space (no `spaces` package, or its `Config` says
no ZeroGPU), nothing here changes anything.
"""

from __future__ import annotations

import math

from lookahead_core.records import StepMode

MAX_NEW_TOKENS = 128  # per request on ZeroGPU: a Run or race then fits well inside a visitor's quota
SLOT_START = 10.0  # seconds: attaching the GPU, moving the weights in, the first kernels
# H100, float32, SmolLM2-135M: about 0.03 s per forward pass (docs/bench); ZeroGPU's half card and
# the host overhead of a Python loop are allowed for with a margin of more than two.
SECONDS_PER_TOKEN = 0.08
COSTS_SECONDS = 15.0  # the race's first auto choice measures the step-cost curve (cached afterwards)
LONGEST_SLOT = 60


def on_zero_gpu(spaces) -> bool:
    """Whether this process runs on ZeroGPU hardware: the `spaces` package is there and says so."""
    return spaces is not None and bool(spaces.config.Config.zero_gpu)


def step_mode(zero_gpu: bool) -> StepMode | None:
    """The step mode the server's work asks for (lab.serve.holding.Held.mode; None: the device's default,
    fixed.default_mode): on ZeroGPU the eager step. The GPU is lent per call and its weights placed anew each time,
    and a CUDA graph replays the addresses it recorded; until a Space has measured that a capture is safe across
    calls, none is made there."""
    return StepMode.EAGER if zero_gpu else None


def slot_seconds(max_new_tokens: int, runs: int, measures_costs: bool = False) -> int:
    """The GPU slot a request asks for: the start, `runs` decodings of `max_new_tokens`, the cost curve."""
    seconds = SLOT_START + SECONDS_PER_TOKEN * max(int(max_new_tokens), 1) * runs
    seconds += COSTS_SECONDS if measures_costs else 0.0
    return min(math.ceil(seconds), LONGEST_SLOT)
