"""Prompt lookup's working state on the device (working_state.OnDevice), beside its host proposer.

From the first step, the committed sequence; the earlier occurrences of its last tokens are found
and their distinct continuations laid out where the host lays them out (`PromptLookupOnDevice`).

What the device step shares with the other methods' (the tree, greedy verification, the copy-down, how a
state is kept with its step) is working_state's; tests/test_working_state.py checks it against the host step.
"""

from __future__ import annotations

import torch

from ..config import LookupConfig
from ..device.fixed import FixedStep
from ..method_spec import Resident
from ..step.decoding import GuessingDecoder
from ..working_state import OnDevice, at, kept_down, kept_with, verified


class PromptLookupOnDevice(OnDevice):
    """Prompt lookup's state: the committed sequence and its length. Each step finds, as lookup.find_matches does,
    the earlier occurrences of the sequence's last tokens (longest key first, then latest) and keeps the first
    `candidates` whose continuations differ: every start's longest matching key is measured at once, then the best
    start is taken and every start with the same continuation dropped, `candidates` times. The continuations are
    laid out as the host lays them out (chains after c, each as long as its continuation, side by side, then pad
    rows that see only themselves), so each row is fed where the host step feeds it."""

    def __init__(self, step: FixedStep, config: LookupConfig) -> None:
        super().__init__(step, None)
        device, shape = step.ids.device, step.shape
        self.config = config
        self.sequence = torch.zeros(shape.capacity + shape.kept, dtype=torch.long, device=device)
        self.count = torch.zeros((), dtype=torch.long, device=device)
        self.starts = torch.arange(self.sequence.shape[0], device=device)
        self.rows = torch.arange(shape.rows, device=device)
        self.reach = torch.arange(config.tokens, device=device)
        self.back = torch.arange(config.ngram, device=device)
        self.candidates = torch.zeros(config.candidates, config.tokens, dtype=torch.long, device=device)  # their rows
        self.real = torch.zeros(config.candidates, config.tokens, dtype=torch.bool, device=device)
        self.total = torch.zeros((), dtype=torch.long, device=device)  # the candidates' tokens

    def fill(self, sequence: list[int], length: int) -> None:
        self.sequence[: len(sequence)] = torch.tensor(sequence, device=self.sequence.device)
        self.count.fill_(len(sequence))
        self.step.length.fill_(length)

    def counted(self, offered: int) -> tuple[int, int]:
        return 1 + offered, offered

    def matches(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The chosen continuations (candidates x tokens) and their lengths (0 for a slot left empty)."""
        sequence, count, tokens = self.sequence, self.count, self.config.tokens
        before = self.starts[:, None] - 1 - self.back  # (positions, ngram): the key's tokens, last first
        key = sequence.index_select(0, (count - 1 - self.back).clamp(min=0))
        agree = (at(sequence, before) == key) & (before >= 0) & (self.back < count - 1)
        depth = agree.long().cumprod(dim=1).sum(dim=1)  # each start's longest matching key
        score = torch.where((depth > 0) & (self.starts < count), depth * self.starts.shape[0] + self.starts, -1)
        spans = at(sequence, (self.starts[:, None] + self.reach).clamp(max=self.starts.shape[0] - 1))
        lengths = (count - self.starts).clamp(0, tokens)
        chosen, chosen_lengths = [], []
        for _ in range(self.config.candidates):
            best = score.argmax().view(1)
            length = lengths.index_select(0, best)
            chosen_lengths.append(torch.where(score.index_select(0, best) >= 0, length, 0))
            chosen.append(spans.index_select(0, best))
            score = torch.where(taken(spans, lengths, best, self.reach), -1, score)
        return torch.cat(chosen), torch.cat(chosen_lengths)

    def propose(self) -> None:
        """The chosen continuations laid out as chains after c, side by side, then pad rows."""
        step, tokens = self.step, self.config.tokens
        current = self.sequence.index_select(0, self.count.view(1) - 1)
        spans, lengths = self.matches()
        ends = lengths.cumsum(0)
        offsets = 1 + ends - lengths
        which = torch.searchsorted(ends, self.rows - 1, right=True).clamp(max=lengths.shape[0] - 1)
        depth = self.rows - offsets.index_select(0, which)  # a row's place in its chain, from 0
        real = (self.rows >= 1) & (self.rows < 1 + ends[-1])
        step.ids[0] = torch.where(real, at(spans.view(-1), which * tokens + depth.clamp(0, tokens - 1)), current)
        columns, start = self.rows[None, :], offsets.index_select(0, which)[:, None]
        chain = (which[None, :] == which[:, None]) & (columns >= start) & (columns <= self.rows[:, None])
        seen = real[:, None] & (chain & real[None, :] | (columns == 0)) | (columns == self.rows[:, None])
        step.depths.copy_(torch.where(real, depth + 1, 0))
        step.tree.copy_(torch.zeros_like(step.tree).masked_fill(~seen, torch.finfo(step.tree.dtype).min))
        self.candidates.copy_((offsets[:, None] + self.reach).clamp(max=self.rows.shape[0] - 1))
        self.real.copy_(self.reach < lengths[:, None])
        self.total.copy_(ends[-1])

    def settle(self) -> torch.Tensor:
        step = self.step
        fed, argmax = step.ids[0], step.argmax.long()
        accepted, kept, block = verified(self.candidates, self.real, fed, argmax)
        report = torch.cat([accepted.view(1), self.total.view(1), block]).to(torch.int32)
        kept_down(step, accepted, kept)
        self.sequence.index_copy_(0, self.count + torch.arange(block.shape[0], device=block.device), block)
        self.count += 1 + accepted
        self.propose()
        return report


def taken(spans: torch.Tensor, lengths: torch.Tensor, best: torch.Tensor, reach: torch.Tensor) -> torch.Tensor:
    """The starts whose continuation is the one at `best` (as long, the same tokens): dropped once it is chosen."""
    span, length = spans.index_select(0, best), lengths.index_select(0, best)
    return (lengths == length) & ((spans == span) | (reach >= length)).all(dim=1)


def lookup_state(decoder: GuessingDecoder) -> OnDevice:
    passes, config = decoder.passes, decoder.proposer.config
    state = kept_with(passes.step, config, lambda: PromptLookupOnDevice(passes.step, config))
    state.load(decoder.sequence, passes.length)
    return state


# Prompt lookup moves to the device from its first step
RESIDENT = Resident(lambda request, planner: True, lambda decoder: True, lookup_state)
