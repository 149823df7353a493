"""Working state on the device (lookahead_core/working_state.py and each method's methods/*_on_device.py), run here
as torch ops on the CPU.

The pool's inserts made at once equal the host pool's made one at a time, entry for entry, in recency order, with
each entry's preceding token, over random batches that collide, evict and insert again (and a tempting batch rule
ends apart from the host pool on them); prompt lookup's matches on the device are lookup.find_matches' on random
sequences that repeat (and a step that offers one continuation twice is caught). A timed lane's greedy lookahead,
prompt lookup, Medusa and EAGLE in the fixed-shape step run their steps on the device (lookahead after its warm-up,
EAGLE after its first step), and their tallies equal the recorded step's records (rows fed, tokens committed,
verified, accepted, stop) and the host-state lean step's, on tiny models and on the real one, through EOS and the
budget; the output equals `generate`; EAGLE's every drafted chain equals the host's. The device step traces whole
under torch.compile (fullgraph: no host read inside) and survives a replay that overwrites its outputs. Negative
controls: a lookahead step that misses the output's first fresh n-gram or takes its Jacobi update from the level
below, a Medusa step whose heads read c's row's hidden state, and EAGLE steps drafting from the wrong state (the
host's cache not carried, a drafted row one position late, a row seeing the column after it, c's row's features
fed) are caught by the same comparisons.
"""

from __future__ import annotations

import dataclasses
import random
from functools import partial
from types import SimpleNamespace

import pytest
import torch

from lab.measure.datasets import encode_item, load_prompts
from lab.train.heads import SHIPPED_HEADS, SHIPPED_LABEL, eagle_draft
from lookahead_core import working_state
from lookahead_core.config import LookaheadConfig, LookupConfig
from lookahead_core.device import capture
from lookahead_core.device.fixed import Shape
from lookahead_core.methods import lookahead_on_device, lookup_on_device
from lookahead_core.methods.draft import Draft
from lookahead_core.methods.eagle import EAGLE, eagle_for
from lookahead_core.methods.eagle_on_device import EagleOnDevice
from lookahead_core.methods.lookahead_on_device import NONE, LookaheadOnDevice, PoolTable
from lookahead_core.methods.lookup import find_matches
from lookahead_core.methods.lookup_on_device import PromptLookupOnDevice
from lookahead_core.methods.medusa import load_heads, make_medusa
from lookahead_core.methods.medusa_on_device import MedusaOnDevice
from lookahead_core.methods.pool import NGramPool
from lookahead_core.records import DraftRecord, GuessSource, Method, StepMode
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.trace import decode_steps, lean_steps
from lookahead_core.working_state import OnDeviceDecoder, PlainOnDevice, PlainPassesOnDevice

from .conftest import heavy_but
from .test_engine_tiny_models import greedy_reference
from .test_fixed_shape import Replayed, one_span
from .test_lean_path import decided
from .tiny import tiny_medusa, tiny_model

PROMPTS = [([5, 6, 7, 8, 9] * 8)[:23], [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5], ([40, 41] * 20)[:37]]
SETTINGS = [LookaheadConfig(4, 4, 3), LookaheadConfig(3, 3, 2), LookaheadConfig(7, 5, 7), LookaheadConfig(1, 3, 1)]
LOOKUPS = [LookupConfig(2, 4, 2), LookupConfig(3, 10, 6), LookupConfig(1, 1, 1), LookupConfig(4, 3, 5)]
FIXED = Runtime(mode=StepMode.FIXED)


# ----------------------------------------------------------------------------------------------
# The pool's table


def table_bucket(table: PoolTable, key: int) -> list[tuple[tuple[int, ...], int | None]]:
    """The table's entries under `key`, oldest first, as (continuation, preceding token or None)."""
    stamps = table.stamps[key].tolist()
    slots = sorted((stamp, slot) for slot, stamp in enumerate(stamps) if stamp > 0)
    return [
        (tuple(table.continuations[key, slot].tolist()), None if (p := table.previous[key, slot].item()) == NONE else p)
        for _, slot in slots
    ]


def host_bucket(pool: NGramPool, key: int) -> list[tuple[tuple[int, ...], int | None]]:
    return [(entry.continuation, entry.previous) for entry in pool.entries(key)]


def random_batches(seed: int):
    """A few batches of n-grams over 4 keys and a 3-token alphabet (collisions, evictions, re-insertions)."""
    rng = random.Random(seed)
    guesses, ngram = rng.randint(1, 3), rng.choice([2, 3])
    batches = []
    for _ in range(rng.randint(1, 4)):
        batches.append(
            [
                (rng.randrange(4), tuple(rng.randrange(3) for _ in range(ngram - 1)), rng.choice([None, 0, 1, 2]))
                + (rng.random() < 0.85,)
                for _ in range(rng.randint(1, 10))
            ]
        )
    return guesses, ngram, batches


def inserted_apart(guesses: int, ngram: int, batches) -> tuple[NGramPool, PoolTable]:
    """The batches into a host pool one n-gram at a time and into a table a batch at a time."""
    pool, table = NGramPool(ngram, guesses), PoolTable.empty(4, guesses, ngram, torch.device("cpu"))
    for batch in batches:
        for key, continuation, previous, made in batch:
            if made:
                pool.insert(key, list(continuation), previous, GuessSource.OUTPUT)
        table.insert(
            torch.tensor([key for key, *_ in batch]),
            torch.tensor([continuation for _, continuation, *_ in batch]).view(len(batch), ngram - 1),
            torch.tensor([NONE if previous is None else previous for _, _, previous, _ in batch]),
            torch.tensor([made for *_, made in batch]),
        )
    return pool, table


def differing(seeds) -> list[int]:
    """The seeds whose table ends unlike the host pool under some key."""
    found = []
    for seed in seeds:
        pool, table = inserted_apart(*random_batches(seed))
        if any(table_bucket(table, key) != host_bucket(pool, key) for key in range(4)):
            found.append(seed)
    return found


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_the_pools_inserts_at_once_equal_the_host_pools_one_at_a_time():
    assert differing(range(600)) == []


def test_an_entry_pushed_out_and_inserted_again_in_one_step_is_a_fresh_entry():
    """G = 1: (7, 8) after 5, then (1, 1) pushes it out, then (7, 8) with no token before it comes back fresh: its
    preceding token is None, not the 5 an update in place would keep."""
    batch = [(0, (7, 8), 5, True), (0, (1, 1), 2, True), (0, (7, 8), None, True)]
    pool, table = inserted_apart(1, 3, [batch])
    assert table_bucket(table, 0) == host_bucket(pool, 0) == [((7, 8), None)]


def batch_rule_buckets(guesses: int, batches) -> dict[int, list]:
    """The tempting rule a batch insert might follow: within a batch nothing is pushed out, an item keeps the last
    preceding token given (else its own), and each key keeps its G newest items when the batch ends."""
    buckets: dict[int, dict] = {}
    time = 0
    for batch in batches:
        for key, continuation, previous, made in batch:
            if made:
                time += 1
                held = buckets.setdefault(key, {}).get(continuation, [0, None])
                buckets[key][continuation] = [time, held[1] if previous is None else previous]
        for bucket in buckets.values():
            for gone in sorted(bucket, key=lambda c: bucket[c][0])[:-guesses]:
                del bucket[gone]
    return {key: [(c, p) for c, (_, p) in sorted(b.items(), key=lambda i: i[1][0])] for key, b in buckets.items()}


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_the_random_batches_reach_what_a_batch_rule_gets_wrong():
    """Negative control: the random batches above include cases where the host pool and the tempting batch rule
    end apart, so the comparison would catch an insert that followed it."""
    apart = 0
    for seed in range(600):
        guesses, ngram, batches = random_batches(seed)
        pool, _ = inserted_apart(guesses, ngram, batches)
        rule = batch_rule_buckets(guesses, batches)
        apart += any(rule.get(key, []) != host_bucket(pool, key) for key in range(4))
    assert apart > 0


# ----------------------------------------------------------------------------------------------
# The step


@pytest.fixture
def device_steps(monkeypatch) -> list:
    """Counts the steps OnDeviceDecoder ran on the device, and plain decoding's device functions run (so a
    comparison below is not of two host steps)."""
    ran = []
    step, one = OnDeviceDecoder.device_step, PlainPassesOnDevice.one

    def counted(self, state):
        ran.append(self)
        return step(self, state)

    def passed(self, token):
        result = one(self, token)
        if self.state is not None:
            ran.append(self)
        return result

    monkeypatch.setattr(OnDeviceDecoder, "device_step", counted)
    monkeypatch.setattr(PlainPassesOnDevice, "one", passed)
    return ran


def lookahead(settings: LookaheadConfig, max_new_tokens: int = 30) -> DecodeRequest:
    return DecodeRequest(method=Method.LOOKAHEAD, lookahead=settings, max_new_tokens=max_new_tokens)


def medusa(max_new_tokens: int = 30) -> DecodeRequest:
    return DecodeRequest(method=Method.MEDUSA, max_new_tokens=max_new_tokens)


def lookup(settings: LookupConfig, max_new_tokens: int = 30) -> DecodeRequest:
    return DecodeRequest(method=Method.PROMPT_LOOKUP, lookup=settings, max_new_tokens=max_new_tokens)


def eagle(max_new_tokens: int = 30) -> DecodeRequest:
    return DecodeRequest(method=Method.EAGLE, max_new_tokens=max_new_tokens)


def tiny_layer(lm, tokens: int = 4, confidence: float = 0.0) -> Draft:
    """An untrained EAGLE layer for a tiny model, drafting `tokens` a step, its matrices drawn at unit variance
    (scaled by their fan-in): with the default init's small weights its drafts barely read its cache, and a wrong
    cache, position or mask drafted the same tokens."""
    layer, generator = eagle_for(lm.model, lm.name), torch.Generator().manual_seed(5)
    with torch.no_grad():
        for weight in (p for p in layer.parameters() if p.dim() == 2):
            weight.copy_(torch.randn(weight.shape, generator=generator) / weight.shape[1] ** 0.5)
    return Draft(layer, EAGLE, tokens, confidence)


def plain(max_new_tokens: int = 30) -> DecodeRequest:
    return DecodeRequest(method=Method.GREEDY, max_new_tokens=max_new_tokens)


def compared(lm, prompt, request, runtime=FIXED) -> tuple[list, list, list]:
    """The recorded step's records, the device step's tallies and the host-state lean step's, as decided."""
    recorded = [decided(s) for s in decode_steps(lm, prompt, request, runtime)]
    on_device = [decided(s) for s in lean_steps(lm, prompt, request, runtime)]
    on_host = [decided(s) for s in lean_steps(lm, prompt, request, dataclasses.replace(runtime, device_state=False))]
    return recorded, on_device, on_host


@pytest.mark.parametrize("settings", heavy_but(SETTINGS, SETTINGS[0]), ids=str)
def test_the_device_step_decides_what_the_recorded_step_records(settings, device_steps):
    lm = tiny_model("llama")
    accepted = 0
    for prompt in PROMPTS:
        recorded, on_device, on_host = compared(lm, prompt, lookahead(settings))
        assert on_device == recorded == on_host, prompt
        accepted += sum(step[-1] for step in on_device)
    assert device_steps and accepted > 0


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_the_device_steps_output_equals_generate_through_eos_and_the_budget(device_steps):
    lm = tiny_model("qwen2")
    for prompt in PROMPTS:
        reference = greedy_reference(lm.model, prompt, 40, None)
        eos = reference[25]  # a token the run meets, maybe inside an accepted block
        lm_eos = dataclasses.replace(lm, eos_ids=frozenset({eos}))
        for tokens, stop in ((40, None), (17, None), (40, eos)):
            run = lm_eos if stop is not None else lm
            steps = list(lean_steps(run, prompt, lookahead(LookaheadConfig(4, 4, 3), tokens), FIXED))
            wanted = greedy_reference(lm.model, prompt, tokens, stop)
            assert [t for s in steps for t in s.committed] == wanted, (prompt, tokens, stop)
            assert compared(run, prompt, lookahead(LookaheadConfig(4, 4, 3), tokens))[0] == [decided(s) for s in steps]
    assert device_steps


def one_late(output_ngrams):
    """A wrong reading of the output's fresh n-grams: the first one, across the old and the new tokens, missed."""

    def late(sequence, count, grown, ngram, span):
        keys, continuations, previous, made = output_ngrams(sequence, count, grown, ngram, span)
        return keys, continuations, previous, made & (torch.arange(span) > 0)

    return late


def level_below(init):
    """A wrong Jacobi update: the argmax of the level under the top one."""

    def below(self, step, config, vocabulary):
        init(self, step, config, vocabulary)
        self.top_rows = self.top_rows - config.window

    return below


@pytest.mark.parametrize(
    "wrong",
    [(lookahead_on_device, "output_ngrams", one_late), (LookaheadOnDevice, "__init__", level_below)],
    ids=["output n-grams one late", "update from the level below"],
)
def test_a_device_step_that_pools_or_updates_wrong_is_caught(wrong, monkeypatch):
    owner, name, mistake = wrong
    monkeypatch.setattr(owner, name, mistake(getattr(owner, name)))
    lm = tiny_model("llama")
    caught = [compared(lm, prompt, lookahead(LookaheadConfig(4, 4, 3)))[:2] for prompt in PROMPTS]
    assert any(recorded != on_device for recorded, on_device in caught)


@pytest.mark.parametrize(
    "wrapper",
    [Replayed, pytest.param(partial(capture.compiled, backend="aot_eager", graph=False), marks=pytest.mark.heavy)],
    ids=["replayed", "compiled whole"],
)
@pytest.mark.parametrize("method", [Method.GREEDY, Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.MEDUSA, Method.EAGLE])
def test_the_device_step_captures_whole(wrapper, method, monkeypatch, device_steps):
    """As a replay that overwrites its outputs, and through torch.compile with fullgraph (a host read inside, a
    .item() or a mask index, would break the graph and fail here; the passes read the whole cache, as the compiled
    mode's do), the device step decides the same steps."""
    one_span(monkeypatch)
    lm = tiny_model("llama", layers=1)  # traced once per layer: see tests/test_fixed_shape.compiled_with
    runtime = dataclasses.replace(FIXED, heads=tiny_medusa(lm), layer=tiny_layer(lm))
    request = {
        Method.LOOKAHEAD: lookahead(LookaheadConfig(4, 4, 3)),
        Method.PROMPT_LOOKUP: lookup(LOOKUPS[0]),
        Method.MEDUSA: medusa(),
        Method.EAGLE: eagle(),
    }.get(method, plain())
    wanted = [decided(s) for s in decode_steps(lm, PROMPTS[0], request, runtime)]
    torch._dynamo.reset()
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, wrapper)
    assert [decided(s) for s in lean_steps(lm, PROMPTS[0], request, runtime)] == wanted
    assert device_steps


# ----------------------------------------------------------------------------------------------
# Plain decoding's step on the device


@pytest.mark.heavy
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_plain_decodings_device_step_decides_what_the_recorded_step_records_through_eos_and_the_budget(
    family, device_steps
):
    lm = tiny_model(family)
    for prompt in PROMPTS:
        reference = greedy_reference(lm.model, prompt, 40, None)
        eos = reference[25]
        for tokens, stop in ((40, None), (17, None), (40, eos)):
            run = dataclasses.replace(lm, eos_ids=frozenset({eos})) if stop is not None else lm
            recorded, on_device, on_host = compared(run, prompt, plain(tokens))
            assert on_device == recorded == on_host, (prompt, tokens, stop)
            assert [t for step in on_device for t in step[3]] == greedy_reference(lm.model, prompt, tokens, stop)
    assert device_steps


def standing_still(settle):
    """A wrong plain step: L is not advanced, so the next pass writes over the row just kept."""

    def wrong(self):
        report = settle(self)
        self.step.length -= 1
        return report

    return wrong


def test_a_plain_step_that_does_not_advance_is_caught(monkeypatch):
    lm = tiny_model("llama")
    monkeypatch.setattr(PlainOnDevice, "settle", standing_still(PlainOnDevice.settle))
    caught = [compared(lm, prompt, plain())[:2] for prompt in PROMPTS]
    assert any(recorded != on_device for recorded, on_device in caught)


# ----------------------------------------------------------------------------------------------
# Medusa's step on the device


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
@pytest.mark.parametrize("size", [16, 5])
def test_medusas_device_step_decides_what_the_recorded_step_records(size, device_steps):
    lm = tiny_model("llama")
    runtime = dataclasses.replace(FIXED, heads=tiny_medusa(lm, size=size))
    accepted = 0
    for prompt in PROMPTS:
        recorded, on_device, on_host = compared(lm, prompt, medusa(), runtime)
        assert on_device == recorded == on_host, prompt
        accepted += sum(step[-1] for step in on_device)
    assert device_steps and accepted > 0


def from_row_zero(settle):
    """A wrong Medusa step: the heads read the hidden state of c's row, not of the last row kept."""

    def wrong(self):
        report = settle(self)
        self.hidden.copy_(self.step.states[0])
        self.propose()
        return report

    return wrong


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_medusa_step_that_reads_the_wrong_hidden_state_is_caught(monkeypatch):
    lm = tiny_model("llama")
    runtime = dataclasses.replace(FIXED, heads=tiny_medusa(lm))
    monkeypatch.setattr(MedusaOnDevice, "settle", from_row_zero(MedusaOnDevice.settle))
    caught = [compared(lm, prompt, medusa(), runtime)[:2] for prompt in PROMPTS]
    assert any(recorded != on_device for recorded, on_device in caught)


# ----------------------------------------------------------------------------------------------
# EAGLE's step on the device


@pytest.fixture
def eagle_chains(device_steps, monkeypatch) -> list:
    """The chain each of EAGLE's device steps verified (its first m tokens, as the pass was fed them), in order."""
    chains = []
    step = OnDeviceDecoder.device_step

    def read(self, state):
        if isinstance(state, EagleOnDevice):
            chains.append(state.step.ids[0, 1 : 1 + int(state.offered)].tolist())
        return step(self, state)

    monkeypatch.setattr(OnDeviceDecoder, "device_step", read)
    return chains


def eagle_compared(lm, prompt, request, runtime, chains: list) -> tuple[list, list, list, list]:
    """The recorded step's records and the device step's tallies, as decided; the chains the recorded steps after
    the first drafted (the first step drafts on the host either way) and those the device steps verified."""
    chains.clear()
    recorded = list(decode_steps(lm, prompt, request, runtime))
    on_device = [decided(s) for s in lean_steps(lm, prompt, request, runtime)]
    return [decided(s) for s in recorded], on_device, [s.report(DraftRecord).tokens for s in recorded[2:]], list(chains)


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
@pytest.mark.parametrize(("family", "confidence"), [("llama", 0.0), ("qwen2", 0.0), ("llama", 0.1)])
def test_eagles_device_step_drafts_the_chains_the_recorded_step_drafts(family, confidence, eagle_chains):
    """An untrained layer on tiny models: its drafts are rarely accepted (the real model's test below has them
    accepted), so its chains are compared token for token with the host's, drafted from the same state (the layer's
    cache carried from the host's first step, each drafted row at its position, seeing what it may), and cut by the
    confidence floor where the host's drafting stopped (at 1, 3 and 4 tokens here)."""
    lm = tiny_model(family)
    runtime = dataclasses.replace(FIXED, layer=tiny_layer(lm, confidence=confidence))
    lengths = set()
    for prompt in PROMPTS:
        recorded, on_device, drafts, chains = eagle_compared(lm, prompt, eagle(), runtime, eagle_chains)
        assert on_device == recorded and chains == drafts and chains, prompt
        lengths |= set(map(len, chains))
    assert len(lengths) > 1 if confidence else lengths == {4}


def cache_not_carried(fill):
    def wrong(self, cache, cached, fresh, after, length):
        fill(self, cache, cached, fresh, after, length)
        self.fed_cache.layers[0].keys.zero_()

    return wrong


def drafted_one_late(drafted):
    return lambda self, feature, token, j: drafted(self, feature, token, j + 1)


def seeing_one_more(mask):
    return lambda self, positions: mask(self, positions + 1)


def fed_from_row_zero(settle):
    """A wrong EAGLE step: the layer is fed c's row's hidden state for every row kept."""

    def wrong(self):
        report = settle(self)
        self.fresh.copy_(self.step.states[:1].expand_as(self.fresh))
        self.length -= self.fresh_count  # fed again, wrongly
        self.propose()
        return report

    return wrong


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
@pytest.mark.parametrize(
    ("name", "mistake"),
    [
        ("fill", cache_not_carried),
        ("drafted", drafted_one_late),
        ("mask", seeing_one_more),
        ("settle", fed_from_row_zero),
    ],
    ids=[
        "the host's cache not carried",
        "a drafted row one position late",
        "a row seeing the column after it",
        "the layer fed c's row's features",
    ],
)
def test_an_eagle_device_step_that_drafts_from_the_wrong_state_is_caught(name, mistake, eagle_chains, monkeypatch):
    monkeypatch.setattr(EagleOnDevice, name, mistake(getattr(EagleOnDevice, name)))
    lm = tiny_model("llama")
    runtime = dataclasses.replace(FIXED, layer=tiny_layer(lm))
    caught = [eagle_compared(lm, prompt, eagle(), runtime, eagle_chains)[2:] for prompt in PROMPTS]
    assert any(drafts != chains for drafts, chains in caught)


def shipped_layer(lm, confidence: float = 0.0) -> Runtime:
    return dataclasses.replace(FIXED, layer=dataclasses.replace(eagle_draft(lm, 4), confidence=confidence))


def test_eagles_device_step_drafts_and_decides_what_the_recorded_step_records_on_the_real_model(
    default_model, eagle_chains
):
    """SmolLM2 with the shipped layer (its draft vocabulary) and a confidence floor: the same chains, cut at
    several lengths, and the same steps as the recorded step, with drafts accepted."""
    prompt = encode_item(default_model.tokenizer, load_prompts("humaneval", 1)[0])
    runtime = shipped_layer(default_model, confidence=0.4)
    recorded, on_device, drafts, chains = eagle_compared(default_model, prompt, eagle(20), runtime, eagle_chains)
    assert on_device == recorded and chains == drafts and sum(step[-1] for step in on_device) >= 6
    assert len(set(map(len, chains))) > 1, "the floor cut the chains at more than one length"


# ----------------------------------------------------------------------------------------------
# Prompt lookup's step on the device


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
@pytest.mark.parametrize("settings", LOOKUPS, ids=str)
def test_prompt_lookups_device_step_decides_what_the_recorded_step_records(settings, device_steps):
    """The rows fed count every chosen continuation's tokens, so they check the matches, their lengths and that
    no two continuations are the same; a repeated token gives many starts with one continuation."""
    lm = tiny_model("llama")
    for prompt in [*PROMPTS, [7] * 12]:
        recorded, on_device, on_host = compared(lm, prompt, lookup(settings))
        assert on_device == recorded == on_host, prompt
    assert device_steps


def only_the_start_taken(spans, lengths, best, reach):
    """A wrong prompt lookup: once a continuation is chosen only its start is dropped, not the others with the same
    continuation, so one continuation may be offered twice."""
    return torch.arange(len(lengths)) == best


def device_matches(sequence: list[int], settings: LookupConfig) -> list[tuple[int, ...]]:
    """The continuations PromptLookupOnDevice chooses for `sequence`, in order (a shape of its own, no model)."""
    shape = Shape(rows=1 + settings.tokens * settings.candidates, kept=1 + settings.tokens, capacity=64)
    state = PromptLookupOnDevice(SimpleNamespace(ids=torch.zeros(1, shape.rows), shape=shape), settings)
    state.sequence[: len(sequence)] = torch.tensor(sequence)
    state.count.fill_(len(sequence))
    spans, lengths = state.matches()
    return [tuple(span[:length]) for span, length in zip(spans.tolist(), lengths.tolist(), strict=True) if length]


def matches_apart(seeds) -> list[int]:
    """The seeds whose random sequence (3 symbols, so keys recur) and settings give the device other matches than
    lookup.find_matches."""
    apart = []
    for seed in seeds:
        rng = random.Random(seed)
        sequence = [rng.randrange(3) for _ in range(rng.randint(2, 40))]
        settings = LookupConfig(rng.randint(1, 4), rng.randint(1, 6), rng.randint(1, 5))
        if device_matches(sequence, settings) != [m.continuation for m in find_matches(sequence, settings)]:
            apart.append(seed)
    return apart


def test_prompt_lookups_matches_on_the_device_are_the_hosts():
    assert matches_apart(range(300)) == []


def test_a_prompt_lookup_that_offers_a_continuation_twice_is_caught(monkeypatch):
    monkeypatch.setattr(lookup_on_device, "taken", only_the_start_taken)
    assert matches_apart(range(300))


# ----------------------------------------------------------------------------------------------
# A device step that cannot be captured


WHY = "operation not permitted when stream is capturing"


def refusing(tried: list):
    """A capture that records the fixed step's pass and copy-down but fails on a device step (each try counted)."""

    def capture_of(function):
        if not isinstance(getattr(function, "__self__", None), working_state.OnDevice):
            return function
        tried.append(function)

        def fails():
            raise RuntimeError(WHY)

        return fails

    return capture_of


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_device_step_that_fails_to_capture_sends_the_steps_back_to_the_host_and_says_why(monkeypatch):
    lm, tried = tiny_model("llama"), []
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, refusing(tried))
    for prompt in PROMPTS:
        recorded, on_device, _ = compared(lm, prompt, lookahead(LookaheadConfig(4, 4, 3)))
        assert on_device == recorded
        recorded, on_device, _ = compared(lm, prompt, plain())
        assert on_device == recorded
    refused = f"RuntimeError: {WHY}"
    assert working_state.REFUSED[lm.model] == {Method.LOOKAHEAD: refused, Method.GREEDY: refused}
    assert len(tried) == 2  # tried once per model and method, not again for every decoding


def test_lookaheads_device_function_is_recorded_at_the_prefill_before_any_host_step(monkeypatch):
    """Recorded on a stand-in state at the prefill, not when the window fills: a warm-up whose first steps accept
    many tokens still holds the recording, so no timed decoding does."""
    host_steps, recorded_after = [], []
    step = OnDeviceDecoder.step

    def counted(self):
        host_steps.append(self)
        return step(self)

    def capture_of(function):
        if isinstance(getattr(function, "__self__", None), working_state.OnDevice):
            recorded_after.append(len(host_steps))
        return Replayed(function)

    monkeypatch.setattr(OnDeviceDecoder, "step", counted)
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, capture_of)
    lm = tiny_model("llama")
    recorded, on_device, _ = compared(lm, PROMPTS[0], lookahead(LookaheadConfig(4, 4, 3)))
    assert on_device == recorded
    assert recorded_after == [0] and host_steps  # recorded once, before the warm-up's host steps


# ----------------------------------------------------------------------------------------------
# The real model


def shipped_heads(lm) -> Runtime:
    heads = make_medusa(load_heads(SHIPPED_HEADS, lm.model, lm.name, label=SHIPPED_LABEL), 8)
    return dataclasses.replace(FIXED, heads=heads)


@pytest.mark.parametrize(
    ("prompts", "request_of", "runtime_of", "least"),
    [
        # code: the pool's guesses are accepted
        ("humaneval", lambda: lookahead(LookaheadConfig(3, 3, 2), 32), lambda lm: FIXED, 6),
        # editing a solution: the output copies the prompt, so matches are accepted
        ("humaneval-edit", lambda: lookup(LookupConfig(3, 6, 2), 32), lambda lm: FIXED, 8),
        ("humaneval", lambda: medusa(24), shipped_heads, 6),
        ("humaneval", lambda: plain(24), lambda lm: FIXED, 0),
    ],
    ids=["lookahead", "prompt-lookup", "medusa", "greedy"],
)
def test_each_device_step_decides_what_the_recorded_step_records_on_the_real_model(
    default_model, device_steps, prompts, request_of, runtime_of, least
):
    """SmolLM2 (the shipped heads for Medusa): the same steps as the recorded step, with guesses accepted (plain
    decoding guesses none)."""
    prompt = encode_item(default_model.tokenizer, load_prompts(prompts, 1)[0])
    runtime = runtime_of(default_model)
    recorded = [decided(s) for s in decode_steps(default_model, prompt, request_of(), runtime)]
    on_device = [decided(s) for s in lean_steps(default_model, prompt, request_of(), runtime)]
    assert on_device == recorded and sum(step[-1] for step in on_device) >= least
    assert device_steps


def test_a_bench_report_keeps_which_methods_device_step_failed_and_why(monkeypatch):
    """lab.measure.bench.bench_settings: a method benched whose device step failed on the model is named with its reason
    (its figures are its steps' with the state on the host); one not benched is not, and on a model whose device
    steps ran (the control) none is. The settings read back as written; a version 12 report's read as none."""
    from lab.measure.bench import bench_settings
    from lookahead_core.records import BenchMethod, BenchSettings
    from lookahead_core.records.codec import decode, to_data

    lm, healthy = tiny_model("llama"), tiny_model("llama")
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, refusing([]))
    list(lean_steps(lm, PROMPTS[0], lookahead(LookaheadConfig(4, 4, 3)), FIXED))
    list(lean_steps(lm, PROMPTS[0], plain(), FIXED))
    monkeypatch.setitem(capture.CAPTURES, StepMode.FIXED, Replayed)
    list(lean_steps(healthy, PROMPTS[0], lookahead(LookaheadConfig(4, 4, 3)), FIXED))
    benched = [BenchMethod.GREEDY, BenchMethod.LOOKAHEAD, BenchMethod.PROMPT_LOOKUP]
    request = plain()
    settings = bench_settings(lm, benched[1:], BenchMethod.LOOKAHEAD, request, FIXED, ("tiny", 1))
    assert settings.state_on_host == {BenchMethod.LOOKAHEAD: f"RuntimeError: {WHY}"}, "greedy was not benched"
    assert bench_settings(lm, benched, BenchMethod.GREEDY, request, FIXED, ("tiny", 1)).state_on_host.keys() == {
        BenchMethod.GREEDY,
        BenchMethod.LOOKAHEAD,
    }
    assert bench_settings(healthy, benched, BenchMethod.GREEDY, request, FIXED, ("tiny", 1)).state_on_host == {}
    eager = Runtime(mode=StepMode.EAGER)  # the same model benched in the eager step: its state was never on the device
    assert bench_settings(lm, benched, BenchMethod.GREEDY, request, eager, ("tiny", 1)).state_on_host == {}
    assert decode(BenchSettings, to_data(settings), "settings") == settings
    older = {k: v for k, v in to_data(settings).items() if k != "state_on_host"}  # schema 12 kept none
    assert decode(BenchSettings, older, "settings").state_on_host == {}
