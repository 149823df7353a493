"""A draft's matrices kept in 8 and 4 bits (lookahead_core.methods.stored): what comes back, and within what."""

from __future__ import annotations

import pytest
import torch

from lookahead_core.methods.stored import GROUP, kept, packed, restored, whole


@pytest.mark.parametrize("bits", [8, 4])
def test_a_kept_matrix_comes_back_within_half_a_step_and_its_largest_numbers_within_their_scales_rounding(bits):
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


def test_four_bits_read_every_byte_as_its_two_signed_nibbles_low_first():
    """Every byte from 0 to 255, packed by hand: each nibble from -8 to 7 in either place of a byte. A swapped
    nibble order, a lost sign or a sign taken at the wrong value is caught."""
    low, high = torch.arange(256) % 16, torch.arange(256) // 16
    signed = lambda nibble: torch.where(nibble > 7, nibble - 16, nibble)  # noqa: E731
    expected = torch.stack([signed(low), signed(high)], dim=1).reshape(16, GROUP).float()
    back = whole(torch.arange(256, dtype=torch.uint8).reshape(16, GROUP // 2), torch.ones(16, 1, dtype=torch.half))
    assert torch.equal(back, expected)
    assert back.min() == -8 and back.max() == 7


def test_a_matrix_whose_scale_would_be_subnormal_in_float16_is_kept_as_it_is():
    """A group whose largest number is 1e-6 has a scale below float16's normal range: it would come back as zeros.
    Such a matrix is kept whole; one of ordinary numbers beside it is packed."""
    tiny = torch.full((2, GROUP), 1e-6)
    written = packed({"tiny.weight": tiny, "usual.weight": torch.ones(2, GROUP)}, lambda name: 8)
    assert written["tiny.weight"] is tiny and "usual.weight.q8" in written
    assert whole(*kept(tiny, 8).values()).abs().max() < 0.5e-6  # what packing it would have lost: the control


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
