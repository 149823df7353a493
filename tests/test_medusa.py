"""Medusa heads: exact greedy and sampled decoding with random heads, the heads' own contract (zero start,
the model's output layer and logit transform, the hidden state they read), the sparse tree, saving and
refusing heads made for another model, and Medusa-1 training (the loss falls; a resumed run ends where an
unbroken one does).
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
import torch
from transformers import AutoModelForCausalLM, Gemma2Config

from lab.train.distillation import DataSource
from lab.train.medusa import TrainSettings, head_targets, train
from lookahead_core.methods.medusa import (
    MedusaError,
    MedusaProposer,
    heads_for,
    load_heads,
    make_medusa,
    output_logits,
    save_heads,
    sparse_tree,
    tree_branch,
)
from lookahead_core.records import Branch, HeadsRecord, Method, Needs, StepKind
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.sampling import GREEDY, SamplingConfig
from lookahead_core.step import verify as verify_module
from lookahead_core.step.decoding import DecodingError
from lookahead_core.trace import decode_steps, summarize

from .test_bench import char_tokenizer
from .test_engine_tiny_models import greedy_case
from .test_sampling import (
    PROMPT,
    TOKENS,
    accept_the_argmax,
    exact_sequences,
    fits,
    marginal,
    runs_for,
    small_vocab_model,
)
from .tiny import TINY_VOCAB, tiny_medusa, tiny_model

CASES = 8


def medusa_output(lm, medusa, prompt, max_new_tokens, eos=None, sampling=GREEDY):
    lm.eos_ids = frozenset() if eos is None else frozenset({eos})
    request = DecodeRequest(method=Method.MEDUSA, max_new_tokens=max_new_tokens, sampling=sampling)
    steps = list(decode_steps(lm, prompt, request, Runtime(heads=medusa)))
    return summarize(steps).new_token_ids, steps


# ----------------------------------------------------------------------------------------------
# Exactness


@pytest.mark.heavy
@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2"])
def test_greedy_medusa_equals_greedy_generate(family):
    lm = tiny_model(family)
    rng = random.Random(family)
    multi_token_steps = 0
    for case in range(CASES):
        medusa = tiny_medusa(lm, heads=rng.randint(1, 4), size=rng.randint(1, 24), seed=case)
        motif = [rng.randrange(TINY_VOCAB) for _ in range(rng.randint(1, 6))]
        prompt = (motif * 8)[: rng.randint(1, 30)]
        max_new_tokens = rng.randint(1, 40)
        reference, eos = greedy_case(lm.model, prompt, max_new_tokens, rng, case % 3 == 0)
        output, steps = medusa_output(lm, medusa, prompt, max_new_tokens, eos)
        assert output == reference, f"case {case}: {prompt} tree={medusa.tree} {max_new_tokens} eos={eos}"
        assert all(s.method == Method.MEDUSA for s in steps)
        multi_token_steps += sum(len(s.committed) > 1 for s in steps)
    assert multi_token_steps > 0, "no step accepted a head's guess: the test would not catch a verification bug"


@pytest.fixture(scope="module")
def small_lm():
    return small_vocab_model()


def medusa_samples(lm, medusa, sampling: SamplingConfig, runs: int):
    counts = {}
    for seed in range(runs):
        output, _ = medusa_output(lm, medusa, PROMPT, TOKENS, sampling=sampling.for_prompt(seed))
        counts[tuple(output)] = counts.get(tuple(output), 0) + 1
    return counts


@pytest.mark.heavy
@pytest.mark.parametrize("rule", ["engine", "accept the argmax"])
def test_sampled_medusa_has_the_distribution_of_ordinary_sampling(small_lm, monkeypatch, rule):
    """Tokens 1-2 and 2-3 (each 64 cells) of many seeded runs against the exact distribution; accepting a
    head's guess exactly when it is P's argmax (the negative control) must fail the same test."""
    if rule != "engine":
        monkeypatch.setattr(verify_module, "try_in_turn", accept_the_argmax)
    medusa = tiny_medusa(small_lm, heads=3, size=10, seed=1, scale=1.0)
    sampling, runs = SamplingConfig(temperature=1.0), runs_for(rule)
    exact = exact_sequences(small_lm, sampling)
    counts = Counter(medusa_samples(small_lm, medusa, sampling, runs))
    verdicts = [fits(marginal(counts, part), marginal(exact, part), runs) for part in (slice(0, 2), slice(1, 3))]
    assert all(verdicts) == (rule == "engine"), verdicts


def test_sampled_steps_accept_heads_guesses(small_lm):
    medusa = tiny_medusa(small_lm, heads=3, size=10, seed=1, scale=1.0)
    _, steps = medusa_output(small_lm, medusa, PROMPT, 40, sampling=SamplingConfig(temperature=1.0, seed=2))
    assert any(s.verification.accepted > 0 for s in steps[1:])


# ----------------------------------------------------------------------------------------------
# The heads


def test_untrained_heads_guess_what_the_models_own_row_guesses():
    lm = tiny_model("llama")
    heads = heads_for(lm.model, lm.name, 3)
    with torch.no_grad():
        hidden = lm.model.base_model(input_ids=torch.tensor([[4, 5, 6]])).last_hidden_state[0]
        own = lm.model(input_ids=torch.tensor([[4, 5, 6]])).logits[0]
        guessed = heads.logits(lm.model, hidden)
    assert guessed.shape == (3, 3, TINY_VOCAB)
    for k in range(3):
        torch.testing.assert_close(guessed[:, k], own)


def test_the_heads_keep_the_models_logit_soft_capping():
    torch.manual_seed(0)
    config = Gemma2Config(
        vocab_size=TINY_VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        final_logit_softcapping=2.0,
        initializer_range=0.5,
    )
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    ids = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        hidden = model.base_model(input_ids=ids).last_hidden_state
        raw = model.get_output_embeddings()(hidden)
        torch.testing.assert_close(output_logits(model, hidden), model(input_ids=ids).logits)
    assert raw.abs().max() > 2.0  # so the cap did something


def test_the_heads_read_the_hidden_state_of_the_row_behind_c(monkeypatch):
    """The state each step's heads read equals the model's last hidden state at the token before c."""
    lm = tiny_model("qwen2")
    medusa, seen = tiny_medusa(lm), []
    propose = MedusaProposer.propose

    def recording(self, context):
        seen.append((list(context.sequence), context.hidden.clone()))
        return propose(self, context)

    monkeypatch.setattr(MedusaProposer, "propose", recording)
    _, steps = medusa_output(lm, medusa, [3, 4, 5, 3, 4, 5, 3], 30)
    assert any(len(s.committed) > 1 for s in steps)
    for sequence, hidden in seen:
        with torch.no_grad():
            full = lm.model.base_model(input_ids=torch.tensor([sequence[:-1]])).last_hidden_state[0, -1]
        torch.testing.assert_close(hidden, full, atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------------------------
# The sparse tree


def test_the_sparse_tree_takes_the_likeliest_paths_closed_under_prefixes():
    accuracy = [[0.6, 0.25, 0.1], [0.5, 0.2, 0.1], [0.45, 0.15, 0.1]]
    tree = sparse_tree(accuracy, 6)  # chances .6, .3 (0 0), .25, .135 (0 0 0), .125 (1 0), .12 (0 1); then .1 (2)
    assert tree == ((0,), (1,), (0, 0), (0, 1), (1, 0), (0, 0, 0))
    for size in range(1, 20):
        paths = sparse_tree(accuracy, size)
        assert len(paths) == size and all(p[:-1] in paths for p in paths if len(p) > 1)
        assert [len(p) for p in paths] == sorted(len(p) for p in paths)


def test_a_tree_branch_lays_nodes_after_their_parents_with_each_leaf_a_candidate():
    tree = ((0,), (1,), (0, 0), (0, 1), (0, 0, 0))
    top = [[10, 11], [20, 21], [30]]
    branch = tree_branch(tree, top)
    assert branch.kind == Branch.HEADS
    assert branch.tokens == (10, 11, 20, 21, 30)
    assert branch.parents == (-1, -1, 0, 0, 2)
    assert [(c.tokens, c.rows) for c in branch.candidates] == [
        ((11,), (1,)),
        ((10, 21), (0, 3)),
        ((10, 20, 30), (0, 2, 4)),
    ]


def test_medusa_needs_heads_and_a_sound_tree():
    lm = tiny_model("llama")
    with pytest.raises(DecodingError, match="needs heads"):
        decode_steps(lm, [1, 2], DecodeRequest(method=Method.MEDUSA, max_new_tokens=4))
    with pytest.raises(ValueError, match="tree size"):
        make_medusa(heads_for(lm.model, lm.name), 0)


# ----------------------------------------------------------------------------------------------
# Saving and loading


def test_heads_come_back_as_saved_and_refuse_another_model(tmp_path):
    lm, other = tiny_model("llama"), tiny_model("gpt2")
    medusa = tiny_medusa(lm)
    medusa.heads.accuracy = [[0.5, 0.1]] * 4
    save_heads(medusa.heads, tmp_path / "heads.safetensors")
    back = load_heads(tmp_path / "heads.safetensors", lm.model, lm.name)
    for name in ("weight", "bias"):  # stored in float16, read back in the model's dtype
        saved = getattr(medusa.heads, name)
        assert torch.equal(getattr(back, name), saved.half().to(saved.dtype)) and back.weight.dtype == saved.dtype
    assert back.accuracy == medusa.heads.accuracy and back.heads == 4
    with pytest.raises(MedusaError, match="trained for 'tiny-random-llama'.*not for 'tiny-random-gpt2'") as refused:
        load_heads(tmp_path / "heads.safetensors", other.model, other.name)
    assert "\n" not in str(refused.value)
    (tmp_path / "junk.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(MedusaError, match="holds no Medusa heads") as junk:
        load_heads(tmp_path / "junk.safetensors", lm.model, lm.name)
    assert "\n" not in str(junk.value)


# ----------------------------------------------------------------------------------------------
# Training


PROMPTS = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 5, 6], [20, 21, 22, 23, 24], [30, 31], [40, 41, 42]]
SOURCE = DataSource(name="inline test prompts", licence="CC0-1.0 (written for this test)")


def test_each_head_targets_the_token_k_plus_1_places_on_written_by_the_model():
    targets = head_targets([1, 2], [3, 4, 5], 2)
    assert targets.tolist() == [[3, 4], [4, 5], [5, -100], [-100, -100], [-100, -100]]


def test_training_lowers_the_loss_and_writes_heads_and_a_record(tmp_path):
    lm = tiny_model("llama")
    settings = TrainSettings(heads=2, steps=60, batch=32, learning_rate=3e-2, checkpoint_every=20, answer_tokens=24)
    record = train(lm, PROMPTS, SOURCE, settings, tmp_path)
    first, last = sum(record.loss[:5]) / 5, sum(record.loss[-5:]) / 5
    assert last < 0.8 * first, (first, last)
    assert record.held_out_prompts == 1 and record.train_tokens > 0 and record.held_out_tokens > 0
    written = json.loads((tmp_path / "training.json").read_text())
    assert written["source"] == SOURCE.name and written["licence"] == SOURCE.licence and len(written["loss"]) == 60
    assert [a["head"] for a in written["accuracy"]] == [1, 2]
    heads = load_heads(tmp_path / "heads.safetensors", lm.model, lm.name)
    assert len(heads.accuracy) == 2 and all(0 <= a <= 1 for row in heads.accuracy for a in row)
    assert heads.weight.abs().max() > 0


def test_a_stopped_run_resumes_from_its_checkpoint_to_the_same_state(tmp_path):
    lm = tiny_model("llama")
    settings = TrainSettings(heads=2, steps=8, batch=16, learning_rate=1e-2, checkpoint_every=4, answer_tokens=12)
    whole = train(lm, PROMPTS, SOURCE, settings, tmp_path / "whole")
    stopped = train(lm, PROMPTS, SOURCE, TrainSettings(**{**settings.__dict__, "steps": 4}), tmp_path / "stopped")
    resumed = train(lm, PROMPTS, SOURCE, settings, tmp_path / "stopped")
    assert resumed.loss == whole.loss
    assert resumed.seconds > stopped.seconds  # the record counts the time spent before the resumption
    a = load_heads(tmp_path / "whole" / "heads.safetensors", lm.model, lm.name)
    b = load_heads(tmp_path / "stopped" / "heads.safetensors", lm.model, lm.name)
    assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)


def test_the_cli_decodes_with_heads_and_refuses_heads_of_another_model_in_one_line(tmp_path, capsys):
    """`python -m lab generate --method medusa --heads PATH`: exact with heads made for the model; one line of
    error for heads made for another model, and for no heads at all."""
    from lab.cli import main

    folder = tmp_path / "tiny"
    lm = tiny_model("llama")
    lm.model.save_pretrained(folder)
    char_tokenizer().save_pretrained(folder)
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    save_heads(heads_for(lm.model, str(folder)), ours)
    save_heads(heads_for(tiny_model("qwen2").model, "another-model"), theirs)
    capsys.readouterr()  # the progress bars of saving and loading
    common = ["generate", "--model", str(folder), "--prompt", "a, b, c, a, b", "--max-new-tokens", "8", "--method"]
    assert main([*common, "medusa", "--heads", str(ours), "--json"]) == 0
    capsys.readouterr()
    assert main([*common, "medusa", "--heads", str(theirs)]) == 2
    refusal = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(refusal) == 1 and refusal[0].startswith("error: ") and "another-model" in refusal[0]
    assert main([*common, "medusa"]) == 2
    assert "Medusa needs heads trained for" in capsys.readouterr().err


def test_the_fitted_tree_is_wide_where_width_is_free_and_narrow_where_each_row_costs():
    """On a GPU-like curve (flat) the tree grows to its limit; on a CPU-like one (each row costs as much as
    the first) it keeps only nodes likelier than the cost they add; a no-guess tree is never chosen."""
    from lookahead_core.methods.medusa import MAX_TREE_SIZE, fitted_tree_size

    accuracy = [[0.6, 0.2, 0.1], [0.5, 0.2], [0.4]]
    assert fitted_tree_size(accuracy, lambda rows: 1.0) == min(MAX_TREE_SIZE, 3 + 3 * 2 + 3 * 2 * 1)
    steep = fitted_tree_size(accuracy, lambda rows: float(rows))  # (1 + sum of chances) / (1 + s)
    assert steep == 1  # 1.6 / 2 beats 1.9 / 3: past head 1's first choice no node pays for its row
    assert 1 < fitted_tree_size(accuracy, lambda rows: 1 + 0.1 * rows) < 15


def test_each_step_records_the_heads_choices_with_their_probabilities_and_the_tree_it_fed():
    """A Medusa step's record holds each head's top choices (best first, with the softmax probabilities of
    the heads' logits on the hidden state behind c) and the tree; the rows fed are that tree's tokens."""
    lm = tiny_model("llama")
    medusa = tiny_medusa(lm, heads=3, size=8, seed=1, scale=1.0)
    prompt = [3, 4, 5, 3, 4, 5, 3]
    _, steps = medusa_output(lm, medusa, prompt, 12)
    sequence = list(prompt)
    for step in steps:
        if step.kind == StepKind.DECODE:
            record = step.report(HeadsRecord)
            assert record.tree == [list(path) for path in medusa.tree] and record.seconds > 0
            fed = [row.token for row in step.rows if row.branch == Branch.HEADS]
            assert fed == [record.heads[len(p) - 1].tokens[p[-1]] for p in record.tree]
            with torch.no_grad():
                hidden = lm.model.base_model(input_ids=torch.tensor([sequence[:-1]])).last_hidden_state[0, -1]
                chances = medusa.heads.logits(lm.model, hidden).softmax(dim=-1)
            for guesses in record.heads:
                want = chances[guesses.head - 1].topk(len(guesses.tokens))
                assert guesses.tokens == want.indices.tolist()
                torch.testing.assert_close(torch.tensor(guesses.probabilities), want.values, atol=1e-5, rtol=1e-4)
        sequence += step.committed
    assert all(s.report(HeadsRecord) is None for s in steps if s.kind != StepKind.DECODE)


def test_the_one_runtime_builder_refuses_missing_heads_or_leaves_them_out_and_looks_once(monkeypatch):
    """heads.runtime_for: for a model none ship for, Medusa's and EAGLE's needs raise NoHeads (the CLI's one line),
    or with `lenient` (the server's) the runtime lacks them; the aids look once and remember the refusal."""
    from lab.train import heads as lab_heads

    lm = tiny_model("llama")
    looked = []
    monkeypatch.setattr(lab_heads, "ships", lambda lm, needs: looked.append(needs) or False)
    aids = lab_heads.Aids(lm)
    with pytest.raises(lab_heads.NoHeads, match="Medusa needs heads"):
        lab_heads.runtime_for(lm, [Method.MEDUSA], aids)
    lenient = lab_heads.runtime_for(lm, [Method.MEDUSA, Method.EAGLE, Method.LOOKAHEAD], aids, lenient=True)
    assert lenient.heads is None and lenient.layer is None and lenient.draft is None
    assert not lenient.has(Needs.HEADS) and lenient.has(Needs.NOTHING)
    assert sorted(looked) == sorted([Needs.HEADS, Needs.LAYER]), "each looked for once, the refusal kept"
    with pytest.raises(lab_heads.NoHeads, match="EAGLE needs a layer") as first:
        lab_heads.runtime_for(lm, [Method.EAGLE], aids)
    with pytest.raises(lab_heads.NoHeads) as again:
        lab_heads.runtime_for(lm, [Method.EAGLE], aids)
    assert again.value is not first.value, "a kept error raised again keeps every raise's frames alive"
