"""A trained draft's matrices kept in fewer bits on disk, and made whole again on loading.

Each row of a matrix is cut into groups of GROUP numbers. A group is kept as signed integers of `bits` bits (8, or
4 packed two to a byte) and one float16 scale, its largest magnitude over the largest integer: every number comes
back within half a scale step, and the largest within the scale's float16 rounding (2^-11 of it). A matrix `name`
is kept as two tensors, `name.q8` or `name.q4` (the integers) and `name.scale`. Kept as they are: a matrix whose
width is not a whole number of groups, one with a group so small that its scale would fall below float16's normal
range (where those bounds fail), and every other tensor. Loading restores each matrix in float32 (`restored`),
then the layer is cast to the model's dtype.

The shipped EAGLE layer (SmolLM2-135M-Instruct) keeps its MLP in 4 bits and its other matrices in 8: its file went
from 8,458,632 bytes (float16) to 3,192,092, and its first guess's accuracy on the spot check's 1,080 positions from
top-1 35.7% to 35.8%, top-5 61.4% to 60.7% (2-core CPU, 2026-11-28).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

GROUP = 32  # numbers sharing one scale
INTEGERS = {8: ".q8", 4: ".q4"}
SCALE = ".scale"


def kept(weight: torch.Tensor, bits: int) -> dict[str, torch.Tensor]:
    """`weight` (rows x columns, columns a multiple of GROUP) as its integers (int8; at 4 bits two to a uint8, the
    even column in the low nibble) and its float16 scales (rows x groups), under their suffixes."""
    top = 2 ** (bits - 1) - 1
    groups = weight.detach().float().reshape(weight.shape[0], -1, GROUP)
    scale = (groups.abs().amax(dim=2, keepdim=True) / top).half()
    safe = scale.float().masked_fill(scale == 0, 1.0)
    integers = (groups / safe).round().clamp(-top - 1, top).to(torch.int8).reshape(weight.shape)
    if bits == 4:
        nibbles = (integers & 0xF).to(torch.uint8)
        integers = nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)
    return {INTEGERS[bits]: integers.contiguous(), SCALE: scale.squeeze(2).contiguous()}


def whole(integers: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The float32 matrix that `kept` stored as `integers` and `scale`."""
    if integers.dtype == torch.uint8:  # 4 bits, two to a byte: sign-extend each nibble
        low, high = (integers & 0xF).to(torch.int8), (integers >> 4).to(torch.int8)
        integers = torch.stack([low, high], dim=2).reshape(integers.shape[0], -1)
        integers = torch.where(integers > 7, integers - 16, integers)
    groups = integers.float().reshape(integers.shape[0], -1, GROUP)
    return (groups * scale.float()[:, :, None]).reshape(integers.shape)


def keepable(weight: torch.Tensor, bits: int) -> bool:
    """Whether `kept` holds `weight` to its bounds: a whole number of groups a row, and every nonzero group's scale
    a normal float16 (a subnormal one rounds coarsely, and the group comes back steps off, or as zeros)."""
    if weight.shape[1] % GROUP:
        return False
    largest = weight.detach().float().reshape(weight.shape[0], -1, GROUP).abs().amax(dim=2)
    scales = largest[largest > 0] / (2 ** (bits - 1) - 1)
    return bool((scales >= torch.finfo(torch.float16).tiny).all())


def packed(tensors: dict[str, torch.Tensor], bits_of: Callable[[str], int | None]) -> dict[str, torch.Tensor]:
    """`tensors` to write: each floating matrix that `keepable` allows kept in `bits_of(name)` bits (None: as it
    is), every other tensor as it is."""
    out = {}
    for name, tensor in tensors.items():
        bits = bits_of(name) if tensor.is_floating_point() and tensor.dim() == 2 else None
        if bits is None or not keepable(tensor, bits):
            out[name] = tensor
        else:
            out |= {name + suffix: part for suffix, part in kept(tensor, bits).items()}
    return out


def restored(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors `packed` wrote, each kept matrix made whole again (float32); a file of plain tensors unchanged."""
    out = {}
    for name, tensor in tensors.items():
        base, suffix = name[: name.rfind(".")], name[name.rfind(".") :]
        if suffix in INTEGERS.values():
            out[base] = whole(tensor, tensors[base + SCALE])
        elif not (suffix == SCALE and any(base + s in tensors for s in INTEGERS.values())):
            out[name] = tensor
    return out
