"""Real Gemma 3 270M (15 of its 18 layers slide over 512 tokens): lookahead equals `generate` in float32,
on short prompts and on one longer than the window, at two (W, N, G) settings.

Slow on a CPU, and the model is optional: these tests run with `make test-gemma` (which installs
it) and skip, saying why, otherwise.
"""

from __future__ import annotations

import os

import pytest
import torch

from lab.measure.datasets import load_prompts
from lookahead_core.config import LookaheadConfig
from lookahead_core.models import GEMMA, MISSING_GEMMA, encode_prompt, gemma_gguf, load_model
from lookahead_core.request import DecodeRequest
from lookahead_core.trace import decode_steps, summarize

if not gemma_gguf().exists():
    pytest.skip(MISSING_GEMMA, allow_module_level=True)
if os.environ.get("LOOKAHEAD_GEMMA") != "1":
    pytest.skip("Gemma 3 270M tests are slow on a CPU: run them with `make test-gemma`", allow_module_level=True)

SETTINGS = [LookaheadConfig(window=7, ngram=5, guesses=7), LookaheadConfig(window=4, ngram=3, guesses=4)]
MAX_NEW_TOKENS = 32
WINDOW = 512
SHORT = {
    "code": 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n',
    "prose": "Once upon a time, in a small village by the sea,",
}


@pytest.fixture(scope="module")
def gemma():
    return load_model(GEMMA, device="cpu", dtype="float32")


@pytest.fixture(scope="module")
def long_prompt(gemma) -> list[int]:
    """HumanEval prompts one after another until past the window, ending inside a function to complete."""
    text = ""
    for row in load_prompts("humaneval"):
        text += row["prompt"]
        ids = encode_prompt(gemma.tokenizer, text)
        if len(ids) > WINDOW + 60:
            return ids
    raise AssertionError("HumanEval is shorter than the window")


def generate(lm, ids: list[int]) -> list[int]:
    output = lm.model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=MAX_NEW_TOKENS)
    return output[0, len(ids) :].tolist()


def test_the_model_is_what_the_engine_says(gemma):
    facts = gemma.describe()
    assert (facts["architecture"], facts["layers"], facts["sliding_layers"], facts["sliding_window"]) == (
        "gemma3_text",
        18,
        15,
        WINDOW,
    )


@pytest.mark.parametrize("config", SETTINGS, ids=lambda c: f"W{c.window}-N{c.ngram}-G{c.guesses}")
@pytest.mark.parametrize("name", SHORT)
def test_lookahead_equals_generate_on_short_prompts(gemma, name, config):
    ids = encode_prompt(gemma.tokenizer, SHORT[name])
    steps = list(decode_steps(gemma, ids, DecodeRequest(lookahead=config, max_new_tokens=MAX_NEW_TOKENS)))
    assert summarize(steps).new_token_ids == generate(gemma, ids)


@pytest.mark.parametrize("config", SETTINGS, ids=lambda c: f"W{c.window}-N{c.ngram}-G{c.guesses}")
def test_lookahead_equals_generate_past_the_sliding_window(gemma, long_prompt, config):
    assert len(long_prompt) > WINDOW
    steps = list(decode_steps(gemma, long_prompt, DecodeRequest(lookahead=config, max_new_tokens=MAX_NEW_TOKENS)))
    assert summarize(steps).new_token_ids == generate(gemma, long_prompt)
    assert all(s.sliding.window == WINDOW and s.sliding.prefix_from[0] > 0 for s in steps[1:])
