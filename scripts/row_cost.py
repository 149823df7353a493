"""What a pass of a few rows costs on this machine, and what the engine's products change (product_ways.py).

Usage: python scripts/row_cost.py [--sizes 1 2 4 8 16 32 64] [--context 256] [--repeats 7] [--json OUT]

A linear layer's product can be taken several ways (nn.Linear's x @ W.T, W @ x.T, oneDNN's prepacked weights);
which is fastest for a few rows depends on the CPU, so the engine times them on the machine it runs on and keeps
the fastest per group of layers and row count. This prints, as Markdown:
1. every way's seconds for one product of every linear layer of the model (the head among them), by row count,
   as the engine's choice timed them (product_ways.time_ways), and the ways it kept for most of the weights;
2. one engine pass (lookahead_core.device.forward.forward_tree) of each size after a `context`-token prefix, with
   nn.Linear's product throughout and with the engine's choice, interleaved round by round.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lookahead_core.device import products  # noqa: E402
from lookahead_core.device.forward import forward_tree, keep_rows, prefill  # noqa: E402
from lookahead_core.device.product_ways import (  # noqa: E402
    ProductTable,
    layer_groups,
    one_way_choice,
    product_choice,
    time_ways,
    ways_for,
)
from lookahead_core.models import device_name, load_model  # noqa: E402
from lookahead_core.tree.attention import attention_plan  # noqa: E402
from lookahead_core.tree.layout import chain_layout  # noqa: E402
from visuals.timing import products_words  # noqa: E402


def ways_table(model, sizes: list[int]) -> list[dict]:
    """Every way's seconds (ms) for one product of every linear layer at each row count, summed over the groups."""
    totals: dict[str, list[float]] = {}
    for layers in layer_groups(model).values():
        for way, seconds in time_ways(layers, ways_for(layers), tuple(sizes)).items():
            totals[way] = [a + b for a, b in zip(totals.get(way, [0.0] * len(sizes)), seconds, strict=True)]
    return [{"rows": size} | {way: totals[way][i] * 1e3 for way in totals} for i, size in enumerate(sizes)]


def passes_table(lm, sizes: list[int], context: int, repeats: int) -> list[dict]:
    """One forward_tree pass of each size with each choice, interleaved: every choice and size once a round."""
    generator = torch.Generator().manual_seed(0)
    prefix = torch.randint(0, lm.model.config.vocab_size, (context,), generator=generator).tolist()
    cache, _ = prefill(lm.model, prefix)  # the engine's view made, its choice measured (or read) here
    view, threads = products.VIEWS[lm.model], torch.get_num_threads()
    choices = {"nn.Linear": ProductTable(one_way_choice(lm.model, "nn.Linear")), "the engine's": view.tables[threads]}
    plan = attention_plan(lm.model.config)
    seconds = {(choice, size): [] for choice in choices for size in sizes}
    for attempt in range(repeats + 1):
        for name, table in choices.items():
            view.tables[threads] = table
            for size in sizes:
                took = forward_tree(lm.model, cache, prefix[:size], chain_layout(size), plan).seconds
                keep_rows(cache, context, [])
                if attempt:
                    seconds[name, size].append(took)
    view.tables[threads] = choices["the engine's"]
    return [
        {"rows": size} | {f"{c} pass": statistics.median(seconds[c, size]) * 1e3 for c in choices} for size in sizes
    ]


def markdown(rows: list[dict]) -> str:
    names = [k for k in rows[0] if k != "rows"]
    lines = ["| rows | " + " | ".join(f"{n}, ms" for n in names) + " |", "|---" * (len(names) + 1) + "|"]
    lines += [f"| {r['rows']} | " + " | ".join(f"{r[n]:.1f}" for n in names) + " |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write both tables here")
    args = parser.parse_args()
    lm = load_model(device="cpu", dtype="float32")
    print(f"{lm.name}, {device_name(lm.device)}, float32, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}")
    with torch.inference_mode():
        ways = ways_table(lm.model, args.sizes)
    print("\nEvery linear layer of the model once, each way (median ms over the rounds):\n" + markdown(ways))
    passes = passes_table(lm, args.sizes, args.context, args.repeats)
    choice = product_choice(lm.model)
    print(f"\nThe engine's {products_words(choice)}")
    print(f"\nOne engine pass after {args.context} cached tokens (median of {args.repeats}, interleaved):")
    print(markdown(passes))
    one = passes[0]
    for row in passes[1:]:
        ratios = ", ".join(f"{k} {row[k] / one[k]:.2f}x" for k in row if k != "rows")
        print(f"- {row['rows']} rows over 1 row: {ratios}")
    if args.json:
        args.json.write_text(json.dumps({"ways": ways, "passes": passes, "choice": str(choice)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
