"""The app's stores of earlier outputs (lab.serve.stores): one per visitor and model, seeded with the shipped examples'
outputs recorded on that model, growing with that visitor's Runs alone, bounded, and able to cross to a ZeroGPU
worker. (tests/test_suffix_app.py drives two visitors through the served app.)"""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from lab.serve.stores import VISITOR_TOKENS, Visitor, run_name, shipped_texts
from lookahead_core.models import DEFAULT_MODEL
from tests.visual_checks import PRESETS, example


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_new_visitor_holds_the_examples_of_the_model_they_were_recorded_on_only():
    names = [t.name for t in reversed(Visitor().store(DEFAULT_MODEL).texts())]
    assert names == [f"example: {p['label']}" for p in PRESETS]
    assert Visitor().store("another/model").texts() == ()  # another tokenizer's ids would match nothing it writes
    for text, item in zip(shipped_texts(DEFAULT_MODEL), PRESETS, strict=True):
        assert text.tokens == example(item["id"]).trace.summary.new_token_ids


def test_two_visitors_share_the_indexed_examples_and_nothing_they_ran():
    mine, yours = Visitor(), Visitor()
    run = example("pencils")
    assert mine.keep(run, "My   secret\nprompt about pencils") == "your run 1: My secret prompt about pencils"
    assert mine.keep(run, "again") == "your run 2: again"
    assert [t.name for t in mine.store(DEFAULT_MODEL).texts()][:2] == [
        "your run 2: again",
        run_name(1, "My secret prompt about pencils"),
    ]
    assert not any(t.name.startswith("your run") for t in yours.store(DEFAULT_MODEL).texts())
    shared = {id(t) for t in mine.store(DEFAULT_MODEL).texts()} & {id(t) for t in yours.store(DEFAULT_MODEL).texts()}
    assert len(shared) == len(PRESETS)  # each example indexed once, for every visitor


def test_a_long_prompt_names_its_run_by_its_first_words():
    name = run_name(3, "Give me three tips for staying focused while studying at home in the evening.")
    assert name == "your run 3: Give me three tips for staying focused…"


def test_a_visitors_store_is_bounded_however_many_runs_they_make():
    visitor = Visitor()
    run = example("python-sub")
    long = dataclasses.replace(
        run,
        trace=dataclasses.replace(
            run.trace, summary=dataclasses.replace(run.trace.summary, new_token_ids=list(range(256)))
        ),
    )
    for number in range(40):
        visitor.keep(long, f"run {number}")
    texts = visitor.store(DEFAULT_MODEL).texts()
    assert sum(len(t.tokens) for t in texts) <= VISITOR_TOKENS
    assert texts[0].name == "your run 40: run 39"


def test_a_store_crosses_to_another_process_whole():
    visitor = Visitor()
    visitor.keep(example("pencils"), "pencils")
    store = visitor.store(DEFAULT_MODEL)
    twin = pickle.loads(pickle.dumps(store))
    assert [(t.name, t.tokens, t.twos) for t in twin.texts()] == [(t.name, t.tokens, t.twos) for t in store.texts()]
    assert twin.budget == store.budget
    twin.add("there", [1, 2])
    assert "there" not in [t.name for t in store.texts()]


def test_a_race_matches_no_earlier_output_of_the_same_prompt():
    """Its preset's shipped example and the visitor's own earlier Runs of it are left out (whatever the spacing);
    every other output stays, and the visitor's store itself keeps them all."""
    visitor, item = Visitor(), PRESETS[0]
    visitor.keep(example(item["id"]), item["prompt"])
    visitor.keep(example(item["id"]), "another prompt")
    spaced = "  " + item["prompt"].replace(" ", "\n ") + " "
    names = [t.name for t in visitor.race_store(DEFAULT_MODEL, spaced).texts()]
    own = {f"example: {item['label']}", run_name(1, item["prompt"])}
    assert not own & set(names) and run_name(2, "another prompt") in names
    assert len(names) == len(visitor.store(DEFAULT_MODEL).texts()) - 2
    assert own <= {t.name for t in visitor.race_store(DEFAULT_MODEL, "a new prompt").texts()}
