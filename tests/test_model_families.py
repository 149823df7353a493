"""Every family of docs/models.md's table, as a tiny random config: exact past a 16-token sliding window, or refused.

The sweep (lab/tools/families.py) is the same one that writes the table. A negative control shows it
catches a sliding-window bug: with the sliding layers' mask left as wide as the full layers',
the sliding families differ from `generate`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoConfig

from lab.tools import families
from lookahead_core.request import DecodeRequest
from lookahead_core.trace import decode_steps
from lookahead_core.tree import attention
from lookahead_core.tree.attention import SLIDING, UnsupportedModel, attention_plan

REFUSED = {"Falcon (ALiBi)", "BLOOM (ALiBi)", "MPT (ALiBi)"}
SWEPT: dict[str, families.Outcome] = {}  # filled by the parametrised test, read by the page's check


@pytest.mark.heavy
@pytest.mark.parametrize("family", families.FAMILIES, ids=lambda f: f.name)
def test_each_family_is_exact_past_the_window_or_refused(family):
    outcome = families.sweep_family(family)
    SWEPT[family.name] = outcome
    expected = "refused" if family.name in REFUSED else "exact"
    assert outcome.verdict == expected, outcome.detail


@pytest.mark.heavy  # reads what the sweep above found
def test_the_models_page_table_is_the_sweeps():
    if len(SWEPT) < len(families.FAMILIES):
        pytest.skip("the sweep did not run for every family in this session")
    page = (Path(__file__).parent.parent / "docs" / "models.md").read_text()
    outcomes = [SWEPT[f.name] for f in families.FAMILIES]
    assert families.with_table(page, outcomes) == page, "run: python -m lab.families --page docs/models.md"


@pytest.mark.heavy
def test_the_sweep_catches_a_sliding_layer_that_sees_too_far(monkeypatch):
    monkeypatch.setattr(attention, "beyond_window", lambda depths, past, window, device: torch.zeros((), dtype=bool))
    sliding = [f for f in families.FAMILIES if f.sliding]
    verdicts = {f.name: families.sweep_family(f).verdict for f in sliding}
    assert set(verdicts.values()) == {"differs"}, verdicts


def test_a_refused_family_is_refused_before_decoding_with_the_engines_error():
    lm = families.tiny_model(next(f for f in families.FAMILIES if f.model_type == "bloom"))
    with pytest.raises(UnsupportedModel, match="bloom cannot be run exactly by lookahead: its ALiBi"):
        decode_steps(lm, [5, 6, 7], DecodeRequest(lookahead=families.SETTINGS[0], max_new_tokens=4))


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        ({"model_type": "llama", "_attn_implementation": "flash_attention_2"}, "flash_attention_2 attention kernel"),
        ({"model_type": "llama", "attention_chunk_size": 8}, "chunked_attention"),
        ({"model_type": "qwen3_next"}, "linear_attention"),
        ({"model_type": "t5"}, "encoder-decoder"),
    ],
)
def test_attention_the_engine_cannot_mask_is_refused_with_its_reason(settings, reason):
    model_type = settings.pop("model_type")
    kernel = settings.pop("_attn_implementation", None)
    config = AutoConfig.for_model(model_type, **settings)
    if kernel:
        config._attn_implementation = kernel
    with pytest.raises(UnsupportedModel, match=reason):
        attention_plan(config)


def test_sliding_layers_with_different_windows_are_refused():
    config = families.Family("x", "gemma3_text", {"sliding_window": 16}).config()
    config.layer_types = ["sliding_attention", "full_attention"]
    plan = attention_plan(config)
    assert plan.window == 16 and plan.mixed and plan.sliding_layers == 1
    config.layer_types = [SLIDING, SLIDING]
    config.per_layer_config = {1: {"sliding_window": 8}}  # a heterogeneous config: layer 1 slides over 8
    with pytest.raises(UnsupportedModel, match="different windows"):
        attention_plan(config)


def test_steps_record_what_a_sliding_layer_saw():
    family = next(f for f in families.FAMILIES if f.model_type == "gemma3_text")
    lm = families.tiny_model(family)
    steps = list(
        decode_steps(lm, families.sweep_prompt("x"), DecodeRequest(lookahead=families.SETTINGS[1], max_new_tokens=40))
    )
    window = families.WINDOW
    assert lm.describe()["sliding_window"] == window and lm.describe()["sliding_layers"] == 2
    for step in steps[1:]:
        sliding = step.sliding
        assert sliding.window == window and sliding.layers == 2
        for i, row in enumerate(step.rows):
            assert sliding.prefix_from[i] == max(0, row.position - window + 1)
            assert sliding.sees[i] == [r for r in row.sees if row.position - step.rows[r].position < window]
    assert steps[1].sliding.prefix_from[0] > 0, "the prompt is longer than the window: its start is hidden"
    plain = families.tiny_model(families.FAMILIES[0])
    assert all(
        s.sliding is None
        for s in decode_steps(plain, [5, 6, 7], DecodeRequest(lookahead=families.SETTINGS[0], max_new_tokens=6))
    )


def test_the_mask_panel_shows_the_sliding_layers_mask_from_the_record():
    from visuals.mask import mask_html

    family = next(f for f in families.FAMILIES if f.model_type == "gemma3_text")
    lm = families.tiny_model(family)
    steps = list(
        decode_steps(lm, families.sweep_prompt("x"), DecodeRequest(lookahead=families.SETTINGS[1], max_new_tokens=6))
    )
    vocab = {str(i): chr(65 + i % 26) for i in range(families.VOCAB)}
    html = mask_html(steps[1], vocab)
    assert html.count("<svg") == 2 and "Sliding-window layers (2 of them, window 16)" in html
    first = steps[1].sliding.prefix_from[0]
    assert f"row 0 sees prefix positions {first} to {steps[1].position - 1}" in html
    plain = families.tiny_model(families.FAMILIES[0])
    record = list(decode_steps(plain, [5, 6, 7], DecodeRequest(lookahead=families.SETTINGS[0], max_new_tokens=4)))[1]
    assert mask_html(record, vocab).count("<svg") == 1


def test_a_refused_model_ends_the_cli_and_the_bench_with_one_line_and_status_2(default_model, tmp_path, capsys):
    from transformers import AutoModelForCausalLM, BloomConfig

    from lab.cli import main

    config = BloomConfig(vocab_size=len(default_model.tokenizer), hidden_size=32, n_layer=2, n_head=4)
    AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path)
    default_model.tokenizer.save_pretrained(tmp_path)
    capsys.readouterr()  # saving reports its progress on stderr
    for command in (["generate", "--prompt", "Hi"], ["bench", "--dataset", "humaneval", "--limit", "1"]):
        assert main([*command, "--model", str(tmp_path), "--device", "cpu", "--max-new-tokens", "4"]) == 2
        err = capsys.readouterr().err  # loading reports progress on stderr before the verdict
        assert err.splitlines()[-1].startswith("error: bloom cannot be run exactly by lookahead: its ALiBi")
        assert "Traceback" not in err
