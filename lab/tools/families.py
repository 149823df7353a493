"""Which model families lookahead runs exactly: tiny random configs of each architecture, swept.

Each family is built from its transformers config with a few layers of width 32 and a vocabulary
of 96, with a 16-token sliding window where the family has one, and decoded past that window.
Greedy lookahead must equal `generate(do_sample=False)` token for token at every (W, N, G)
tried, or the engine must refuse the family with its own error (UnsupportedModel) before
decoding. `python -m lab.families` runs the sweep and prints the table of docs/models.md (`--page
docs/models.md` writes it there).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM

from lookahead_core.config import LookaheadConfig
from lookahead_core.models import LoadedModel
from lookahead_core.request import DecodeRequest
from lookahead_core.trace import decode_steps, summarize
from lookahead_core.tree.attention import FULL, SLIDING, UnsupportedModel, attention_plan

VOCAB = 96
WINDOW = 16  # the sliding window of the tiny configs that have one
PROMPT_TOKENS = 24
NEW_TOKENS = 100  # with the prompt, well past WINDOW
SETTINGS = (LookaheadConfig(window=4, ngram=3, guesses=3), LookaheadConfig(window=7, ngram=5, guesses=7))
COMMON = {
    "vocab_size": VOCAB,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
    "initializer_range": 0.4,
    "tie_word_embeddings": False,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
# Two sliding layers, then a full one (Gemma 3's pattern is five to one).
HYBRID = {"sliding_window": WINDOW, "num_hidden_layers": 3, "layer_types": [SLIDING, SLIDING, FULL]}
MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}
TABLE_START = "<!-- family table: python -m lab.families --page docs/models.md -->"
TABLE_END = "<!-- end of family table -->"
# Real weights the test suite runs exactly, by architecture (the command that runs them).
REAL_WEIGHTS = {
    "llama": "SmolLM2-135M-Instruct (`make test`)",
    "gemma3_text": "Gemma 3 270M (`make test-gemma`)",
}


@dataclass(frozen=True)
class Family:
    """One architecture as the sweep builds it: its transformers model type and the config it needs."""

    name: str
    model_type: str
    settings: dict = field(default_factory=dict)

    @property
    def sliding(self) -> bool:
        return "sliding_window" in self.settings

    def config(self):
        return AutoConfig.for_model(self.model_type, **{**COMMON, **self.settings})


FAMILIES = (
    Family("Llama", "llama"),
    Family("Mistral (sliding window)", "mistral", {"sliding_window": WINDOW, "head_dim": 8}),
    Family("Mixtral (sliding window)", "mixtral", {"sliding_window": WINDOW, **MOE, "num_local_experts": 4}),
    Family("Qwen2", "qwen2"),
    Family(
        "Qwen2 (use_sliding_window)",
        "qwen2",
        {"use_sliding_window": True, "sliding_window": WINDOW, "max_window_layers": 1, "num_hidden_layers": 3},
    ),
    Family("Qwen2-MoE", "qwen2_moe", {**MOE, "shared_expert_intermediate_size": 32}),
    Family("Qwen3", "qwen3", {"head_dim": 8}),
    Family("Qwen3-MoE", "qwen3_moe", {"head_dim": 8, **MOE}),
    Family("Gemma", "gemma", {"head_dim": 8}),
    Family("Gemma 2 (sliding window)", "gemma2", {"head_dim": 8, "sliding_window": WINDOW, "num_hidden_layers": 3}),
    Family(  # Gemma 3 scales its embeddings up: with larger weights its output repeats one token
        "Gemma 3 (sliding window)",
        "gemma3_text",
        {"head_dim": 8, **HYBRID, "initializer_range": 0.1},
    ),
    Family("Phi", "phi"),
    Family("Phi-3 (sliding window)", "phi3", {"sliding_window": WINDOW}),
    Family("GPT-2", "gpt2"),
    Family("GPT-NeoX", "gpt_neox"),
    Family("GPT-J", "gptj", {"rotary_dim": 4}),
    Family("GPT-BigCode (StarCoder)", "gpt_bigcode"),
    Family("Falcon", "falcon", {"new_decoder_architecture": True, "num_kv_heads": 2}),
    Family("Falcon (ALiBi)", "falcon", {"alibi": True}),
    Family("StarCoder2 (sliding window)", "starcoder2", {"sliding_window": WINDOW}),
    Family("OLMo", "olmo"),
    Family("OLMo 2", "olmo2"),
    Family("Cohere", "cohere"),
    Family("Cohere 2 (sliding window)", "cohere2", HYBRID),
    Family("Granite", "granite"),
    Family("StableLM", "stablelm"),
    Family("OPT", "opt", {"ffn_dim": 64, "word_embed_proj_dim": 32}),
    Family("SmolLM3", "smollm3"),
    Family("GLM", "glm", {"head_dim": 8}),
    Family("BLOOM (ALiBi)", "bloom", {"n_head": 4}),
    Family("MPT (ALiBi)", "mpt", {"d_model": 32, "n_heads": 4, "n_layers": 2}),
)


@dataclass
class Outcome:
    """A family's result: `exact` (every setting matched generate), `refused` or `differs`; why, and how long."""

    family: Family
    verdict: str
    detail: str
    seconds: float


def tiny_model(family: Family, seed: int = 0) -> LoadedModel:
    """The family's tiny random model in float32 with SDPA attention (eager where the family has no SDPA)."""
    torch.manual_seed(seed)
    config = family.config()
    try:
        model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa", dtype=torch.float32)
    except ValueError:
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    model.eval()
    model.generation_config.eos_token_id = None  # decode the full budget: no EOS, as the engine is told
    return LoadedModel(model, None, f"tiny-random-{family.model_type}", frozenset(), COMMON["max_position_embeddings"])


def sweep_prompt(seed: str) -> list[int]:
    """A prompt with a repeated motif, so the pool finds n-grams to guess with."""
    rng = random.Random(seed)
    motif = [rng.randrange(3, VOCAB) for _ in range(rng.randint(3, 7))]
    return (motif * PROMPT_TOKENS)[:PROMPT_TOKENS]


def greedy_reference(model, prompt_ids: list[int], max_new_tokens: int) -> list[int]:
    """`generate(do_sample=False)` with no EOS: the exact output lookahead must reproduce."""
    output = model.generate(
        torch.tensor([prompt_ids]),
        do_sample=False,
        max_new_tokens=max_new_tokens,
        pad_token_id=0,
        attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
    )
    return output[0, len(prompt_ids) :].tolist()


def lookahead_output(lm: LoadedModel, prompt_ids: list[int], config: LookaheadConfig, max_new_tokens: int):
    steps = list(decode_steps(lm, prompt_ids, DecodeRequest(lookahead=config, max_new_tokens=max_new_tokens)))
    return summarize(steps).new_token_ids, steps


def sweep_family(family: Family) -> Outcome:
    """Refused by the engine, or greedy lookahead compared with generate at each of SETTINGS."""
    start = time.perf_counter()
    lm = tiny_model(family)
    try:
        attention_plan(lm.model.config)
    except UnsupportedModel as refusal:
        return Outcome(family, "refused", refusal.reason, time.perf_counter() - start)
    prompt = sweep_prompt(family.name)
    reference = greedy_reference(lm.model, prompt, NEW_TOKENS)
    for config in SETTINGS:
        output, steps = lookahead_output(lm, prompt, config, NEW_TOKENS)
        if output != reference:
            first = next(i for i, (a, b) in enumerate(zip(output + [None], reference, strict=False)) if a != b)
            where = f"W={config.window} N={config.ngram} G={config.guesses}: token {first}"
            return Outcome(family, "differs", where, time.perf_counter() - start)
    return Outcome(family, "exact", f"{len(prompt) + NEW_TOKENS} tokens", time.perf_counter() - start)


def table(outcomes: list[Outcome]) -> str:
    """The table of families in docs/models.md: tested exact (tiny random config), on real weights, or refused (why)."""
    lines = ["| family | transformers type | tiny random config (CI) | real weights |", "|---|---|---|---|"]
    for o in outcomes:
        window = f", sliding window {WINDOW} on {sliding_share(o.family)}" if o.family.sliding else ""
        verdict = {
            "exact": f"exact{window}, {PROMPT_TOKENS}+{NEW_TOKENS} tokens",
            "refused": f"refused: {o.detail}",
            "differs": f"**differs** ({o.detail})",
        }[o.verdict]
        real = REAL_WEIGHTS.get(o.family.model_type) if o.verdict == "exact" else None
        lines.append(f"| {o.family.name} | `{o.family.model_type}` | {verdict} | {real or 'not tested'} |")
    return "\n".join(lines)


def sliding_share(family: Family) -> str:
    plan = attention_plan(family.config())
    return f"{plan.sliding_layers} of {len(plan.layer_types)} layers"


def with_table(page: str, outcomes: list[Outcome]) -> str:
    """`page` with the text between its family-table markers replaced by this sweep's table."""
    start, end = page.index(TABLE_START) + len(TABLE_START), page.index(TABLE_END)
    return f"{page[:start]}\n{table(outcomes)}\n{page[end:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.families", description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="sweep these model types only")
    parser.add_argument("--page", type=Path, help="write the table into this page, between its markers")
    args = parser.parse_args(argv)
    outcomes = []
    for family in FAMILIES:
        if args.only and family.model_type not in args.only:
            continue
        outcome = sweep_family(family)
        print(f"{family.name:<32} {outcome.verdict:<8} {outcome.seconds:5.1f} s  {outcome.detail}", file=sys.stderr)
        outcomes.append(outcome)
    print(table(outcomes))
    if args.page:
        args.page.write_text(with_table(args.page.read_text(), outcomes))
    return 1 if any(o.verdict == "differs" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
