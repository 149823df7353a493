"""Record the example runs the app opens with: one method + greedy run per preset, from the real model.

Usage: python -m lab.examples [--only spelling python ...] [--device cpu]
Reads assets/presets.json (prompt, chat flag, method (default lookahead), W, N, G, lookup_tokens or
draft_tokens, max new tokens, sampling if any) and writes each run to the
preset's `example` file under assets/ (gzipped JSON, a few tens of KB). Float32 on the CPU by
default, so the example's output equals plain greedy decoding token for token; a short warm-up run
comes first and is thrown away.
"""

from __future__ import annotations

import argparse
import time

from lookahead_core.config import LookaheadConfig, LookupConfig
from lookahead_core.draft import DEFAULT_DRAFT, make_draft
from lookahead_core.models import encode_prompt, load_model
from lookahead_core.records import Method
from lookahead_core.request import DecodeRequest
from lookahead_core.sampling import GREEDY, SamplingConfig
from lookahead_core.trace import record_run
from visuals.library import example_path, load_presets, save_run


def warm_up(lm, item: dict) -> None:
    """One short run, thrown away, so one-off start-up costs do not land in the first example's seconds."""
    config = LookaheadConfig(window=item["window"], ngram=item["ngram"], guesses=item["guesses"])
    prompt_ids = encode_prompt(lm.tokenizer, item["prompt"], item["chat"])
    record_run(lm, prompt_ids, DecodeRequest(lookahead=config, max_new_tokens=16), prompt_text=item["prompt"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="ID", help="record only these preset ids")
    parser.add_argument("--device", default="cpu", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args()
    presets = load_presets()
    unknown = set(args.only or []) - {p["id"] for p in presets}
    if unknown:
        parser.error(f"unknown preset ids: {', '.join(sorted(unknown))}")
    lm = load_model(device=args.device, dtype="float32")
    warm_up(lm, presets[0])
    for item in presets:
        if args.only and item["id"] not in args.only:
            continue
        config = LookaheadConfig(window=item["window"], ngram=item["ngram"], guesses=item["guesses"])
        prompt_ids = encode_prompt(lm.tokenizer, item["prompt"], item["chat"])
        started = time.perf_counter()
        sampling = SamplingConfig(**item["sampling"]) if "sampling" in item else GREEDY
        method = Method(item.get("method", Method.LOOKAHEAD))
        lookup = LookupConfig(tokens=item.get("lookup_tokens", LookupConfig.tokens))
        draft = make_draft(lm, DEFAULT_DRAFT, item["draft_tokens"]) if method == Method.SPECULATIVE else None
        request = DecodeRequest(
            method=method, lookahead=config, lookup=lookup, sampling=sampling, max_new_tokens=item["max_new_tokens"]
        )
        run = record_run(lm, prompt_ids, request, prompt_text=item["prompt"], draft=draft)
        path = example_path(item)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_run(run, path)
        ours, theirs = run.trace.summary, run.greedy.summary
        print(
            f"{item['id']}: {ours.tokens} tokens, {ours.steps} {method.value} steps "
            f"({ours.tokens_per_step:.2f} tokens/step) vs {theirs.steps} greedy; "
            f"{ours.seconds:.1f} s vs {theirs.seconds:.1f} s; recorded in "
            f"{time.perf_counter() - started:.1f} s -> {path.relative_to(path.parents[2])} "
            f"({path.stat().st_size // 1024} KB)",
            flush=True,
        )


if __name__ == "__main__":
    main()
