"""Record the example runs the app opens with: one method + greedy Run per preset, from the real model.

Usage: python -m lab.examples [--only spelling python ...] [--device cpu] [--threads 1]
Reads assets/presets.json (prompt, chat flag, method (default lookahead), W, N, G or `"auto": true`
for this hardware's auto settings and cost-aware plan, lookup_tokens or draft_tokens, max new tokens,
sampling if any; suffix decoding matches the other examples' outputs, as a new visitor's store does) and writes
each Run, timed in interleaved rounds (lab.measure.timed_run) with what else used
the CPU meanwhile, to the preset's `example` file under assets/ (gzipped JSON, a few tens of KB).
Float32 on the CPU by default, so the example's output equals plain greedy decoding token for token.
A Run measured while other programs kept the CPU busy is recorded again after a pause, a few times.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch

from lab.measure.timed_run import timed_run
from lab.serve.budget import Deadline
from lab.serve.stores import example_name, examples_store
from lab.train.heads import runtime_for
from lookahead_core.config import DEFAULT_DRAFT_TOKENS, LookaheadConfig, LookupConfig
from lookahead_core.costs import settled_mode
from lookahead_core.models import LoadedModel, encode_prompt, load_model
from lookahead_core.records import METHODS, Method, Run
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.sampling import GREEDY, SamplingConfig
from lookahead_core.trace import finished
from lookahead_core.tuning import auto_settings
from visuals.library import example_path, load_presets, save_run
from visuals.summary import measured_speedup
from visuals.timing import busy_words

EXAMPLE_SECONDS = 300.0  # generous: an example is recorded once, so every round of it may fit on a shared CPU
ATTEMPTS = 5  # recordings of one preset at most, while other programs keep the CPU busy
PAUSE_SECONDS = 60.0  # the wait before recording a busy measurement again


def preset_runtime(lm: LoadedModel, item: dict, request: DecodeRequest) -> Runtime:
    """What the preset's method runs with (auto: lookahead at this hardware's auto settings); suffix decoding
    matches what a new visitor's store holds, the other examples' outputs on this model (lab.serve.stores)."""
    settled = settled_mode(lm)  # the device's default step
    auto = auto_settings(lm, settled) if request.auto and METHODS[request.method].window else None
    tokens = item.get("draft_tokens", DEFAULT_DRAFT_TOKENS)
    deadline = Deadline(EXAMPLE_SECONDS)
    runtime = runtime_for(lm, [request.method], tokens=tokens, auto=auto, deadline=deadline, settled=settled)
    if request.method != Method.SUFFIX:
        return runtime
    return replace(runtime, store=examples_store(lm.name, leaving_out=example_name(item)))


def preset_request(item: dict) -> DecodeRequest:
    """The DecodeRequest a preset describes."""
    return DecodeRequest(
        method=Method(item.get("method", Method.LOOKAHEAD)),
        lookahead=LookaheadConfig(window=item["window"], ngram=item["ngram"], guesses=item["guesses"]),
        lookup=LookupConfig(tokens=item.get("lookup_tokens", LookupConfig.tokens)),
        sampling=SamplingConfig(**item["sampling"]) if "sampling" in item else GREEDY,
        max_new_tokens=item["max_new_tokens"],
        auto=item.get("auto", False),
    )


def record_example(lm: LoadedModel, item: dict) -> Run:
    """The preset's Run with its Timing (auto: lookahead at this hardware's auto settings)."""
    request = preset_request(item)
    prompt_ids = encode_prompt(lm.tokenizer, item["prompt"], item["chat"])
    return finished(timed_run(lm, prompt_ids, request, preset_runtime(lm, item, request), item["prompt"]))


def quiet_example(lm: LoadedModel, item: dict) -> Run:
    """The preset's Run, recorded again after a pause while the CPU was busy (the last one kept regardless)."""
    run = record_example(lm, item)
    for _ in range(ATTEMPTS - 1):
        if not run.timing.busy.heavy:
            break
        print(f"{item['id']}: {busy_words(run.timing.busy, 'the Run')} Again in {PAUSE_SECONDS:.0f} s.", flush=True)
        time.sleep(PAUSE_SECONDS)
        run = record_example(lm, item)
    return run


def report(item: dict, run: Run, seconds: float) -> str:
    """One line about a recorded example: steps, speedup with its interval, rounds and the CPU's load."""
    ours, theirs, timing = run.trace.summary, run.greedy.summary, run.timing
    path = example_path(item)
    return (
        f"{item['id']}: {ours.tokens} tokens, {ours.steps} {run.trace.meta.method.value} steps "
        f"({ours.tokens_per_step:.2f} tokens/step) vs {theirs.steps} greedy; {measured_speedup(run)} as fast "
        f"over {timing.rounds} rounds, leaders {', '.join(m.value for m in timing.leaders)}; "
        f"{busy_words(timing.busy, 'the Run')} Recorded in {seconds:.1f} s -> "
        f"{path.relative_to(path.parents[2])} ({path.stat().st_size // 1024} KB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="ID", help="record only these preset ids")
    parser.add_argument("--device", default="cpu", choices=["auto", "cpu", "cuda"])
    parser.add_argument(
        "--threads", type=int, help="torch threads (default: torch's own); 1 beside other busy programs on few cores"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    presets = load_presets()
    unknown = set(args.only or []) - {p["id"] for p in presets}
    if unknown:
        parser.error(f"unknown preset ids: {', '.join(sorted(unknown))}")
    lm = load_model(device=args.device, dtype="float32")
    for item in presets:
        if args.only and item["id"] not in args.only:
            continue
        started = time.perf_counter()
        run = quiet_example(lm, item)
        path = example_path(item)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_run(run, path)
        print(report(item, run, time.perf_counter() - started), flush=True)


if __name__ == "__main__":
    main()
