"""Command line: `python -m lookahead_core generate ...` (the contract other tools rely on).

With --json, one JSON object per prompt per line, keys: id, method, window, ngram, guesses,
prompt_token_ids, new_token_ids, text, steps (forward passes, the prefill counted as one),
seconds. Without it, the text and a one-line summary. Errors go to stderr as one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from .config import LookaheadConfig, SettingsError
from .datasets import read_prompts_file
from .decoding import DecodingError
from .models import ModelLoadError, encode_prompt, load_model
from .trace import decode_steps, summarize


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lookahead_core", description="Exact lookahead decoding.")
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="decode prompts with lookahead or greedy decoding")
    source = gen.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt", help="one prompt text")
    source.add_argument("--prompts-file", help='JSONL file, one {"id": str, "prompt": str} per line')
    gen.add_argument(
        "--model", default=None, help="hub id, local folder or .gguf file (default: embedded SmolLM2-135M-Instruct)"
    )
    gen.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    gen.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    gen.add_argument("--method", default="lookahead", choices=["lookahead", "greedy"])
    gen.add_argument("--window", type=int, default=LookaheadConfig.window, metavar="W", help="window size W (columns)")
    gen.add_argument("--ngram", type=int, default=LookaheadConfig.ngram, metavar="N", help="n-gram size N (N-1 levels)")
    gen.add_argument(
        "--guesses", type=int, default=LookaheadConfig.guesses, metavar="G", help="guesses G verified per step"
    )
    gen.add_argument("--max-new-tokens", type=int, default=128, metavar="M")
    gen.add_argument("--chat", action="store_true", help="wrap each prompt in the model's chat template")
    gen.add_argument("--json", action="store_true", help="one JSON object per prompt per line")
    gen.add_argument("--trust-remote-code", action="store_true", help="allow a hub model's own code to run")
    return parser


def generate(args: argparse.Namespace) -> None:
    config = LookaheadConfig(window=args.window, ngram=args.ngram, guesses=args.guesses)
    prompts = read_prompts_file(args.prompts_file) if args.prompts_file else [{"id": "prompt", "prompt": args.prompt}]
    lm = load_model(args.model, device=args.device, dtype=args.dtype, trust_remote_code=args.trust_remote_code)
    for item in prompts:
        prompt_ids = encode_prompt(lm.tokenizer, item["prompt"], args.chat)
        summary = summarize(list(decode_steps(lm, prompt_ids, args.method, config, args.max_new_tokens)))
        text = lm.tokenizer.decode(summary["new_token_ids"], skip_special_tokens=True)
        lookahead = args.method == "lookahead"
        if args.json:
            print(
                json.dumps(
                    {
                        "id": item["id"],
                        "method": args.method,
                        "window": config.window if lookahead else None,
                        "ngram": config.ngram if lookahead else None,
                        "guesses": config.guesses if lookahead else None,
                        "prompt_token_ids": prompt_ids,
                        "new_token_ids": summary["new_token_ids"],
                        "text": text,
                        "steps": summary["steps"],
                        "seconds": round(summary["seconds"], 6),
                    }
                ),
                flush=True,
            )
        else:
            settings = f"W={config.window} N={config.ngram} G={config.guesses}" if lookahead else "greedy"
            print(f"--- {item['id']} ---\n{text}")
            print(
                f"[{args.method} {settings}] {summary['tokens']} tokens in {summary['steps']} steps "
                f"({summary['tokens_per_step']:.2f} tokens/step), {summary['seconds']:.2f} s "
                f"on {lm.describe()['device_name']}, {lm.describe()['dtype']}",
                flush=True,
            )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        generate(args)
    except (SettingsError, DecodingError, ModelLoadError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
