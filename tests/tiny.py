"""Tiny random models, and what tests build around them: a draft, Medusa heads, a runtime with every method's
needs, a character tokenizer and a made-up step-cost curve. Kept out of tests/conftest.py, which every pytest
process loads, `make test`'s controller too: that one runs no test and need not import torch (8 s on the 2-core
CPU)."""

from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig, Qwen2Config

from lookahead_core.costs import StepCosts
from lookahead_core.methods.draft import Draft
from lookahead_core.methods.eagle import EAGLE, eagle_for
from lookahead_core.methods.medusa import Medusa, heads_for, make_medusa
from lookahead_core.models import LoadedModel
from lookahead_core.runtime import Runtime

TINY_VOCAB = 96
COST_SIZES = [1, 2, 4, 8, 16, 32, 64, 128]


def tiny_config(family: str, layers: int = 2):
    """A 2-layer random model small enough to decode hundreds of prompts in seconds."""
    common = {"vocab_size": TINY_VOCAB, "initializer_range": 0.4, "tie_word_embeddings": False}
    shape = {  # Llama's names, which Qwen2 shares
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 256,
    }
    if family == "llama":
        return LlamaConfig(**shape, **common)
    if family == "qwen2":
        return Qwen2Config(**shape, use_sliding_window=False, **common)
    if family == "gpt2":
        return GPT2Config(n_embd=32, n_layer=layers, n_head=4, n_positions=256, **common)
    raise ValueError(family)


def tiny_model(family: str, attention: str = "sdpa", seed: int = 0, layers: int = 2) -> LoadedModel:
    torch.manual_seed(seed)
    config = tiny_config(family, layers)
    model = AutoModelForCausalLM.from_config(config, attn_implementation=attention, dtype=torch.float32)
    model.eval()
    return LoadedModel(model, None, f"tiny-random-{family}", frozenset(), 256)


def tiny_draft(family: str, tokens: int = 4, confidence: float = 0.0) -> Draft:
    """A smaller random model of the same family and vocabulary: a draft that is often wrong."""
    return Draft(tiny_model(family, seed=1, layers=1).model, f"tiny-random-{family}-1-layer", tokens, confidence)


def tiny_medusa(lm: LoadedModel, heads: int = 4, size: int = 16, seed: int = 3, scale: float = 0.3) -> Medusa:
    """Random (non-zero) Medusa heads for a tiny model, with a sparse tree of `size` nodes: guesses that are
    sometimes right, so verification both accepts and rejects."""
    medusa_heads = heads_for(lm.model, lm.name, heads)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in (medusa_heads.weight, medusa_heads.bias):
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * scale)
    return make_medusa(medusa_heads, size)


class CharTokenizer:
    """A stand-in tokenizer for the tiny models: token id i reads as one printable character.

    Enough for `record_trace`, which needs only `decode` to write the trace's vocabulary and text.
    """

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return "".join(chr(32 + i % 95) for i in ids)


def cost_table(per_token: float) -> StepCosts:
    """A cost curve where each token fed adds `per_token` of a one-token step."""
    seconds = [0.01 * (1 + per_token * (size - 1)) for size in COST_SIZES]
    return StepCosts(
        sizes=COST_SIZES,
        seconds=seconds,
        context=256,
        hardware="test hardware",
        model="tiny",
        dtype="float32",
        measured_at="2026-01-01T00:00:00",
    )


def tiny_runtime(lm: LoadedModel, family: str, tokens: int = 4) -> Runtime:
    """Everything every method of the table needs, for a tiny model: a tiny draft, an untrained EAGLE layer (exact
    all the same: verification decides) and tiny Medusa heads."""
    layer = Draft(eagle_for(lm.model, lm.name), EAGLE, tokens)
    return Runtime(draft=tiny_draft(family, tokens), layer=layer, heads=tiny_medusa(lm))
