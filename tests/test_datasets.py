"""The prompt sets: the shipped GSM8K subset reads as the bench's third set, and the prompts Medusa's
heads are trained on share nothing with any set the lab measures on."""

import re

import pytest

from lab.measure.datasets import SHIPPED_SETS, load_prompts

SHINGLE = 8  # words in a row that two prompts must not share


def shingles(text: str, size: int = SHINGLE) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def test_gsm8k_is_the_shipped_test_subset_as_chat_turns():
    prompts = load_prompts("gsm8k")
    assert len(prompts) == 100 and all(p["chat"] for p in prompts)
    assert prompts[0]["id"] == "gsm8k/test/0" and prompts[0]["prompt"].startswith("Janet")
    assert load_prompts("gsm8k", 10) == prompts[:10]


@pytest.fixture(scope="module")
def benchmark_shingles() -> set[tuple[str, ...]]:
    return {s for name in ("humaneval", "mtbench", "gsm8k") for p in load_prompts(name) for s in shingles(p["prompt"])}


def test_the_heads_training_prompts_share_no_run_of_words_with_any_benchmark_prompt(benchmark_shingles):
    training = load_prompts("self-instruct")
    assert len(training) == 427
    shared = [p["id"] for p in training if shingles(p["prompt"]) & benchmark_shingles]
    assert shared == []


def test_the_overlap_check_catches_a_benchmark_prompt_slipped_into_training(benchmark_shingles):
    """Negative control: one MT-Bench prompt, reworded at its start, is still caught."""
    slipped = "Please: " + load_prompts("mtbench", 1)[0]["prompt"]
    assert shingles(slipped) & benchmark_shingles


def test_every_shipped_set_names_its_source_and_licence():
    notice = (SHIPPED_SETS["gsm8k"].parent / "README.md").read_text()
    for path in SHIPPED_SETS.values():
        assert path.name in notice
    assert "MIT" in notice and "Apache-2.0" in notice


def test_the_editing_set_asks_for_each_edit_in_turn_with_a_planted_bug_where_one_applies():
    from lab.measure.datasets import EDITS, planted_bug

    edits = load_prompts("humaneval-edit", 8)
    originals = load_prompts("humaneval", 8)
    assert [p["id"] for p in edits][:2] == ["humaneval-edit/0", "humaneval-edit/1"] and all(p["chat"] for p in edits)
    for index, (edit, original) in enumerate(zip(edits, originals, strict=True)):
        assert original["prompt"] in edit["prompt"]  # the problem's own text, then its (changed) solution
        asked = EDITS[index % len(EDITS)].split("`")[0]
        assert asked in edit["prompt"] or (index % 4 == 3 and EDITS[0] in edit["prompt"])
    assert planted_bug("    if a <= b:\n        return a + 1\n") == "    if a < b:\n        return a + 1\n"
    assert planted_bug("    return x\n") is None


def test_second_turns_follow_the_models_own_first_answer():
    from lab.measure.datasets import with_first_answers

    turns = with_first_answers(load_prompts("mtbench-2", 2), lambda first: f"ANSWER TO {first[:10]}")
    assert turns[0]["turns"][0] == load_prompts("mtbench", 1)[0]["prompt"]
    assert turns[0]["turns"][1].startswith("ANSWER TO") and turns[0]["turns"][2] == turns[0]["prompt"]
