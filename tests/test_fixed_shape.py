"""The fixed-shape step (lookahead_core/device/fixed.py) on the CPU: every method's output equals `generate` on tiny
Llama, Qwen2 and GPT-2 models and on the real model; its records equal the eager step's, so a replay cannot tell the
modes apart; the committed cache equals a plain run's; the step traces whole under torch.compile and does not
recompile across prompt lengths; a model it cannot drive runs eagerly and says why. Each check has a negative
control that shows it can fail: a wrong copy-down, a second bucket, a sliding-window model.
"""

from __future__ import annotations

import dataclasses
import gc
import random
import shutil
import weakref
from functools import partial

import pytest
import torch

from lab.measure.bench import bench_settings
from lab.measure.race import race
from lab.tools import families
from lab.train.heads import SHIPPED_HEADS, eagle_draft
from lookahead_core import runtime as runtime_module
from lookahead_core import trace as trace_module
from lookahead_core.config import LookaheadConfig
from lookahead_core.costs import StepCosts
from lookahead_core.device import capture, fixed
from lookahead_core.device.forward import Pass, prefill
from lookahead_core.methods.draft import make_draft
from lookahead_core.methods.medusa import load_heads, make_medusa
from lookahead_core.records import BenchMethod, Method, RaceRecord, StepMode, to_data
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.sampling import SamplingConfig
from lookahead_core.spec import guessing_decoder
from lookahead_core.trace import (
    WARM_UP_TOKENS,
    decode_steps,
    record_run,
    record_trace,
    summarize,
    warm_up,
    warm_up_prompts,
    warming_up,
)
from lookahead_core.tree.layout import chain_layout, tree_layout
from visuals.summary import summary_html

from .conftest import heavy_but, slow_but
from .test_engine_tiny_models import greedy_reference
from .tiny import CharTokenizer, cost_table, tiny_draft, tiny_model, tiny_runtime
from .visual_checks import example

FAMILIES = ["llama", "qwen2", "gpt2"]
PROMPTS = [([5, 6, 7, 8, 9] * 8)[:23], [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5], ([40, 41] * 20)[:37]]
SETTINGS = LookaheadConfig(window=4, ngram=4, guesses=3)
MAX_NEW_TOKENS = 30


def request(method: Method, max_new_tokens: int = MAX_NEW_TOKENS, **settings) -> DecodeRequest:
    return DecodeRequest(method=method, lookahead=SETTINGS, max_new_tokens=max_new_tokens, **settings)


def output(lm, prompt: list[int], req: DecodeRequest, runtime: Runtime) -> list[int]:
    return summarize(list(decode_steps(lm, prompt, req, runtime))).new_token_ids


def untimed(records) -> list:
    """Step records as data without their wall times (`forward_seconds`, a draft's `seconds`): what a replay shows."""

    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if not k.endswith("seconds")}
        return [strip(v) for v in node] if isinstance(node, list) else node

    return strip([to_data(record) for record in records])


def assert_same_records(got, expected, where: str = "steps") -> None:
    """Equal, each measured probability to 1e-4 of its value: the two steps' kernels round differently in the
    last bits (as the eager step's own products do against `generate`'s); every token, row and verdict equal."""
    if isinstance(expected, float):
        assert got == pytest.approx(expected, rel=1e-4, abs=1e-7), where
    elif isinstance(expected, dict):
        assert got.keys() == expected.keys(), where
        for key in expected:
            assert_same_records(got[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), where
        for i, (a, b) in enumerate(zip(got, expected, strict=True)):
            assert_same_records(a, b, f"{where}[{i}]")
    else:
        assert got == expected, where


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
@pytest.mark.parametrize("family", FAMILIES)
def test_every_method_in_the_fixed_shape_step_equals_generate(family, monkeypatch):
    lm = tiny_model(family)
    runtime = dataclasses.replace(tiny_runtime(lm, family), mode=StepMode.FIXED)
    assert fixed.chosen_mode(lm.model, runtime.mode) == (StepMode.FIXED, "")
    rows = rows_of_exact_runs(lm, runtime, monkeypatch)
    assert rows >= {1, SETTINGS.tokens_per_step, 1 + 4}, "every method ran its own shape"


def rows_of_exact_runs(lm, runtime: Runtime, monkeypatch) -> set[int]:
    """Every method on every prompt, each output asserted equal to greedy `generate`'s; the rows of the shapes run."""
    shapes = []
    monkeypatch.setattr(fixed, "acquired", spy(fixed.acquired, shapes))
    for prompt in PROMPTS:
        reference = greedy_reference(lm.model, prompt, MAX_NEW_TOKENS, None)
        for method in Method:
            assert output(lm, prompt, request(method), runtime) == reference, f"{method} on {prompt}"
    return {shape.rows for shape in shapes}


def spy(acquired, shapes: list):
    """`fixed.acquired`, noting each shape it hands out."""

    def noting(model, shape, capture_with):
        shapes.append(shape)
        return acquired(model, shape, capture_with)

    return noting


def curve(seconds: dict[int, float]) -> StepCosts:
    """A step-cost curve of these sizes and seconds (the hardware's facts made up)."""
    return StepCosts(
        sizes=list(seconds),
        seconds=list(seconds.values()),
        context=256,
        hardware="test",
        model="tiny",
        dtype="float32",
        measured_at="2026-11-26T00:00:00",
    )


# An H200's captured curve (ms, the tune map of 2026-11-26): 8 to 16 rows cost more than 24 to 64 do
DIPPING = curve({1: 4.6, 2: 5.6, 4: 5.5, 8: 8.6, 12: 9.0, 16: 8.9, 24: 6.0, 32: 6.1, 48: 6.6, 64: 6.7})
RISING = curve({1: 1.0, 2: 1.4, 4: 1.6, 8: 2.7, 16: 2.7, 24: 4.0, 64: 5.5})  # a CPU's: flat at 8-16, no dip
# Every pass of more than one row is cheapest at 64: each method's shape widens there
WIDEST = curve({1: 1.0, 2: 3.0, 4: 3.0, 8: 3.0, 16: 3.0, 32: 3.0, 64: 2.0})


def test_a_shape_on_the_curves_dip_widens_to_the_cheapest_size_that_holds_it():
    assert [DIPPING.cheapest_rows(rows) for rows in (1, 8, 11, 16, 17, 24, 32, 48)] == [1, 24, 24, 24, 24, 24, 32, 48]
    assert DIPPING.cheapest_rows(65) == 65, "no measured size holds it"
    assert [RISING.cheapest_rows(rows) for rows in (1, 8, 11, 16, 24)] == [1, 8, 11, 16, 24], (
        "a rising curve widens none"
    )
    within_noise = curve({1: 1.0, 8: 2.0, 16: 1.85})  # 16 rows 7.5% cheaper than 8: not enough to widen
    assert within_noise.cheapest_rows(8) == 8 and curve({1: 1.0, 8: 2.0, 16: 1.7}).cheapest_rows(8) == 16


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_every_method_is_exact_in_widened_shapes(monkeypatch):
    lm = tiny_model("llama")
    runtime = dataclasses.replace(tiny_runtime(lm, "llama"), mode=StepMode.FIXED, costs=WIDEST)
    rows = rows_of_exact_runs(lm, runtime, monkeypatch)
    assert rows == {1, 64}, "greedy's one row, every other method widened to 64"


@pytest.mark.parametrize("method", heavy_but(list(Method), Method.LOOKAHEAD, Method.GREEDY))
def test_the_fixed_step_records_what_the_eager_step_records(method):
    """Greedy and sampled: the step records (rows, masks seen, verification, draws, window, pool) are the eager
    step's, timings aside, in the method's own shape and in one widened to 64 rows; only the trace's meta says
    which mode ran."""
    lm = dataclasses.replace(tiny_model("llama"), tokenizer=CharTokenizer())
    runtime = tiny_runtime(lm, "llama")
    for sampling in (None, SamplingConfig(temperature=0.8, top_k=20, seed=7)):
        req = request(method) if sampling is None else request(method, sampling=sampling)
        eager = record_trace(lm, PROMPTS[0], req, dataclasses.replace(runtime, mode=StepMode.EAGER))
        for costs in (None, WIDEST):
            fixed_runtime = dataclasses.replace(runtime, mode=StepMode.FIXED, costs=costs)
            fixed_trace = record_trace(lm, PROMPTS[0], req, fixed_runtime)
            assert_same_records(untimed(fixed_trace.steps), untimed(eager.steps))
            assert (eager.meta.mode, fixed_trace.meta.mode) == (StepMode.EAGER, StepMode.FIXED)
    rows = {shape.rows for shape, _ in fixed.STEPS.get(lm.model)}
    assert rows and (64 in rows) == (method != Method.GREEDY), "the fixed-shape step ran, widened but for greedy"


def test_a_trace_says_the_rows_its_passes_ran_and_the_most_its_steps_fed():
    """The facts line reads them from the trace's meta (never re-derived): the eager step has no shape."""
    lm = dataclasses.replace(tiny_model("llama"), tokenizer=CharTokenizer())
    runtime, most = tiny_runtime(lm, "llama"), SETTINGS.tokens_per_step
    cases = [(StepMode.EAGER, None, (0, 0)), (StepMode.FIXED, None, (most, most)), (StepMode.FIXED, WIDEST, (64, most))]
    for mode, costs, facts in cases:
        ran = dataclasses.replace(runtime, mode=mode, costs=costs)
        meta = record_trace(lm, PROMPTS[0], request(Method.LOOKAHEAD), ran).meta
        assert (meta.shape_rows, meta.shape_needs) == facts, f"{mode} {costs}"
    eager = example("python")
    meta = dataclasses.replace(eager.trace.meta, mode=StepMode.CUDA_GRAPH, shape_rows=64, shape_needs=most)
    widened = summary_html(dataclasses.replace(eager, trace=dataclasses.replace(eager.trace, meta=meta)))
    assert f"64 rows a pass (its steps feed at most {most}: widened to the cheapest size on the step costs)" in widened
    assert "rows a pass" not in summary_html(eager), "an eager run says nothing of a shape"


def test_a_traced_decoding_asks_its_step_mode_once_and_records_the_mode_it_ran(monkeypatch):
    """One plan per decoding (trace.settle): the mode is asked for once, and the meta says the mode the passes ran
    in, not the one asked for (here the CUDA graph, off CUDA: the fixed step, uncaptured). A runtime settled once
    (Runtime.in_mode, as the lab's builders settle theirs) is not asked again by the decodings it runs."""
    lm = dataclasses.replace(tiny_model("llama"), tokenizer=CharTokenizer())
    asked, modes = [], []
    monkeypatch.setattr(runtime_module, "chosen_mode", spy_on(fixed.chosen_mode, asked))
    monkeypatch.setattr(trace_module, "step_passes", spy_on(fixed.step_passes, modes))
    meta = record_trace(lm, PROMPTS[0], request(Method.LOOKAHEAD), Runtime(mode=StepMode.CUDA_GRAPH)).meta
    assert len(asked) == 1 and modes == [(lm.model, StepMode.FIXED)]
    assert meta.mode == StepMode.FIXED and "needs a CUDA device" in meta.mode_note
    settled = Runtime(mode=StepMode.CUDA_GRAPH).in_mode(lm.model)
    assert (settled.mode, len(asked)) == (StepMode.FIXED, 2)
    for method in (Method.GREEDY, Method.LOOKAHEAD):
        again = record_trace(lm, PROMPTS[0], request(method), settled).meta
        assert (again.mode, again.mode_note) == (meta.mode, meta.mode_note)
    assert len(asked) == 2, "the settled runtime's decodings asked for no mode"


def spy_on(function, calls: list):
    """`function`, noting the first two arguments of each call."""

    def spying(*args, **kwargs):
        calls.append(args[:2])
        return function(*args, **kwargs)

    return spying


def committed_cache(lm, prompt: list[int], req: DecodeRequest, runtime: Runtime):
    """The tokens of a fixed-shape run and the static cache's committed rows after it (the last token has none)."""
    tokens = output(lm, prompt, req, runtime)
    shape = next(shape for shape, _ in fixed.STEPS[lm.model] if shape.rows == SETTINGS.tokens_per_step)
    step = fixed.STEPS[lm.model][shape, capture.as_it_is][0]
    length = int(step.length)
    return tokens, length, [(layer.keys[:, :, :length], layer.values[:, :, :length]) for layer in step.cache.layers]


def test_the_committed_cache_equals_a_plain_runs():
    lm = tiny_model("llama")
    runtime = Runtime(mode=StepMode.FIXED)
    prompt = PROMPTS[2]  # repetitive: steps accept several rows, so rows really move down
    tokens, length, rows = committed_cache(lm, prompt, request(Method.LOOKAHEAD), runtime)
    assert len(prompt) + 20 < length < len(prompt) + len(tokens), "the last step commits and keeps nothing"
    plain, _ = prefill(lm.model, (prompt + tokens)[:length])
    for (keys, values), layer in zip(rows, plain.layers, strict=True):
        torch.testing.assert_close(keys, layer.keys, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(values, layer.values, rtol=1e-5, atol=1e-5)


def test_a_wrong_copy_down_is_caught(monkeypatch):
    """Negative control: the copy-down index shifted by one row leaves wrong rows in the cache; both the cache and
    the output then differ from a plain run's."""
    lm = tiny_model("llama")
    prompt = PROMPTS[2]
    reference = greedy_reference(lm.model, prompt, MAX_NEW_TOKENS, None)
    keep = fixed.FixedPasses.keep

    def shifted(self, accepted):
        keep(self, tuple(r + 1 for r in accepted))

    monkeypatch.setattr(fixed.FixedPasses, "keep", shifted)
    tokens, _, rows = committed_cache(lm, prompt, request(Method.LOOKAHEAD), Runtime(mode=StepMode.FIXED))
    plain, _ = prefill(lm.model, (prompt + tokens)[:-1])
    assert tokens != reference
    assert not torch.allclose(rows[0][0], plain.layers[0].keys[:, :, : rows[0][0].shape[2]], atol=1e-5)


def pad_rows_seen(padded_tree):
    """`fixed.padded_tree` with every real row also seeing the pad rows."""

    def seen(layout, rows, dtype, device):
        depths, mask = padded_tree(layout, rows, dtype, device)
        return depths, mask.clone().index_fill_(1, torch.arange(layout.size, rows, device=device), 0.0)

    return seen


def one_column_too_far(self, span):
    """The committed prefix's mask as "column <= L": the row past the committed ones is seen too."""
    self.length += 1
    try:
        return forward(self, span)
    finally:
        self.length -= 1


forward = fixed.FixedStep.forward


@pytest.mark.parametrize("corruption", ["pad rows seen", "prefix one column too far"])
def test_a_wrong_mask_is_caught(corruption, monkeypatch):
    """Negative controls for the exactness test above: a mask that lets real rows see the pad rows, or the
    prefix one column past L, and the output leaves generate's. The mode's probe runs first, on the sound step:
    it would catch the second corruption itself and send the runs eager."""
    lm = tiny_model("llama")
    assert fixed.chosen_mode(lm.model, StepMode.FIXED) == (StepMode.FIXED, "")
    if corruption == "pad rows seen":
        monkeypatch.setattr(fixed, "padded_tree", pad_rows_seen(fixed.padded_tree))
    else:
        monkeypatch.setattr(fixed.FixedStep, "forward", one_column_too_far)
    runtime = Runtime(mode=StepMode.FIXED)
    differ = [
        output(lm, prompt, request(Method.LOOKAHEAD), runtime) != greedy_reference(lm.model, prompt, 30, None)
        for prompt in PROMPTS
    ]
    assert any(differ)


def test_a_pass_reads_the_filled_length_and_no_further(monkeypatch):
    """Each pass reads its span (L + T rounded up to SPAN), not the whole cache: in one decoding the spans grow with
    L, each covering the rows written, short of the cache's C + T while L allows."""
    lm = tiny_model("llama")
    seen = []
    forward = fixed.FixedStep.forward

    def noting(self, span):
        seen.append((span, int(self.length), self.shape))
        return forward(self, span)

    monkeypatch.setattr(fixed.FixedStep, "forward", noting)
    monkeypatch.setattr(fixed, "SPAN", 16)
    output(lm, PROMPTS[2], request(Method.LOOKAHEAD), Runtime(mode=StepMode.FIXED))
    spans = [(span, length, shape) for span, length, shape in seen if shape.rows > 1]  # the probe's own shape aside
    assert all(length + shape.rows <= span for span, length, shape in spans)
    assert all(span % 16 == 0 or span == shape.capacity + shape.rows for span, _, shape in spans)
    assert len({span for span, _, _ in spans}) > 2 and min(span for span, _, _ in spans) < spans[0][2].capacity


def test_a_runtime_without_spans_reads_the_whole_cache_and_decides_the_same(monkeypatch):
    """`Runtime.spans` False (the GPU check's "before" of spans): every pass reads C + T columns, and the decoding's
    records are those of the one that reads its spans."""
    lm = tiny_model("llama")
    seen = []
    forward = fixed.FixedStep.forward

    def noting(self, span):
        seen.append(span == self.shape.capacity + self.shape.rows)
        return forward(self, span)

    monkeypatch.setattr(fixed.FixedStep, "forward", noting)
    monkeypatch.setattr(fixed, "SPAN", 16)
    runtime = Runtime(mode=StepMode.FIXED)
    records = {}
    for spans in (True, False):
        seen.clear()
        records[spans] = untimed(
            decode_steps(lm, PROMPTS[2], request(Method.LOOKAHEAD), dataclasses.replace(runtime, spans=spans))
        )
        assert all(seen) != spans and seen
    assert records[True] == records[False]


def test_a_decoding_records_the_spans_it_can_reach_before_its_first_pass(monkeypatch):
    """Under a capture that records (the replay stand-in), the prefill records every span from the prompt's to
    the one its budget can reach, and no pass after it records another; none past that budget."""
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, Replayed)
    monkeypatch.setattr(fixed, "SPAN", 16)
    lm = tiny_model("llama")
    recorded = []
    record = fixed.FixedStep.record

    def noting(self, spans):
        recorded.append((self, list(spans)))
        record(self, spans)

    monkeypatch.setattr(fixed.FixedStep, "record", noting)
    output(lm, PROMPTS[0], request(Method.LOOKAHEAD, max_new_tokens=20), Runtime(mode=StepMode.FIXED))
    step, spans = recorded[-1]
    shape = step.shape
    assert spans == list(range(48, 64 + 1, 16))  # 23 + 21 rows -> 48; 23 + 20 committed + 21 rows -> 64
    assert sorted(step.runs) == spans and max(spans) < shape.capacity + shape.rows


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_span_short_of_the_rows_written_is_caught(monkeypatch):
    """Negative control: a pass reading one SPAN less than the rows it wrote leaves generate (plain decoding's one
    row then sees the committed positions without itself; a guess's row that misses its ancestors is mostly
    rejected, so lookahead on a random model may stay exact)."""
    span_for = fixed.span_for
    monkeypatch.setattr(fixed, "span_for", lambda length, shape: max(fixed.SPAN, span_for(length, shape) - fixed.SPAN))
    monkeypatch.setattr(fixed, "SPAN", 16)
    lm = tiny_model("llama")
    differ = [
        output(lm, prompt, request(Method.GREEDY), Runtime(mode=StepMode.FIXED))
        != greedy_reference(lm.model, prompt, MAX_NEW_TOKENS, None)
        for prompt in PROMPTS
    ]
    assert all(differ)


def test_the_copy_down_index_has_one_length_for_every_step(monkeypatch):
    lm = tiny_model("llama")
    fixed.chosen_mode(lm.model, StepMode.FIXED)  # the mode's probe (a 1-row shape of its own) runs before the spy
    lengths = set()
    copy_down = fixed.FixedStep.kept_rows_down

    def noting(self):
        lengths.add(tuple(self.sources.shape))
        copy_down(self)

    monkeypatch.setattr(fixed.FixedStep, "kept_rows_down", noting)
    output(lm, PROMPTS[2], request(Method.LOOKAHEAD), Runtime(mode=StepMode.FIXED))
    assert lengths == {(1 + SETTINGS.window + SETTINGS.ngram - 3,)}


# ----------------------------------------------------------------------------------------------
# Modes: the default, what was asked, and the fallbacks


def test_the_cpu_default_is_the_eager_step_and_a_capture_asked_for_runs_uncaptured():
    lm = dataclasses.replace(tiny_model("llama"), tokenizer=CharTokenizer())
    assert fixed.chosen_mode(lm.model, None) == (StepMode.EAGER, "")
    mode, note = fixed.chosen_mode(lm.model, StepMode.CUDA_GRAPH)
    assert mode == StepMode.FIXED and "cuda-graph needs a CUDA device, this is cpu" in note
    run = record_run(lm, PROMPTS[0], request(Method.LOOKAHEAD), Runtime(mode=StepMode.COMPILED))
    assert run.trace.meta.mode == run.greedy.meta.mode == StepMode.FIXED
    assert "compiled needs a CUDA device" in run.trace.meta.mode_note


def test_a_cuda_model_defaults_to_the_cuda_graph_and_every_other_device_to_the_eager_step():
    on = lambda device: type("Placed", (), {"device": torch.device(device)})()  # noqa: E731 - only its device is asked
    assert fixed.default_mode(tiny_model("llama").model) == StepMode.EAGER
    assert [fixed.default_mode(on(device)) for device in ("cpu", "mps", "cuda:0")] == [
        StepMode.EAGER,
        StepMode.EAGER,
        StepMode.CUDA_GRAPH,
    ]


def failing_capture(function):
    """A capture that cannot be recorded (as a CUDA graph of an op that syncs the host would fail)."""

    def recorded():
        raise RuntimeError("operation not permitted when stream is capturing\nmore lines")

    return recorded


def test_a_step_that_fails_its_probe_sends_the_run_to_the_eager_step_and_says_why(monkeypatch):
    lm = dataclasses.replace(tiny_model("llama", seed=7), tokenizer=CharTokenizer())
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, failing_capture)
    mode, note = fixed.chosen_mode(lm.model, StepMode.FIXED)
    assert mode == StepMode.EAGER
    assert (
        note == "the fixed step failed on this model (RuntimeError: operation not permitted when stream is "
        "capturing): it ran eagerly"
    )
    trace = record_trace(lm, PROMPTS[0], request(Method.LOOKAHEAD), Runtime(mode=StepMode.FIXED))
    assert trace.meta.mode == StepMode.EAGER and trace.meta.mode_note == note
    assert trace.summary.new_token_ids == greedy_reference(lm.model, PROMPTS[0], MAX_NEW_TOKENS, None)
    assert fixed.STEPS.get(lm.model) is None, "the failed probe left no buffers, and no run took any"
    monkeypatch.undo()  # negative control: the same model with a capture that works keeps the fixed step
    other = tiny_model("llama", seed=7).model
    assert fixed.chosen_mode(other, StepMode.FIXED) == (StepMode.FIXED, "")


def misreplayed(function):
    """A capture that records but replays wrong (as a graph reading weights that have moved would): its argmax is
    off by one."""

    def replayed():
        outputs = function()
        return outputs if outputs is None else (outputs[0], outputs[1] + 1, outputs[2])

    return replayed


def test_a_capture_that_replays_a_token_the_eager_step_does_not_fails_its_probe(monkeypatch):
    lm = tiny_model("llama", seed=8)
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, misreplayed)
    mode, note = fixed.chosen_mode(lm.model, StepMode.FIXED)
    assert mode == StepMode.EAGER and "differed from the eager step's" in note


def probe_pass(logits: list[float], token: int | None = None) -> Pass:
    row = torch.tensor([logits])
    return Pass(argmax=[int(row.argmax()) if token is None else token], logits=row, seconds=0.0)


def test_a_half_precision_probe_agrees_within_rounding_and_a_float32_one_only_on_its_token():
    """What the H200 showed in bfloat16: the probe's top two logits 0.375 apart, the fixed pass 0.375 off, the tie
    broken the other way. Rounding by shape is forgiven in half precision; float32 is exact and forgives nothing."""
    eager = probe_pass([25.0, 24.625, 3.0])
    tie_broken = probe_pass([24.75, 25.0, 3.0])
    assert fixed.disagreement(tie_broken, eager, torch.bfloat16) == ""
    assert fixed.disagreement(tie_broken, eager, torch.float16) == ""
    assert "its token 1 differed" in fixed.disagreement(tie_broken, eager, torch.float32)
    replayed_wrong = probe_pass([3.0, 24.625, 25.0])  # logits apart by their own size: another input's pass
    assert "logits differed" in fixed.disagreement(replayed_wrong, eager, torch.bfloat16)
    read_wrong = probe_pass([25.0, 24.625, 3.0], token=2)  # the right logits, a token far from the best read back
    assert "fell 22 short" in fixed.disagreement(read_wrong, eager, torch.bfloat16)


def test_a_bfloat16_model_keeps_its_fixed_step_and_a_wrong_replay_still_fails_its_probe(monkeypatch):
    lm = tiny_model("llama", seed=8)
    lm.model.to(torch.bfloat16)
    assert fixed.chosen_mode(lm.model, StepMode.FIXED) == (StepMode.FIXED, "")
    other = tiny_model("llama", seed=9).model.to(torch.bfloat16)  # negative control: a replay one token off
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, misreplayed)
    mode, note = fixed.chosen_mode(other, StepMode.FIXED)
    assert mode == StepMode.EAGER and "short of the eager step's best" in note


def test_a_model_the_fixed_step_cannot_drive_falls_back_to_the_eager_step_and_says_why():
    """BLOOM's ALiBi biases are counted along the mask: plain decoding runs it eagerly (lookahead refuses it)."""
    family = next(f for f in families.FAMILIES if f.model_type == "bloom")
    lm = dataclasses.replace(families.tiny_model(family), tokenizer=CharTokenizer())
    mode, note = fixed.chosen_mode(lm.model, StepMode.FIXED)
    assert mode == StepMode.EAGER and "ALiBi" in note and "ran eagerly" in note
    trace = record_trace(lm, PROMPTS[0], request(Method.GREEDY), Runtime(mode=StepMode.FIXED))
    assert trace.meta.mode == StepMode.EAGER and trace.meta.mode_note == note
    assert trace.summary.new_token_ids == greedy_reference(lm.model, PROMPTS[0], MAX_NEW_TOKENS, None)
    assert fixed.STEPS.get(lm.model) is None, "no fixed-shape buffers were made for it"


SLIDING_FAMILIES = ["mistral", "gemma3_text", "cohere2"]  # every layer sliding; hybrids of both kinds


@pytest.mark.heavy
@pytest.mark.parametrize("model_type", [*SLIDING_FAMILIES, "gpt_neox", "opt"])
def test_more_families_are_exact_in_the_fixed_step_past_a_sliding_window(model_type):
    """The family sweep's tiny models (lab/tools/families.py), 24 + 100 tokens past a window of 16, plain and
    lookahead."""
    family = next(f for f in families.FAMILIES if f.model_type == model_type)
    lm = families.tiny_model(family)
    prompt = families.sweep_prompt(family.name)
    reference = families.greedy_reference(lm.model, prompt, families.NEW_TOKENS)
    runtime = Runtime(mode=StepMode.FIXED)
    for method in (Method.GREEDY, Method.LOOKAHEAD):
        req = DecodeRequest(method=method, lookahead=families.SETTINGS[1], max_new_tokens=families.NEW_TOKENS)
        assert output(lm, prompt, req, runtime) == reference, method
    assert fixed.STEPS.get(lm.model)


@pytest.mark.heavy
def test_a_sliding_layer_that_sees_too_far_is_caught(monkeypatch):
    """Negative control: with the sliding layers given the full layers' mask, the sliding families leave generate."""

    def full_everywhere(self, positions, span):
        attention = self.attention
        self.attention = dataclasses.replace(attention, window=10**9)
        try:
            return masks(self, positions, span)
        finally:
            self.attention = attention

    masks = fixed.FixedStep.masks
    monkeypatch.setattr(fixed.FixedStep, "masks", full_everywhere)
    differ = []
    for model_type in SLIDING_FAMILIES:
        family = next(f for f in families.FAMILIES if f.model_type == model_type)
        lm = families.tiny_model(family)
        prompt = families.sweep_prompt(family.name)
        reference = families.greedy_reference(lm.model, prompt, families.NEW_TOKENS)
        req = DecodeRequest(method=Method.GREEDY, max_new_tokens=families.NEW_TOKENS)
        differ.append(output(lm, prompt, req, Runtime(mode=StepMode.FIXED)) != reference)
    assert all(differ)


def test_the_warm_up_runs_every_shape_the_request_will_run(monkeypatch):
    """A budget past the smallest bucket: the warm-up's 8 tokens still take the timed run's cache bucket."""
    lm = tiny_model("llama")
    shapes: list = []
    monkeypatch.setattr(fixed, "acquired", spy(fixed.acquired, shapes))
    monkeypatch.setattr(fixed, "SMALLEST_BUCKET", 32)
    runtime = Runtime(mode=StepMode.FIXED)
    req = request(Method.LOOKAHEAD, max_new_tokens=60)
    warm_up(lm, PROMPTS[1], req, runtime, [Method.LOOKAHEAD, Method.GREEDY])
    warmed = set(shapes)
    assert {s.capacity for s in warmed} == {128}, "11 + 60 tokens, and the copy-down's reach: not 32's bucket"
    output(lm, PROMPTS[1], req, runtime)
    output(lm, PROMPTS[1], dataclasses.replace(req, method=Method.GREEDY), runtime)
    assert set(shapes) == warmed
    progress = list(warming_up(lm, [40, 41] * 20, req, runtime, [Method.LOOKAHEAD], 1, 1))  # 1, 1, 2, 3, 6 tokens
    assert progress[-1].tokens == progress[-1].max_new_tokens == WARM_UP_TOKENS, "8 of 8, though 13 were committed"


def test_a_bench_warms_up_each_bucket_its_prompts_take(monkeypatch):
    """Prompts of 11, 23 and 37 tokens with 30 new: buckets 64, 64 and 128; the eager step has none to warm."""
    lm = tiny_model("llama")
    monkeypatch.setattr(fixed, "SMALLEST_BUCKET", 64)
    prompts = [PROMPTS[1], PROMPTS[0], PROMPTS[2]]
    methods = [Method.LOOKAHEAD, Method.GREEDY]
    fixed_step = Runtime(mode=StepMode.FIXED)
    assert warm_up_prompts(lm, prompts, request(Method.LOOKAHEAD), fixed_step, methods) == [PROMPTS[1], PROMPTS[2]]
    assert warm_up_prompts(lm, prompts, request(Method.LOOKAHEAD), Runtime(), methods) == [PROMPTS[1]]


class Replayed:
    """A CPU stand-in for a CUDA graph: the first call runs the function capture.WARM_UP_RUNS times more first, as
    capture.Graphed's warm-up does (a function that is not safe to run again shows it here); its outputs are the
    only outputs there are, and every later call writes its results into them, as a replay overwrites the graph's
    own tensors."""

    def __init__(self, function) -> None:
        self.function, self.outputs, self.recorded = function, None, False

    def __call__(self):
        if not self.recorded:
            self.recorded = True
            for _ in range(capture.WARM_UP_RUNS):
                self.function()
        results = self.function()
        if self.outputs is None:
            self.outputs = results
        elif results is not None:
            for kept, fresh in zip(self.outputs, results, strict=True):
                if kept is not None:
                    kept.copy_(fresh)
        return self.outputs


@pytest.mark.heavy
def test_every_method_is_exact_when_each_replay_overwrites_the_last_outputs(monkeypatch):
    """What a caller keeps of a pass (the argmax read back, the hidden states cloned, the logits used before the next
    pass) survives the next replay's writing over the captured outputs."""
    lm = tiny_model("llama")
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, Replayed)
    runtime = dataclasses.replace(tiny_runtime(lm, "llama"), mode=StepMode.FIXED)
    sampled = SamplingConfig(temperature=0.8, top_k=20, seed=7)
    for method in Method:
        reference = greedy_reference(lm.model, PROMPTS[0], MAX_NEW_TOKENS, None)
        assert output(lm, PROMPTS[0], request(method), runtime) == reference, method
        eager = dataclasses.replace(runtime, mode=StepMode.EAGER)
        same = output(lm, PROMPTS[0], request(method, sampling=sampled), eager)
        assert output(lm, PROMPTS[0], request(method, sampling=sampled), runtime) == same, method
    steps = [step for held in fixed.STEPS[lm.model].values() for step in held]
    assert len(steps) == len(Method)
    assert all(s.runs and all(isinstance(r, Replayed) and r.outputs for r in s.runs.values()) for s in steps)


def exact_with_fresh_replays(lm, runtime: Runtime, seed: int = 1) -> list[bool]:
    """Whether Medusa's and lookahead's outputs equal `generate`'s on 12 random prompts each, every decoding on
    fresh steps (so each records its copy-down anew)."""
    rng, exact = random.Random(seed), []
    for method in (Method.MEDUSA, Method.LOOKAHEAD):
        for _ in range(12):
            prompt = [rng.randrange(3, 60) for _ in range(rng.randrange(5, 30))]
            fixed.STEPS.pop(lm.model, None)
            wanted = greedy_reference(lm.model, prompt, MAX_NEW_TOKENS, None)
            exact.append(output(lm, prompt, request(method), runtime) == wanted)
    return exact


@pytest.mark.heavy
def test_the_copy_down_is_recorded_where_its_warm_up_runs_move_nothing(monkeypatch):
    """A copy-down run twice moves rows it already moved, and a capture runs a function several times before it
    records it (capture.WARM_UP_RUNS): so the copy-down is recorded at the first load, copying rows onto themselves.
    Negative control: recorded at a decoding's first real copy-down instead, some outputs leave `generate`'s."""
    lm = tiny_model("llama")
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, Replayed)
    runtime = dataclasses.replace(tiny_runtime(lm, "llama"), mode=StepMode.FIXED)
    assert all(exact_with_fresh_replays(lm, runtime))
    load = fixed.FixedStep.load

    def recorded_later(self, dynamic, length):
        first = self.cache is None
        load(self, dynamic, length)
        if first:
            self.copy_down.recorded = False  # its recording (and warm-up runs) left to the first real copy-down

    monkeypatch.setattr(fixed.FixedStep, "load", recorded_later)
    assert not all(exact_with_fresh_replays(lm, runtime))


# ----------------------------------------------------------------------------------------------
# Traceable: the step under torch.compile


# The tests that compile take a one-layer tiny model: dynamo traces every layer, each the same code; that the layers'
# caches are kept apart is checked by the fixed step's tests above and on the real model below. With two layers, the
# three tests took 30 s alone; with one, 21 s (the 2-core AMD EPYC (Zen 3), 2026-12-07).
def compiled_with(backend: str):
    """The compiled mode's own wrapper (capture.compiled) with a backend that runs on this CPU. A test that puts it
    in the fixed mode's place also reads the whole cache in every pass, as the compiled mode does (`one_span`)."""
    return partial(capture.compiled, backend=backend, graph=False)


def one_span(monkeypatch) -> None:
    """Every pass of the fixed mode reads the whole cache, as the compiled mode's do (a span apart is a compile)."""
    monkeypatch.setattr(fixed, "SPAN", 1 << 30)


# aot_eager traces what eager does and more; eager alone (29 s in make test on the 2-core AMD CPU) is make test-slow's
@pytest.mark.heavy
@pytest.mark.parametrize("backend", slow_but(["eager", "aot_eager"], "aot_eager"))
def test_the_step_compiled_whole_gives_the_uncompiled_steps_records(backend, monkeypatch):
    """fullgraph=True: the pass and the copy-down trace with no graph break (no host read inside)."""
    lm = tiny_model("llama", layers=1)
    runtime = dataclasses.replace(tiny_runtime(lm, "llama"), mode=StepMode.FIXED)
    one_span(monkeypatch)  # both read the whole cache: a pass over fewer columns rounds apart in the last bits
    uncompiled = {m: untimed(decode_steps(lm, PROMPTS[0], request(m), runtime)) for m in Method}
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, compiled_with(backend))
    for method in Method:
        assert untimed(decode_steps(lm, PROMPTS[0], request(method), runtime)) == uncompiled[method], method
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] > len(Method), "a pass per shape, and copy-downs"


@pytest.mark.heavy
def test_inductor_gives_generates_tokens():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("inductor compiles C++ on a CPU and no C compiler is installed")
    lm = tiny_model("llama", layers=2)
    torch._dynamo.reset()
    shape = fixed.shape_for(SETTINGS.tokens_per_step, 4, 100)
    step = fixed.FixedPasses(lm.model, shape, compiled_with("inductor"), spans=False)
    reference = greedy_reference(lm.model, PROMPTS[0], MAX_NEW_TOKENS, None)
    decoder = guessing_decoder(lm.model, PROMPTS[0], request(Method.LOOKAHEAD), Runtime(), frozenset(), step)
    assert summarize(list(decoder.steps())).new_token_ids == reference


@pytest.mark.heavy
def test_no_prompt_length_recompiles_and_a_second_bucket_is_caught(monkeypatch):
    lm = tiny_model("llama", layers=1)
    torch._dynamo.reset()
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, compiled_with("eager"))
    one_span(monkeypatch)
    monkeypatch.setattr(fixed, "SMALLEST_BUCKET", 128)  # every length below in one bucket, 250 tokens in the next
    runtime = Runtime(mode=StepMode.FIXED)
    output(lm, PROMPTS[0], request(Method.LOOKAHEAD), runtime)
    with torch.compiler.set_stance("fail_on_recompile"):
        for length in (3, 11, 37):
            output(lm, ([7, 8, 9, 10] * 10)[:length], request(Method.LOOKAHEAD), runtime)
        with pytest.raises(RuntimeError, match="[Rr]ecompil"):
            output(lm, PROMPTS[0], request(Method.LOOKAHEAD, max_new_tokens=200), runtime)  # the 256 bucket


@pytest.mark.heavy
def test_more_shapes_than_dynamos_recompile_limit_all_compile(monkeypatch):
    """Four lookahead windows, four shapes of one code, under a recompile limit of 2 (dynamo's own is 8; ten shapes
    took a minute of make test): the compiled mode's wrapper compiles them all, where a plain
    torch.compile(fullgraph=True) fails at the third (negative control). The limit is set by dynamo's own patch:
    monkeypatch's undo hid the setting from the worker's later tests."""
    lm = tiny_model("llama", layers=1)
    runtime = Runtime(mode=StepMode.FIXED)
    requests = [DecodeRequest(lookahead=LookaheadConfig(w, 3, 2), max_new_tokens=6) for w in range(1, 5)]
    one_span(monkeypatch)
    with torch._dynamo.config.patch(recompile_limit=2):
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, compiled_with("eager"))
        for req in requests:
            output(lm, PROMPTS[0], req, runtime)
        assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= len(requests) + 1
        torch._dynamo.reset()
        plain = partial(torch.compile, backend="eager", fullgraph=True, dynamic=False)
        monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, plain)
        with pytest.raises(torch._dynamo.exc.FailOnRecompileLimitHit):
            for req in requests:
                output(tiny_model("llama", layers=1), PROMPTS[0], req, runtime)


# ----------------------------------------------------------------------------------------------
# The real model


def test_the_fixed_step_equals_generate_on_the_real_model(default_model):
    """Every method, 16 tokens: the shipped EAGLE layer and Medusa heads (a 16-node tree), the bf16 self-draft."""
    lm = default_model
    prompt = lm.tokenizer.encode("def fibonacci(n):\n    if n < 2:\n        return n\n")
    reference = greedy_reference(lm.model, prompt, 16, None)
    heads = make_medusa(load_heads(SHIPPED_HEADS, lm.model, lm.name), 16)
    draft = make_draft(lm, "bf16-self", 3)
    runtime = Runtime(mode=StepMode.FIXED, layer=eagle_draft(lm), heads=heads, draft=draft)
    for method in Method:
        assert output(lm, prompt, request(method, max_new_tokens=16), runtime) == reference, method


def test_the_static_cache_says_how_many_positions_are_committed():
    """A model that asks its cache for the sequence length (to place rows, to pick a rotary scaling) gets L."""
    lm = tiny_model("llama")
    passes = fixed.FixedPasses(lm.model, fixed.shape_for(5, 4, 60), capture.as_it_is)
    passes.prefill(PROMPTS[1])
    passes.tree(PROMPTS[1][:3], chain_layout(3), None)
    passes.keep((1, 2))
    assert int(passes.step.cache.get_seq_length()) == len(PROMPTS[1]) + 3 == passes.length
    passes.release()
    assert passes.step is None


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_race_and_a_bench_report_say_which_mode_ran(tiny_lm):
    """Every record the lab writes of this engine's decoding keeps the mode: a race, a bench report's settings (and
    a Run's traces, above); each reads back as it was written."""
    runtime = Runtime(draft=tiny_draft("llama"), mode=StepMode.CUDA_GRAPH)  # no CUDA here: the fixed step runs
    raced = race(tiny_lm, PROMPTS[0], request(Method.LOOKAHEAD), runtime, StepCosts.of(cost_table(0.1)))
    assert raced.mode == StepMode.FIXED and "needs a CUDA device" in raced.mode_note
    assert RaceRecord.from_json(raced.to_json()) == raced
    methods = [BenchMethod.GREEDY, BenchMethod.LOOKAHEAD]
    settings = bench_settings(tiny_lm, methods, BenchMethod.GREEDY, request(Method.LOOKAHEAD), runtime, ("x", 1))
    assert (settings.mode, settings.mode_note) == (raced.mode, raced.mode_note)
    eager = bench_settings(tiny_lm, methods, BenchMethod.GREEDY, request(Method.LOOKAHEAD), Runtime(), ("x", 1))
    assert (eager.mode, eager.mode_note) == (StepMode.EAGER, "")


def test_the_replay_stand_in_overwrites_what_a_careless_caller_keeps():
    """Negative control for the test above: a pass's logits kept uncloned are another pass's after the next replay."""
    lm = tiny_model("llama")
    passes = fixed.FixedPasses(lm.model, fixed.shape_for(4, 3, 60), Replayed)
    passes.prefill(PROMPTS[1])
    first = passes.tree(PROMPTS[1][:4], chain_layout(4), None)
    kept = first.logits.clone()
    passes.keep(())
    passes.tree(PROMPTS[1][4:8], chain_layout(4), None)
    assert not torch.equal(first.logits, kept)
    passes.release()


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
@pytest.mark.parametrize("released", [True, False])
def test_a_model_is_let_go_after_its_fixed_shape_decodings(released, monkeypatch):
    """The shapes' buffers are kept beside the model, not in it: once its decodings are over nothing of the engine
    holds it. Negative control: a step that kept the model after its decoding would keep it alive."""
    if not released:
        monkeypatch.setattr(fixed.FixedPasses, "release", lambda self: None)
    lm = tiny_model("llama")
    output(lm, PROMPTS[0], request(Method.LOOKAHEAD), Runtime(mode=StepMode.FIXED))
    model = weakref.ref(lm.model)
    del lm
    gc.collect()
    assert (model() is None) == released


def test_the_step_cost_curve_is_measured_in_the_mode_that_runs_and_kept_apart(tmp_path, monkeypatch):
    """The eager step on a GPU is flat (launch overhead), a captured one pays for its rows (on an H200 a captured
    121-row lookahead step took 7.1-8.6 ms whole, plain decoding's 4.2): auto settings from the eager curve would
    be too wide for it. On a CPU a captured mode runs the fixed step, and its curve is that step's,
    measured on steps of its own (none kept beside the model); the eager curve (the CPU's default) is measured by
    the eager passes and cached under its own name."""
    from lookahead_core import costs

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    lm = tiny_model("llama")
    modes = []
    real = costs.capture_for
    monkeypatch.setattr(costs, "capture_for", lambda mode: modes.append(mode) or real(mode))
    settled = costs.settled_mode(lm, StepMode.CUDA_GRAPH)
    curve = settled.costs
    assert settled.mode == StepMode.FIXED and "needs a CUDA device" in settled.note
    assert modes == [StepMode.FIXED] * len(costs.SIZES) and curve.sizes == list(costs.SIZES)
    assert min(curve.seconds) > 0
    assert costs.costs_path(lm, StepMode.FIXED).exists() and not costs.costs_path(lm).exists()
    assert fixed.STEPS.get(lm.model) is None, "the curve's steps were its own, freed with it"
    eager = costs.settled_mode(lm)
    assert eager.mode == StepMode.EAGER and not costs.costs_path(lm).exists(), "measured when first asked for"
    assert eager.costs.sizes == list(costs.SIZES)
    assert len(modes) == len(costs.SIZES) and costs.costs_path(lm).exists()


def test_a_runtime_widens_on_the_curve_of_a_fixed_shape_mode_and_the_eager_step_takes_none(tmp_path, monkeypatch):
    from lookahead_core import costs

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    lm = tiny_model("llama")
    widened = costs.settled_mode(lm, StepMode.CUDA_GRAPH).shape_costs  # on a CPU: the fixed step, uncaptured
    assert widened == costs.step_costs(lm, StepMode.FIXED) and costs.costs_path(lm, StepMode.FIXED).exists()
    assert costs.settled_mode(lm, StepMode.EAGER).shape_costs is None
    assert costs.settled_mode(lm).shape_costs is None, "a CPU's default step is eager"
    assert not costs.costs_path(lm).exists(), "the eager step measures no curve for a shape it does not have"


def test_a_mode_whose_wider_shape_fails_in_the_curve_sends_runs_eager_and_the_curve_is_the_eager_ones(
    tmp_path, monkeypatch
):
    """The probe tries one row; the curve's wider shapes can still fail (memory, an op a capture refuses): the
    failure is kept as the mode's, later runs go eager saying why, and the curve returned is the eager one."""
    from lookahead_core import costs

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    lm = dataclasses.replace(tiny_model("llama", seed=11), tokenizer=CharTokenizer())
    assert fixed.chosen_mode(lm.model, StepMode.FIXED) == (StepMode.FIXED, "")  # its probe passed
    real = fixed.FixedStep.forward

    def refusing(self, span):
        if self.shape.rows > 8:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(self, span)

    monkeypatch.setattr(fixed.FixedStep, "forward", refusing)
    settled = costs.settled_mode(lm, StepMode.FIXED)
    assert settled.mode == StepMode.EAGER and "OutOfMemoryError: CUDA out of memory" in settled.note
    assert settled.costs.sizes == list(costs.SIZES)
    assert costs.costs_path(lm).exists() and not costs.costs_path(lm, StepMode.FIXED).exists()
    mode, note = fixed.chosen_mode(lm.model, StepMode.FIXED)
    assert (mode, note) == (settled.mode, settled.note) and "ran eagerly" in note
    trace = record_trace(lm, PROMPTS[0], request(Method.GREEDY), Runtime(mode=StepMode.FIXED))
    assert (trace.meta.mode, trace.meta.mode_note) == (StepMode.EAGER, note)


# ----------------------------------------------------------------------------------------------
# The captured step's prefill: the prompt through its own passes


def captured_prefill_runs(lm, monkeypatch) -> list[int]:
    """The fixed step wrapped by a stand-in capture (so its prefill may go through its passes); the prompt lengths
    that did (`chunked`)."""
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, lambda function: partial(function))
    chunked, through = [], fixed.FixedPasses.chunked

    def noted(self, prompt_ids, hidden):
        chunked.append(len(prompt_ids))
        return through(self, prompt_ids, hidden)

    monkeypatch.setattr(fixed.FixedPasses, "chunked", noted)
    return chunked


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_captured_step_takes_the_prompt_through_its_passes_with_generates_tokens_and_cache(monkeypatch):
    """Every method, each prompt twice (the first decoding of a shape makes its buffers with the eager prefill):
    where a prompt fits CHUNKED_PREFILL passes it goes through them, and the outputs and the committed cache are a
    plain run's."""
    lm = tiny_model("llama")
    chunked = captured_prefill_runs(lm, monkeypatch)
    runtime = dataclasses.replace(tiny_runtime(lm, "llama"), mode=StepMode.FIXED)
    for prompt in PROMPTS:
        reference = greedy_reference(lm.model, prompt, MAX_NEW_TOKENS, None)
        for method in Method:
            for _ in range(2):
                assert output(lm, prompt, request(method), runtime) == reference, f"{method} on {prompt}"
    rows = SETTINGS.tokens_per_step
    assert {n for n in chunked} == set(map(len, PROMPTS)) and max(len(p) for p in PROMPTS) > rows  # 2 passes
    assert_committed_cache_is_a_plain_runs(lm, PROMPTS[2])


def assert_committed_cache_is_a_plain_runs(lm, prompt: list[int]) -> None:
    runtime = Runtime(mode=StepMode.FIXED)
    tokens = output(lm, prompt, request(Method.LOOKAHEAD), runtime)
    step = next(s for (shape, _), held in fixed.STEPS[lm.model].items() if shape.rows > 1 for s in held)
    length = int(step.length)
    plain, _ = prefill(lm.model, (prompt + tokens)[:length])
    for layer, reference in zip(step.cache.layers, plain.layers, strict=True):
        torch.testing.assert_close(layer.keys[:, :, :length], reference.keys, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(layer.values[:, :, :length], reference.values, rtol=1e-5, atol=1e-5)


def test_a_prefill_chunk_that_is_not_a_causal_chain_is_caught(monkeypatch):
    """Negative control: each chunk's rows seeing only themselves, not the rows before them."""
    lm = tiny_model("llama")
    chunked = captured_prefill_runs(lm, monkeypatch)
    runtime = Runtime(mode=StepMode.FIXED)
    output(lm, PROMPTS[2], request(Method.LOOKAHEAD), runtime)  # the buffers made, by the eager prefill
    monkeypatch.setattr(fixed, "chain_layout", lambda size: tree_layout((-1,) * size))
    with pytest.raises(AssertionError):
        assert_committed_cache_is_a_plain_runs(lm, PROMPTS[2])
    assert chunked


@pytest.mark.parametrize("length", [1, 4, 5, 10, 12])
def test_a_chunked_prefill_gives_the_eager_prefills_pass_hidden_states_included(length, monkeypatch):
    """The prefill's contract (forward.Passes): the last row's argmax and logits, every prompt row's hidden states
    (EAGLE's and Medusa's drafts read them; their tokens stay exact even with wrong ones, so checked here)."""
    lm = tiny_model("llama")
    chunked = captured_prefill_runs(lm, monkeypatch)
    shape = fixed.shape_for(4, 3, 64, hidden=True)
    prompt = ([5, 6, 7, 8, 9, 3, 1] * 2)[:length]
    passes = fixed.FixedPasses(lm.model, shape, capture.CAPTURES[StepMode.FIXED])
    passes.prefill(PROMPTS[1], hidden=True)  # the shape's buffers made (eagerly)
    passes.release()
    got = passes.prefill(prompt, hidden=True)
    passes.release()
    _, wanted = prefill(lm.model, prompt, hidden=True)
    assert chunked == [length] and got.argmax == wanted.argmax
    torch.testing.assert_close(got.logits, wanted.logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.hidden, wanted.hidden, rtol=1e-5, atol=1e-5)
