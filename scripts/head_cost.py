"""What the output layer costs in a wide step: one forward pass split into the model's body and its head.

Usage: python scripts/head_cost.py [--model gemma-3-270m] [--sizes 1 16 64] [--context 256] [--repeats 5]

For each number of rows fed after a `context`-token prefix, the median seconds of the body
(base model) and of the head (weight @ hidden, as the engine computes it) are printed as a
Markdown table. A 262k-row vocabulary (Gemma 3) makes the head grow with every row a wide
lookahead step feeds; a 49k one (SmolLM2) much less.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lookahead_core.device.forward import keep_rows, new_cache, plain_head
from lookahead_core.models import device_name, load_model


def split_pass(model, head, cache, context: int, size: int) -> tuple[float, float]:
    """Seconds of the body and of the head for `size` rows after the cached `context` tokens."""
    ids = torch.randint(0, head.weight.shape[0], (1, size))
    with torch.inference_mode():
        start = time.perf_counter()
        hidden = model.base_model(input_ids=ids, past_key_values=cache, use_cache=True).last_hidden_state[0]
        middle = time.perf_counter()
        (head.weight @ hidden.T).argmax(dim=0).tolist()
        end = time.perf_counter()
    keep_rows(cache, context, [])
    return middle - start, end - middle


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="default: the embedded SmolLM2")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    lm = load_model(args.model, device="cpu", dtype="float32")
    head = plain_head(lm.model)
    torch.manual_seed(0)
    cache = new_cache()
    with torch.inference_mode():
        lm.model.base_model(input_ids=torch.randint(0, 1000, (1, args.context)), past_key_values=cache, use_cache=True)
    print(f"{lm.name}, vocabulary {head.weight.shape[0]:,}, {device_name(lm.device)}, float32, {args.context} cached")
    print("| rows fed | body ms | head ms | head share |\n|---|---|---|---|")
    for size in args.sizes:
        split_pass(lm.model, head, cache, args.context, size)  # warm-up
        runs = [split_pass(lm.model, head, cache, args.context, size) for _ in range(args.repeats)]
        body, top = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        print(f"| {size} | {body * 1e3:.0f} | {top * 1e3:.0f} | {top / (body + top):.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
