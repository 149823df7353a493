"""The mask panel: one row per token fed, each drawing exactly the columns its `InputRow.sees` lists."""

from __future__ import annotations

import dataclasses

from tests.visual_checks import check_mask, decode_steps, example
from visuals import mask


def test_mask_has_one_row_per_token_fed_and_the_recorded_visibility(run):
    trace = run.trace
    for _, record in decode_steps(run):
        check_mask(record, trace.vocab)


def test_mask_draws_the_recorded_rows_not_a_rederivation():
    """The mask is InputRow.sees as the engine passed it: an unusual visibility is drawn as it stands."""
    trace = example("python").trace
    record = trace.steps[3]
    odd = [dataclasses.replace(row, sees=[0, i] if i % 2 else [i]) for i, row in enumerate(record.rows)]
    altered = dataclasses.replace(record, rows=odd)
    check_mask(altered, trace.vocab)
    assert mask.runs([0, 1, 2, 5, 7, 8]) == [(0, 3), (5, 1), (7, 2)]
