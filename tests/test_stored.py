"""A draft's matrices kept in 8 and 4 bits (lookahead_core.stored): what comes back, and within what."""

from __future__ import annotations

import pytest
import torch

from lookahead_core.stored import GROUP, kept, packed, restored, whole


@pytest.mark.parametrize("bits", [8, 4])
def test_a_kept_matrix_comes_back_within_half_a_step_of_its_group_and_its_largest_number_exactly(bits):
    rows = torch.randn(6, 3 * GROUP, generator=torch.Generator().manual_seed(bits))
    weight = rows * torch.logspace(-3, 0, 6)[:, None]  # rows of every magnitude
    parts = kept(weight, bits)
    back = whole(*parts.values())
    step = parts[".scale"].float().repeat_interleave(GROUP, dim=1)
    assert back.shape == weight.shape and back.dtype == torch.float32
    assert bool(((back - weight).abs() <= step / 2 + 1e-3 * step).all())
    assert bool(((back - weight).abs() > step / 4).any())  # it does round: the bound is not met by identity
    largest = weight.reshape(6, 3, GROUP).abs().argmax(dim=2)
    for row, group in ((0, 0), (5, 2)):
        at = group * GROUP + int(largest[row, group])
        assert abs(float(back[row, at]) - float(weight[row, at])) <= 1e-3 * abs(float(weight[row, at]))
    assert parts[".q4" if bits == 4 else ".q8"].numel() == weight.numel() * bits // 8


def test_four_bits_keep_each_integer_from_minus_eight_to_seven_and_its_place():
    """Every nibble value in every place of a byte: a swapped nibble order or a lost sign is caught."""
    integers = torch.arange(-8, 8, dtype=torch.float32).repeat(2)  # 32 numbers, both places of each value
    weight = torch.stack([integers, integers.flip(0)]) * 0.5  # scale = 8 * 0.5 / 7
    back = whole(*kept(weight, 4).values())
    scale = torch.tensor(4.0 / 7).half().float()
    assert torch.equal(back, (weight / scale).round().clamp(-8, 7) * scale)


def test_a_file_keeps_only_its_wide_floating_matrices_in_fewer_bits_and_restores_every_tensor_by_name():
    tensors = {
        "fc.weight": torch.randn(4, 2 * GROUP),
        "mlp.weight": torch.randn(4, GROUP),
        "odd.weight": torch.randn(4, GROUP + 1),  # not a whole number of groups: kept as it is
        "norm.weight": torch.randn(GROUP),
        "vocabulary": torch.tensor([3, 1, 2]),
    }
    written = packed(tensors, lambda name: 4 if name.startswith("mlp") else 8)
    assert set(written) == {
        "fc.weight.q8",
        "fc.weight.scale",
        "mlp.weight.q4",
        "mlp.weight.scale",
        "odd.weight",
        "norm.weight",
        "vocabulary",
    }
    back = restored(written)
    assert list(back) == ["fc.weight", "mlp.weight", "odd.weight", "norm.weight", "vocabulary"]
    for name in ("odd.weight", "norm.weight", "vocabulary"):
        assert back[name] is tensors[name]
    assert torch.equal(back["mlp.weight"], whole(written["mlp.weight.q4"], written["mlp.weight.scale"]))
    assert restored(tensors) == tensors  # a file of plain tensors (an older layer) loads as it was
