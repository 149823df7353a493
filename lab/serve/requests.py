"""Checking what a visitor sends before any model work: one function per value, one request object out.

Every check takes the raw value a client sent (a slider's float, a checkbox's bool, or anything a
hand-written HTTP call puts there) and raises InputError or SettingsError with a message that says
what to change. `model_request` assembles the checked values into a ModelRequest, which is all the
model work needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lab.serve.access import MAX_MODEL_NAME, ModelAccess
from lookahead_core.config import SUFFIX, LookaheadConfig, LookupConfig, SuffixConfig, check_draft_tokens
from lookahead_core.records import METHODS, Method
from lookahead_core.request import DecodeRequest
from lookahead_core.sampling import GREEDY, SamplingConfig

MAX_NEW_TOKENS = 256
# The model's context is 8,192 tokens (about 4 characters each); far longer text is refused before
# the tokenizer spends seconds on it, so one visitor's paste cannot stall the queue.
MAX_PROMPT_CHARACTERS = 40_000
# What Run sets against greedy: every method of the table that guesses (Medusa and EAGLE on a model the lab ships
# heads and a layer for)
RUN_METHODS = tuple(method for method, entry in METHODS.items() if entry.guesses)
DTYPE_CHOICES = ("auto", "float32", "bfloat16")  # float32 (exact) everywhere, bfloat16 where there is a GPU
QUOTED = 80  # characters of a visitor's value quoted back in a message


class InputError(ValueError):
    """A request the lab refuses before any model work; the message says what to change."""


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """A checked request for model work: the prompt (wrapped in the chat template or not), what to decode,
    and on which model and dtype."""

    prompt: str
    chat: bool
    decode: DecodeRequest
    model: str
    dtype: str


def short(value) -> str:
    """A visitor's value for a message: its repr, cut to QUOTED characters."""
    text = repr(value)
    return text if len(text) <= QUOTED else text[: QUOTED - 1] + "…"


def check_prompt(text) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InputError("The prompt is empty: type a prompt or pick a preset.")
    if len(text) > MAX_PROMPT_CHARACTERS:
        raise InputError(
            f"The prompt has {len(text):,} characters; the limit is {MAX_PROMPT_CHARACTERS:,} "
            "(the model reads at most 8,192 tokens). Shorten it."
        )
    surrogate = next((i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF), None)
    if surrogate is not None:
        raise InputError(
            f"Character {surrogate + 1} of the prompt is a lone surrogate (U+{ord(text[surrogate]):04X}), not valid "
            "Unicode, so it cannot be tokenized. Remove it."
        )
    return text


def whole_number(value, name: str) -> int:
    """`value` as an int when it is a whole number (sliders send floats such as 7.0)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value != int(value):
        raise InputError(f"{name} must be a whole number, got {short(value)}.")
    return int(value)


def number(value, name: str) -> float:
    """`value` as a float when it is a finite number (not a bool, not text)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{name} must be a number, got {short(value)}.")
    return float(value)


def lookahead_of(window, ngram, guesses) -> LookaheadConfig:
    """W, N, G as lookahead's settings; InputError for a value that is no whole number, SettingsError past the
    engine's ranges and budget."""
    w, n, g = whole_number(window, "W"), whole_number(ngram, "N"), whole_number(guesses, "G")
    return LookaheadConfig(window=w, ngram=n, guesses=g)


def new_tokens_of(max_new_tokens, cap: int) -> int:
    """Max new tokens, from 1 to MAX_NEW_TOKENS; over `cap` (a Space's), refused saying why."""
    tokens = whole_number(max_new_tokens, "Max new tokens")
    if not 1 <= tokens <= MAX_NEW_TOKENS:
        raise InputError(f"Max new tokens must be between 1 and {MAX_NEW_TOKENS}, got {tokens}.")
    if tokens > cap:
        raise InputError(
            f"On this Space a request decodes at most {cap} new tokens (each visitor has a small daily "
            "GPU quota): lower Max new tokens."
        )
    return tokens


def sampling_of(sample, temperature, top_k, top_p, seed) -> SamplingConfig:
    """The sampling settings sent with Run or Race (greedy when the switch is off); SettingsError if out of range."""
    if not sample:
        return GREEDY
    k, s = whole_number(top_k, "top-k"), whole_number(seed, "Seed")
    return SamplingConfig(number(temperature, "Temperature"), k, number(top_p, "Top-p"), s)


def method_of(method) -> Method:
    """The method chosen for Run (one of RUN_METHODS); InputError for anything else."""
    if not isinstance(method, str) or method not in {m.value for m in RUN_METHODS}:
        raise InputError(f"Choose a method to run: {', '.join(m.value for m in RUN_METHODS)}.")
    return Method(method)


def lookup_of(lookup_tokens) -> LookupConfig:
    """Prompt lookup's settings from the slider; InputError or SettingsError when out of range."""
    return LookupConfig(tokens=whole_number(lookup_tokens, "Prompt lookup tokens"))


def draft_tokens_of(draft_tokens) -> int:
    """The draft's k from the slider; InputError or SettingsError when out of range."""
    return check_draft_tokens(whole_number(draft_tokens, "Draft tokens k"))


def suffix_of(tree_size, alpha) -> SuffixConfig:
    """Suffix decoding's settings from the sliders (the tree's nodes at most, alpha); InputError or SettingsError
    when out of range."""
    return SuffixConfig(tree_size=whole_number(tree_size, "Suffix tree size"), alpha=number(alpha, "Suffix alpha"))


def model_of(choice, dtype, access: ModelAccess) -> tuple[str, str]:
    """The model and dtype a request names; InputError for an empty or overlong name or an unknown dtype,
    access.AccessError for a model this server's operator does not let visitors load (docs/deploy.md)."""
    name = choice.strip() if isinstance(choice, str) else ""
    if not name or len(name) > MAX_MODEL_NAME:
        offered = ", ".join(access.offered())
        raise InputError(f"Name a model: one of {offered} ({MAX_MODEL_NAME} characters at most).")
    if not isinstance(dtype, str) or dtype not in DTYPE_CHOICES:
        raise InputError(f"Choose a dtype: {', '.join(DTYPE_CHOICES)}.")
    return access.check(name), dtype


def model_request(
    *,
    prompt,
    chat,
    window,
    ngram,
    guesses,
    max_new_tokens,
    sampling: tuple,
    auto,
    lookup_tokens,
    draft_tokens,
    model: tuple,
    access: ModelAccess,
    cap: int,
    method=Method.LOOKAHEAD.value,
    suffix: tuple = (SUFFIX.tree_size, SUFFIX.alpha),
) -> ModelRequest:
    """Every value of a Run (or, with `method` left to lookahead, a race) checked in the order the page lists
    them, as one ModelRequest: `sampling` is (switch, temperature, top-k, top-p, seed), `model` is (choice,
    dtype), `suffix` (tree size, alpha). Raises InputError, SettingsError or AccessError for the first bad value."""
    text = check_prompt(prompt)
    lookahead = lookahead_of(window, ngram, guesses)
    tokens = new_tokens_of(max_new_tokens, cap)
    decode = DecodeRequest(
        max_new_tokens=tokens,
        lookahead=lookahead,
        sampling=sampling_of(*sampling),
        method=method_of(method),
        lookup=lookup_of(lookup_tokens),
        draft_tokens=draft_tokens_of(draft_tokens),
        suffix=suffix_of(*suffix),
        auto=bool(auto),
    )
    name, dtype = model_of(*model, access=access)
    return ModelRequest(prompt=text, chat=bool(chat), decode=decode, model=name, dtype=dtype)
