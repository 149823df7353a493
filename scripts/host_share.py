"""The host's share of a decoding step: the wall time of a step outside its forward pass, per method.

Usage: python scripts/host_share.py [--prompts 4] [--max-new-tokens 64] [--threads 1] [--rounds 2] [--mode fixed]
Decodes the first HumanEval prompts with plain greedy decoding, lookahead (the default W, N, G), prompt lookup and
Medusa (the shipped heads, the default tree) on the default model, and prints per method the median over all decode
steps of the wall time between two steps minus the step's forward pass (the host's share: proposing, laying out,
verifying, committing, learning, and whatever is built for the step's record), with the pass's median beside it. Each
decoding runs the path a consumer takes: the recorded steps (`decode_steps`), and where the engine has it the lean
path of timed lanes (`lean_steps`). Rounds interleave the methods, the paths alternating within a round.
`--mode fixed` runs the fixed-shape step (the one a GPU captures, here uncaptured): its host work is what a
captured GPU step does between replays (the eager step, this CPU's default, compacts a DynamicCache instead); there
the lean steps run with their working state on the device (working_state.py: the "pass" is then the whole device
step) and once more on the host, as before it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab.measure.datasets import load_prompts
from lab.train.heads import SHIPPED_HEADS, SHIPPED_LABEL
from lookahead_core import trace
from lookahead_core.costs import settled_mode
from lookahead_core.methods.medusa import load_heads, make_medusa
from lookahead_core.models import encode_prompt, load_model
from lookahead_core.records import Method, StepKind, StepMode
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime

METHODS = (Method.GREEDY, Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.MEDUSA)


def paths(runtime: Runtime) -> dict[str, object]:
    """The step generators to time: the recorded one, and the lean one where the engine has it; in a fixed-shape
    mode also the lean one with the method's working state on the host (what the device-state step replaced)."""
    found = {"recorded": trace.decode_steps}
    if hasattr(trace, "lean_steps"):
        found["lean"] = trace.lean_steps
    if runtime.mode != StepMode.EAGER and hasattr(runtime, "device_state"):
        found["lean, state on the host"] = lambda lm, ids, request, runtime: trace.lean_steps(
            lm, ids, request, replace(runtime, device_state=False)
        )
    return found


def split(steps) -> tuple[list[float], list[float]]:
    """Each decode step's host seconds (the wall between two yields less the pass) and its pass's seconds."""
    host, forward = [], []
    start = time.perf_counter()
    for step in steps:
        now = time.perf_counter()
        if step.kind == StepKind.DECODE:
            host.append(now - start - step.forward_seconds)
            forward.append(step.forward_seconds)
        start = now
    return host, forward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--mode", default=None, choices=[mode.value for mode in StepMode])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lm = load_model(device="cpu", dtype="float32")
    heads = make_medusa(load_heads(SHIPPED_HEADS, lm.model, lm.name, label=SHIPPED_LABEL))
    settled = settled_mode(lm, args.mode and StepMode(args.mode))
    runtime = Runtime.in_settled(settled, heads=heads)
    prompts = [encode_prompt(lm.tokenizer, p["prompt"], p["chat"]) for p in load_prompts("humaneval", args.prompts)]
    found = paths(runtime)
    host = {(m, p): [] for m in METHODS for p in found}
    forward = {key: [] for key in host}
    for method in METHODS:  # an untimed warm-up of each method
        request = DecodeRequest(method=method, max_new_tokens=8)
        list(trace.decode_steps(lm, prompts[0], request, runtime))
    for _ in range(args.rounds):
        for method in METHODS:
            request = DecodeRequest(method=method, max_new_tokens=args.max_new_tokens)
            for ids in prompts:
                for name, steps in found.items():
                    h, f = split(steps(lm, ids, request, runtime))
                    host[method, name] += h
                    forward[method, name] += f
    where = lm.describe()["device_name"]
    print(
        f"# {lm.name}, {where}, {args.threads} torch thread(s), the {runtime.mode} step; HumanEval's first "
        f"{args.prompts} prompts, "
        f"{args.max_new_tokens} new tokens, {args.rounds} rounds; medians over decode steps"
    )
    print("| method | path | steps | host ms/step | pass ms/step | host share |")
    print("|---|---|---|---|---|---|")
    for (method, name), values in host.items():
        h, f = statistics.median(values), statistics.median(forward[method, name])
        print(f"| {method} | {name} | {len(values)} | {1e3 * h:.2f} | {1e3 * f:.1f} | {h / (h + f):.1%} |")


if __name__ == "__main__":
    main()
