"""The EAGLE draft: exact greedy and sampled speculative decoding with EAGLE layers on tiny models, the layer's
contract (it reads the model's true feature at every committed position, its own predictions only past c),
saving and refusing a layer made for another model, training (the loss falls; a resumed run ends where an
unbroken one does), and the CLI.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from lab.train.distillation import DataSource
from lab.train.eagle import Sequence, TrainSettings, draft_vocabulary, sequences, train, train_layer
from lab.train.training import RunClock
from lookahead_core.methods.draft import Draft
from lookahead_core.methods.eagle import (
    EAGLE,
    HEADER_KEY,
    EagleProposer,
    eagle_for,
    load_eagle,
    save_eagle,
    stored_bits,
)
from lookahead_core.methods.medusa import MedusaError, output_logits
from lookahead_core.methods.stored import GROUP, kept, whole
from lookahead_core.records import BenchMethod, DraftRecord, Method
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.sampling import GREEDY, SamplingConfig
from lookahead_core.step import verify as verify_module
from lookahead_core.step.decoding import DecodingError
from lookahead_core.trace import decode_steps, summarize

from .test_bench import char_tokenizer
from .test_engine_tiny_models import greedy_case, greedy_reference
from .test_sampling import PROMPT, TOKENS, exact_sequences, fits, keep_p, marginal, runs_for, small_vocab_model
from .tiny import TINY_VOCAB, tiny_model

CASES = 8
PROMPTS = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 5, 6], [20, 21, 22, 23, 24], [30, 31], [40, 41, 42]]
SOURCE = DataSource(name="inline test prompts", licence="CC0-1.0 (written for this test)")


def eagle_output(lm, draft, prompt, max_new_tokens, eos=None, sampling=GREEDY):
    lm.eos_ids = frozenset() if eos is None else frozenset({eos})
    request = DecodeRequest(method=Method.EAGLE, max_new_tokens=max_new_tokens, sampling=sampling)
    steps = list(decode_steps(lm, prompt, request, Runtime(layer=draft)))
    return summarize(steps).new_token_ids, steps


def motif_prompts(rng: random.Random, count: int) -> list[list[int]]:
    motifs = ([rng.randrange(TINY_VOCAB) for _ in range(rng.randint(1, 6))] for _ in range(count))
    return [(motif * 8)[: rng.randint(2, 30)] for motif in motifs]


def trained_draft(lm, folder, steps: int = 60, tokens: int = 4) -> Draft:
    """An EAGLE layer trained for a few seconds on the tiny model's own greedy continuations of motif prompts:
    right often enough that verification both accepts and rejects."""
    prompts = motif_prompts(random.Random(lm.name), 24)
    answers = [greedy_reference(lm.model, p, 24, None) for p in prompts]
    layer = eagle_for(lm.model, lm.name)
    settings = TrainSettings(steps=steps, batch=8, learning_rate=3e-3, token_weight=1.0, checkpoint_every=10**6)
    train_layer(layer, lm.model, sequences(lm.model, prompts, answers), settings, folder, RunClock(folder))
    return Draft(layer, EAGLE, tokens)


# ----------------------------------------------------------------------------------------------
# Exactness


@pytest.mark.heavy
@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2"])
def test_greedy_eagle_equals_greedy_generate(family, tmp_path):
    lm = tiny_model(family)
    draft = trained_draft(lm, tmp_path)
    rng = random.Random(family)
    accepted = rejected = 0
    for case in range(CASES):
        draft.tokens = rng.randint(1, 6)
        prompt = motif_prompts(rng, 1)[0][: rng.randint(1, 30)]
        max_new_tokens = rng.randint(1, 40)
        reference, eos = greedy_case(lm.model, prompt, max_new_tokens, rng, case % 3 == 0)
        output, steps = eagle_output(lm, draft, prompt, max_new_tokens, eos)
        assert output == reference, f"case {case}: {prompt} k={draft.tokens} {max_new_tokens} eos={eos}"
        accepted += sum(s.verification.accepted for s in steps[1:])
        rejected += sum(s.verification.accepted < len(s.report(DraftRecord).tokens) for s in steps[1:])
    assert accepted and rejected, "verification never both accepted and rejected: the test would not catch a bug"


@pytest.fixture(scope="module")
def small_lm():
    return small_vocab_model()


@pytest.mark.heavy
@pytest.mark.parametrize(
    ("rule", "vocabulary"),
    [("engine", None), ("engine", [6, 1, 3, 2, 0]), ("keep P after a rejection", None)],
    ids=["engine", "engine, 5 of 8 tokens draftable", "keep P after a rejection"],
)
def test_sampled_eagle_has_the_distribution_of_ordinary_sampling(small_lm, monkeypatch, rule, vocabulary):
    """Tokens 1-2 and 2-3 (each 64 cells) of many seeded runs against the exact distribution, the layer drafting
    from its own q (over all 8 tokens, or over a draft vocabulary of 5, q 0 elsewhere); taking a rejected draft
    token's q back out of P wrongly (the negative control) must fail."""
    if rule != "engine":
        monkeypatch.setattr(verify_module, "take_out", keep_p)
    torch.manual_seed(4)
    layer = eagle_for(small_lm.model, small_lm.name)
    with torch.no_grad():
        for parameter in layer.parameters():
            parameter.add_(torch.randn(parameter.shape) * 0.5)
    layer.vocabulary = None if vocabulary is None else torch.tensor(vocabulary)
    draft, sampling, runs = Draft(layer, EAGLE, 2), SamplingConfig(temperature=1.0), runs_for(rule)
    exact = exact_sequences(small_lm, sampling)
    counts = Counter(
        tuple(eagle_output(small_lm, draft, PROMPT, TOKENS, sampling=sampling.for_prompt(seed))[0])
        for seed in range(runs)
    )
    verdicts = [fits(marginal(counts, part), marginal(exact, part), runs) for part in (slice(0, 2), slice(1, 3))]
    assert all(verdicts) == (rule == "engine"), verdicts


# ----------------------------------------------------------------------------------------------
# The layer


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_each_first_draft_reads_the_true_features_of_every_committed_position(tmp_path, monkeypatch):
    """Step by step, the feature the layer predicts at c (from which it drafts its first token) equals what it
    predicts from scratch over the model's true features of the whole committed sequence: its cache holds true
    features only, at the right positions, fed as the passes made them, and none of its own drafts survive."""
    lm = tiny_model("llama")
    draft = trained_draft(lm, tmp_path, steps=40)
    predicted_at = {}  # position -> the feature the layer predicted there from true features
    real_propose, real_advance = EagleProposer.propose, EagleProposer.advance

    def propose(self, context):
        self.reading_true_features = True
        return real_propose(self, context)

    def advance(self, features, tokens):
        out = real_advance(self, features, tokens)
        if self.reading_true_features:  # the step's first call: the features the last pass made
            predicted_at[self.cache.get_seq_length() - 1] = out[0]
            self.reading_true_features = False
        return out

    monkeypatch.setattr(EagleProposer, "propose", propose)
    monkeypatch.setattr(EagleProposer, "advance", advance)
    prompt = motif_prompts(random.Random(7), 1)[0]
    output, steps = eagle_output(lm, draft, prompt, 30)
    ids = torch.tensor([prompt + output])
    with torch.inference_mode():
        hidden = lm.model.base_model(input_ids=ids).last_hidden_state
        scratch = draft.model.features(hidden[:, :-1], lm.model.get_input_embeddings()(ids)[:, 1:])[0]
    assert sorted(predicted_at) == [step.position - 1 for step in steps[1:]]  # the row before each step's c
    for position, feature in predicted_at.items():
        torch.testing.assert_close(feature, scratch[position], atol=1e-4, rtol=1e-4)
    first_guesses = output_logits(lm.model, scratch).argmax(dim=-1).tolist()
    assert all(step.report(DraftRecord).tokens[0] == first_guesses[step.position - 1] for step in steps[1:])


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_an_output_layer_with_a_bias_drafts_through_its_bias(tmp_path):
    lm = tiny_model("llama")
    with torch.no_grad():
        lm.model.lm_head.bias = torch.nn.Parameter(torch.randn(TINY_VOCAB))
    draft = trained_draft(lm, tmp_path, steps=5)
    draft.model.vocabulary = torch.tensor([9, 2, 40, 7])
    features = torch.randn(3, 32)
    with torch.inference_mode():
        head = draft.model.head_for(lm.model)
        torch.testing.assert_close(head.scores(lm.model, features), output_logits(lm.model, features)[:, [9, 2, 40, 7]])
    prompt = motif_prompts(random.Random(5), 1)[0]
    assert eagle_output(lm, draft, prompt, 20)[0] == greedy_reference(lm.model, prompt, 20, None)


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_a_layer_drafts_only_from_its_vocabulary_and_stays_exact(tmp_path):
    lm = tiny_model("llama")
    draft = trained_draft(lm, tmp_path)
    prompt = motif_prompts(random.Random(3), 1)[0]
    reference = greedy_reference(lm.model, prompt, 30, None)
    draft.model.vocabulary = torch.tensor(sorted(set(reference))[::2])  # half of the tokens the model will write
    output, steps = eagle_output(lm, draft, prompt, 30)
    assert output == reference
    drafted = {token for step in steps[1:] for token in step.report(DraftRecord).tokens}
    assert drafted <= set(draft.model.vocabulary.tolist()) and any(s.verification.accepted for s in steps[1:])


def test_the_draft_vocabulary_is_the_models_likeliest_choices():
    data = [Sequence(torch.tensor([0, 0, 0, 0]), torch.zeros(4, 2), torch.tensor([5, 7, 5, 9]))]
    assert draft_vocabulary(data, 2).tolist() == [5, 7]  # 5 twice; 7 and 9 once: the lower id first
    assert draft_vocabulary(data, 10).tolist() == [5, 7, 9] and draft_vocabulary(data, 0) is None


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_layers_come_back_as_saved_in_fewer_bits_and_refuse_another_model(tmp_path):
    lm, other = tiny_model("llama"), tiny_model("gpt2")
    layer = trained_draft(lm, tmp_path, steps=5).model
    layer.accuracy = {"top1": 0.5, "top5": 0.8, "positions": 10, "coverage": 1.0}
    layer.vocabulary = torch.tensor([7, 3, 11])
    save_eagle(layer, tmp_path / "eagle.safetensors")
    back = load_eagle(tmp_path / "eagle.safetensors", lm.model, lm.name)
    assert back.vocabulary.tolist() == [7, 3, 11]
    with safe_open(str(tmp_path / "eagle.safetensors"), framework="pt") as written:
        assert {k.rsplit(".", 1)[-1] for k in written.keys()} >= {"q4", "q8", "scale"}  # noqa: SIM118 (not a dict)
    for (name, ours), theirs in zip(layer.state_dict().items(), back.state_dict().values(), strict=True):
        if name == "vocabulary" or ours.dim() < 2 or ours.shape[1] % GROUP:
            assert torch.equal(ours if name == "vocabulary" else ours.half().float(), theirs), name
        else:
            assert torch.equal(whole(*kept(ours.half(), stored_bits(name)).values()), theirs), name
    assert back.accuracy == layer.accuracy and back.dtype == torch.float32 and back.label == "eagle.safetensors"
    with pytest.raises(MedusaError, match="trained for 'tiny-random-llama'.*not for 'tiny-random-gpt2'") as refused:
        load_eagle(tmp_path / "eagle.safetensors", other.model, other.name)
    assert "\n" not in str(refused.value)
    (tmp_path / "junk.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(MedusaError, match="holds no EAGLE layer") as junk:
        load_eagle(tmp_path / "junk.safetensors", lm.model, lm.name)
    assert "\n" not in str(junk.value)


def test_a_layer_saved_before_fewer_bits_every_weight_in_float16_still_loads_as_it_was(tmp_path):
    """A format-1 file (every weight in float16, as the layer shipped until 2026-11-28) loads unchanged: the loader
    packs nothing it did not write."""
    lm = tiny_model("llama")
    layer = eagle_for(lm.model, lm.name)
    layer.vocabulary = torch.tensor([7, 3, 11])
    weights = {k: v if k == "vocabulary" else v.half().contiguous() for k, v in layer.state_dict().items()}
    save_file(
        weights, str(tmp_path / "old.safetensors"), metadata={HEADER_KEY: json.dumps(layer.header() | {"format": 1})}
    )
    back = load_eagle(tmp_path / "old.safetensors", lm.model, lm.name)
    for (name, ours), theirs in zip(weights.items(), back.state_dict().values(), strict=True):
        assert torch.equal(ours if name == "vocabulary" else ours.float(), theirs), name


def test_eagle_is_a_method_of_its_own_that_drafts_with_the_layer_and_not_the_draft_model():
    """The bench's entrant eagle runs the table's method eagle, whose chain is the layer's (a DraftRecord of its
    passes); speculative decoding beside it drafts with the draft model. Without a layer EAGLE is refused."""
    lm = tiny_model("llama")
    model_draft, layer_draft = Draft(lm.model, "a-model", 3), Draft(eagle_for(lm.model, lm.name), EAGLE, 5)
    runtime = Runtime(draft=model_draft, layer=layer_draft)
    assert BenchMethod.EAGLE.method == Method.EAGLE and BenchMethod.SPECULATIVE.method == Method.SPECULATIVE
    for method, k in ((Method.EAGLE, 5), (Method.SPECULATIVE, 3)):
        steps = list(decode_steps(lm, [5, 6, 7], DecodeRequest(method=method, max_new_tokens=12), runtime))
        assert all(s.method == method and len(s.verification.candidates[0].tokens) <= k for s in steps[1:])
        assert any(len(s.verification.candidates[0].tokens) == k for s in steps[1:])
    with pytest.raises(DecodingError, match="EAGLE needs a layer"):
        decode_steps(lm, [5, 6, 7], DecodeRequest(method=Method.EAGLE, max_new_tokens=4), Runtime(draft=model_draft))


# ----------------------------------------------------------------------------------------------
# Training


def test_training_lowers_the_loss_and_writes_a_layer_and_a_record(tmp_path):
    lm = tiny_model("llama")
    settings = TrainSettings(steps=40, batch=4, learning_rate=3e-3, checkpoint_every=20, answer_tokens=24)
    record = train(lm, PROMPTS, SOURCE, settings, tmp_path)
    first, last = sum(record.loss[:5]) / 5, sum(record.loss[-5:]) / 5
    assert last < 0.8 * first, (first, last)
    assert record.held_out_prompts == 1 and record.train_tokens > 0 and record.held_out_tokens > 0
    written = json.loads((tmp_path / "training.json").read_text())
    assert written["source"] == SOURCE.name and written["licence"] == SOURCE.licence and len(written["loss"]) == 40
    layer = load_eagle(tmp_path / "eagle.safetensors", lm.model, lm.name)
    assert 0 <= layer.accuracy["top1"] <= layer.accuracy["top5"] <= layer.accuracy["coverage"] <= 1
    assert layer.vocabulary is not None and len(layer.vocabulary) <= TINY_VOCAB


def test_a_stopped_run_resumes_from_its_checkpoint_to_the_same_state(tmp_path):
    lm = tiny_model("llama")
    settings = TrainSettings(steps=8, batch=4, learning_rate=1e-3, checkpoint_every=4, answer_tokens=12)
    whole = train(lm, PROMPTS, SOURCE, settings, tmp_path / "whole")
    stopped = train(lm, PROMPTS, SOURCE, TrainSettings(**{**settings.__dict__, "steps": 4}), tmp_path / "stopped")
    resumed = train(lm, PROMPTS, SOURCE, settings, tmp_path / "stopped")
    assert resumed.loss == whole.loss
    assert resumed.seconds > stopped.seconds
    a = load_eagle(tmp_path / "whole" / "eagle.safetensors", lm.model, lm.name)
    b = load_eagle(tmp_path / "stopped" / "eagle.safetensors", lm.model, lm.name)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_the_cli_drafts_with_a_layer_and_refuses_a_layer_of_another_model_in_one_line(tmp_path, capsys):
    """`python -m lab generate --method speculative --draft-model eagle --eagle PATH`: exact with a layer made
    for the model; one line of error for a layer made for another model."""
    from lab.cli import main

    folder = tmp_path / "tiny"
    lm = tiny_model("llama")
    lm.model.save_pretrained(folder)
    char_tokenizer().save_pretrained(folder)
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    save_eagle(eagle_for(lm.model, str(folder)), ours)
    save_eagle(eagle_for(tiny_model("qwen2").model, "another-model"), theirs)
    capsys.readouterr()
    common = ["generate", "--model", str(folder), "--prompt", "a, b, c, a, b", "--max-new-tokens", "8"]
    speculative = [*common, "--method", "speculative", "--draft-model", "eagle", "--json"]  # EAGLE's old spelling
    assert main([*speculative, "--eagle", str(ours)]) == 0
    drafted = json.loads(capsys.readouterr().out)
    assert main([*common, "--method", "greedy", "--json"]) == 0
    assert drafted["new_token_ids"] == json.loads(capsys.readouterr().out)["new_token_ids"]
    assert main([*speculative, "--eagle", str(theirs)]) == 2
    refusal = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(refusal) == 1 and refusal[0].startswith("error: ") and "another-model" in refusal[0]
    assert main([*speculative]) == 2
    assert "EAGLE needs a layer trained for" in capsys.readouterr().err
    assert main([*common, "--method", "greedy", "--eagle", str(ours)]) == 2
    assert "--eagle PATH is the layer of --method eagle" in capsys.readouterr().err
    assert main([*common, "--method", "eagle", "--eagle", str(ours), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["new_token_ids"] == drafted["new_token_ids"]
