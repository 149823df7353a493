"""Sampling settings and the processed distribution P that sampled decoding draws from.

P is what `generate(do_sample=True)` samples from: the logits through transformers' own warpers,
in its order (temperature, then top-k, then top-p), then a softmax. Every draw comes from one
seeded `torch.Generator` per run, so the same seed and settings give the same output on a device.
Temperature 0 means greedy decoding, and the engine then takes the greedy path unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from .config import SettingsError
from .records import SamplingRecord


@dataclass(frozen=True)
class SamplingConfig:
    """Temperature (0 = greedy), top-k (0 = off), top-p (1 = off) and the seed of the run's generator."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        checks = (
            ("temperature", self.temperature, isinstance(self.temperature, int | float) and 0 <= self.temperature),
            ("top-k", self.top_k, isinstance(self.top_k, int) and self.top_k >= 0),
            ("top-p", self.top_p, isinstance(self.top_p, int | float) and 0 < self.top_p <= 1),
            ("seed", self.seed, isinstance(self.seed, int) and 0 <= self.seed < 2**63),
        )
        for name, value, ok in checks:
            if isinstance(value, bool) or not ok or (isinstance(value, float) and not math.isfinite(value)):
                raise SettingsError(
                    f"{name} out of range: got {value!r} (temperature >= 0, top-k >= 0, 0 < top-p <= 1)"
                )

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0

    def generator(self, device: torch.device, stream: int = 0) -> torch.Generator:
        """A fresh generator for one run, seeded with `seed` (CPU draws on a CPU model, else on its device).

        Another `stream` (a draft model's, 1) gets a seed of its own: draws that must be independent
        of the verifier's, such as a draft's samples, must not replay the verifier's random numbers.
        """
        return torch.Generator(device=device).manual_seed((self.seed ^ stream * 0x9E3779B97F4A7C15) % 2**64)

    def record(self) -> SamplingRecord | None:
        """These settings as a trace records them (None for greedy)."""
        if self.is_greedy:
            return None
        return SamplingRecord(
            temperature=float(self.temperature), top_k=self.top_k, top_p=float(self.top_p), seed=self.seed
        )

    def for_prompt(self, index: int) -> SamplingConfig:
        """The settings for prompt `index` of a file: seed S + index, so identical prompts sample independently."""
        return SamplingConfig(self.temperature, self.top_k, self.top_p, self.seed + index)


GREEDY = SamplingConfig()


@lru_cache(maxsize=32)
def warpers(sampling: SamplingConfig) -> LogitsProcessorList:
    """transformers' warpers for these settings, in the order `generate(do_sample=True)` applies them."""
    chain = LogitsProcessorList()
    if sampling.temperature != 1.0:
        chain.append(TemperatureLogitsWarper(float(sampling.temperature)))
    if sampling.top_k:
        chain.append(TopKLogitsWarper(top_k=sampling.top_k))
    if sampling.top_p < 1.0:
        chain.append(TopPLogitsWarper(top_p=float(sampling.top_p)))
    return chain


def probabilities(logits: torch.Tensor, sampling: SamplingConfig) -> torch.Tensor:
    """P for each row of `logits` (rows, vocab), in float32: warped as generate warps, then softmax."""
    scores = warpers(sampling)(None, logits.float())
    return torch.softmax(scores, dim=-1)


def draw(probs: torch.Tensor, generator: torch.Generator) -> int:
    """One token drawn from `probs` (a distribution over the vocabulary, not necessarily normalised)."""
    return int(torch.multinomial(probs, 1, generator=generator))


def uniform(generator: torch.Generator, device: torch.device) -> float:
    """One uniform draw in [0, 1) from the run's generator."""
    return float(torch.rand((), generator=generator, device=device))
