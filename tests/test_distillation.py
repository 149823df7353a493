"""Self-distillation's shared data and command (lab.train.distillation): the held-out split, the prompts' file
formats, and the `train` command both trained parts offer."""

from __future__ import annotations

from dataclasses import fields

import pytest

from lab.train import eagle, medusa
from lab.train.distillation import SELF_INSTRUCT, cut_after_eos, held_out_cut, read_prompts, train_command


@pytest.mark.parametrize(("prompts", "share", "cut"), [(427, 0.1, 384), (10, 0.1, 9), (2, 0.5, 1), (1, 0.1, 1)])
def test_the_last_share_of_the_prompts_is_held_out_at_least_one_unless_there_is_one(prompts, share, cut):
    assert held_out_cut(prompts, share) == cut


def test_prompts_are_read_from_json_lines_or_plain_text(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"instruction": "Sort these."}\n\n{"prompt": "Name a river."}\n{"text": "Add 2 and 3."}\n')
    text = tmp_path / "p.txt"
    text.write_text("Sort these.\n  \nName a river.\n")
    assert read_prompts(jsonl) == ["Sort these.", "Name a river.", "Add 2 and 3."]
    assert read_prompts(text) == ["Sort these.", "Name a river."]


def test_an_answer_ends_at_its_first_end_of_sequence_token():
    assert cut_after_eos([5, 6, 2, 0, 0], {2}) == [5, 6, 2]
    assert cut_after_eos([5, 6], {2}) == [5, 6]


@pytest.mark.parametrize("module", [medusa, eagle], ids=["medusa", "eagle"])
def test_the_train_command_has_a_flag_for_every_setting_and_records_the_shipped_source(module, tmp_path):
    command = train_command("prog", "doc", "parts", "folder", module.TrainSettings)
    args = command.parse_args(["train", "--steps", "7", "--learning-rate", "0.5", "--out", str(tmp_path)])
    assert (args.steps, args.learning_rate, args.out) == (7, 0.5, tmp_path)
    assert (args.source, args.licence) == (SELF_INSTRUCT.name, SELF_INSTRUCT.licence)
    defaults = module.TrainSettings()
    assert all(
        getattr(args, f.name) == getattr(defaults, f.name)
        for f in fields(defaults)
        if f.name not in ("steps", "learning_rate")
    )
