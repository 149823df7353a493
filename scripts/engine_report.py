"""Tokens per step and exact matches against HF greedy `generate`, per prompt set and setting.

Usage: python scripts/engine_report.py [--limit 10] [--max-new-tokens 128] [--settings 15,5,15 7,5,7 4,4,4]
                                       [--device auto|cpu|cuda] [--dtype float32|bfloat16|float16]
Prints one table row per (set, W, N, G); every figure is measured in this run, on this machine.
On a GPU this is the one-call exactness check: float32 with TF32 off must give exact = all; in
bfloat16 or float16, `exact` is the match rate against greedy `generate` in the same dtype.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab.measure.datasets import load_prompts
from lookahead_core.config import LookaheadConfig
from lookahead_core.models import encode_prompt, load_model
from lookahead_core.request import DecodeRequest
from lookahead_core.trace import decode_steps, machine_facts, summarize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--settings", nargs="+", default=["15,5,15", "7,5,7", "4,4,4"], help="W,N,G triples")
    parser.add_argument("--sets", nargs="+", default=["humaneval", "mtbench"])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    args = parser.parse_args()
    # Exactness is promised in true float32: TF32 matmuls would round like half precision.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    lm = load_model(device=args.device, dtype=args.dtype)
    facts = machine_facts(lm)
    print(
        f"# {facts.model} on {facts.device_name}, {facts.dtype}, torch {facts.torch}, "
        f"transformers {facts.transformers}; {args.limit} prompts per set, {args.max_new_tokens} new tokens"
    )
    print("| set | W | N | G | tokens/step | exact | lookahead s | greedy generate s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.sets:
        prompts = load_prompts(name, args.limit)
        encoded = [encode_prompt(lm.tokenizer, p["prompt"], p["chat"]) for p in prompts]
        references, generate_seconds = [], 0.0
        for ids in encoded:
            start = time.perf_counter()
            output = lm.model.generate(
                torch.tensor([ids], device=lm.device), do_sample=False, max_new_tokens=args.max_new_tokens
            )
            generate_seconds += time.perf_counter() - start
            references.append(output[0, len(ids) :].tolist())
        for triple in args.settings:
            w, n, g = map(int, triple.split(","))
            config = LookaheadConfig(window=w, ngram=n, guesses=g)
            tokens = steps = exact = 0
            seconds = 0.0
            for ids, reference in zip(encoded, references, strict=True):
                request = DecodeRequest(lookahead=config, max_new_tokens=args.max_new_tokens)
                summary = summarize(list(decode_steps(lm, ids, request)))
                tokens += summary.tokens
                steps += summary.steps
                seconds += summary.seconds
                exact += summary.new_token_ids == reference
            row = [name, w, n, g, f"{tokens / steps:.2f}", f"{exact}/{len(encoded)}", f"{seconds:.1f}"]
            print("| " + " | ".join(map(str, row)) + f" | {generate_seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
