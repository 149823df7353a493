"""Where a greedy output leaves plain greedy decoding's, and why: the two candidates' logits at that token.

In float32 every method's greedy output equals plain decoding's token for token. In bfloat16 or float16 a
step that feeds many rows computes the same logits in another shape, and rounds them differently: where two
candidates are nearly tied, the order can flip, and from that token on the outputs part. The record
(records.Divergence) keeps the token, the two logits and the dtype's rounding step there, so a student reads
"a near-tie flipped", measured, instead of "something went wrong".
"""

from __future__ import annotations

import math

import torch

from .device.forward import prefill
from .models import LoadedModel
from .records import Divergence
from .tokens import token_text


def first_difference(plain: list[int], other: list[int]) -> int | None:
    """The first index where the two outputs differ (over the shorter's length), or None."""
    return next((i for i, (a, b) in enumerate(zip(plain, other, strict=False)) if a != b), None)


def rounding_step(value: float, dtype: torch.dtype) -> float:
    """The spacing of `dtype`'s numbers at `value`'s size: the least change a rounding can make there."""
    exponent = math.floor(math.log2(max(abs(value), torch.finfo(dtype).tiny)))
    return torch.finfo(dtype).eps * 2.0**exponent


def divergence(lm: LoadedModel, prompt_ids: list[int], plain: list[int], other: list[int]) -> Divergence | None:
    """Where `other` (a method's new tokens) first leaves `plain` (plain greedy decoding's), with both candidates'
    logits from one pass over the prompt and the tokens both agree on; None where they agree throughout."""
    index = first_difference(plain, other)
    if index is None:
        return None
    _, result = prefill(lm.model, list(prompt_ids) + plain[:index])
    logits = result.logits[-1]
    plain_logit, other_logit = float(logits[plain[index]]), float(logits[other[index]])
    return Divergence(
        index=index,
        plain_token=plain[index],
        other_token=other[index],
        plain_text=token_text(lm.tokenizer, plain[index]),
        other_text=token_text(lm.tokenizer, other[index]),
        plain_logit=plain_logit,
        other_logit=other_logit,
        rounding_step=rounding_step(max(abs(plain_logit), abs(other_logit)), logits.dtype),
        dtype=str(logits.dtype).removeprefix("torch."),
    )
