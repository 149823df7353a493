"""What a pass of a few rows costs on this machine, and what the engine's products change (products.py).

Usage: python scripts/row_cost.py [--sizes 1 2 3 4 5 8 16 32 64] [--context 256] [--repeats 7] [--json OUT]

nn.Linear computes x @ W.T. For one row a BLAS runs that as a matrix-vector product; for a few rows
it may run it row by row, where the same product taken as W @ x.T is a small matrix-matrix product
that streams each weight once on every core. This prints, as Markdown:
1. every linear layer of the model's body, applied to random rows with cold weights, both ways;
2. one engine pass (lookahead_core.forward.forward_tree) of each size after a `context`-token prefix,
   with nn.Linear's product throughout and as the engine takes it, interleaved round by round.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lookahead_core import products  # noqa: E402
from lookahead_core.attention import attention_plan  # noqa: E402
from lookahead_core.forward import forward_tree, keep_rows, prefill  # noqa: E402
from lookahead_core.layout import chain_layout  # noqa: E402
from lookahead_core.models import device_name, load_model  # noqa: E402

KERNELS = {"nn.Linear (x @ W.T)": 0, "the engine's (W @ x.T)": products.FEW_ROWS}  # the widest pass taken as W @ x.T


def products_table(model, sizes: list[int], repeats: int) -> list[dict]:
    """Every linear layer of the body once per row count, both ways, weights cold (each used once a sweep)."""
    weights = [m.weight for m in model.base_model.modules() if type(m) is nn.Linear]
    rows = []
    for size in sizes:
        inputs = {w.shape[1]: torch.randn(size, w.shape[1]) for w in weights}
        ways = {"x @ W.T": lambda w, x: x @ w.T, "W @ x.T": lambda w, x: w @ x.T}
        row = {"rows": size}
        for name, way in ways.items():
            times = []
            for _ in range(repeats + 1):
                start = time.perf_counter()
                for w in weights:
                    way(w, inputs[w.shape[1]])
                times.append(time.perf_counter() - start)
            row[name] = statistics.median(times[1:]) * 1e3
        rows.append(row)
    return rows


def passes_table(lm, sizes: list[int], context: int, repeats: int) -> list[dict]:
    """One forward_tree pass of each size with each kernel, interleaved: every kernel and size once a round."""
    generator = torch.Generator().manual_seed(0)
    prefix = torch.randint(0, lm.model.config.vocab_size, (context,), generator=generator).tolist()
    cache, _ = prefill(lm.model, prefix)
    plan = attention_plan(lm.model.config)
    seconds = {(kernel, size): [] for kernel in KERNELS for size in sizes}
    for attempt in range(repeats + 1):
        for kernel, widest in KERNELS.items():
            products.FEW_ROWS = widest
            for size in sizes:
                took = forward_tree(lm.model, cache, prefix[:size], chain_layout(size), plan).seconds
                keep_rows(cache, context, [])
                if attempt:
                    seconds[kernel, size].append(took)
    products.FEW_ROWS = KERNELS["the engine's (W @ x.T)"]
    return [{"rows": size} | {k: statistics.median(seconds[k, size]) * 1e3 for k in KERNELS} for size in sizes]


def markdown(rows: list[dict]) -> str:
    names = [k for k in rows[0] if k != "rows"]
    lines = ["| rows | " + " | ".join(f"{n}, ms" for n in names) + " |", "|---" * (len(names) + 1) + "|"]
    lines += [f"| {r['rows']} | " + " | ".join(f"{r[n]:.1f}" for n in names) + " |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 3, 4, 5, 8, 16, 32, 64])
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write both tables here")
    args = parser.parse_args()
    lm = load_model(device="cpu", dtype="float32")
    print(f"{lm.name}, {device_name(lm.device)}, float32, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}")
    with torch.inference_mode():
        products = products_table(lm.model, args.sizes, args.repeats)
    print("\nEvery linear layer of the body, once (weights cold):\n" + markdown(products))
    passes = passes_table(lm, args.sizes, args.context, args.repeats)
    print(f"\nOne engine pass after {args.context} cached tokens (median of {args.repeats}, interleaved):")
    print(markdown(passes))
    if args.json:
        args.json.write_text(json.dumps({"products": products, "passes": passes}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
