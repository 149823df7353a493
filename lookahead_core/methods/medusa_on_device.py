"""Medusa's working state on the device (working_state.OnDevice), beside its host proposer.

From the first step, the current token and the hidden state behind it; the heads' top choices fill the
sparse tree, the pass verifies it, and the hidden state of the last row kept is the next step's.

What the device step shares with the other methods' (the tree, greedy verification, the copy-down, how a
state is kept with its step) is working_state's; tests/test_working_state.py checks it against the host step.
"""

from __future__ import annotations

import torch

from ..device.fixed import FixedStep
from ..method_spec import Resident
from ..step.decoding import GuessingDecoder
from ..working_state import OnDevice, fixed_tree, kept_down, kept_with, verified


class MedusaOnDevice(OnDevice):
    """Medusa's state: the current token and the last hidden state of the row whose prediction it is. Its tree
    is the heads' sparse tree after c (medusa.tree_branch), each root-to-leaf path a candidate; each step the heads
    read the hidden state, their top choices fill the tree, and the hidden state of the last row kept is the next's."""

    def __init__(self, step: FixedStep, medusa, model) -> None:
        """`medusa`: the run's heads and tree (medusa.Medusa, not imported: medusa.py's spec names this module)."""
        device, tree = step.ids.device, medusa.tree
        row = {path: 1 + r for r, path in enumerate(tree)}
        parents = [-1, *(row[p[:-1]] if len(p) > 1 else 0 for p in tree)]
        inner = {p[:-1] for p in tree}
        paths = [[row[leaf[:j]] for j in range(1, len(leaf) + 1)] for leaf in tree if leaf not in inner]
        super().__init__(step, fixed_tree(parents, paths, device))
        self.medusa, self.model, self.width = medusa, model, max(medusa.widths)
        heads = medusa.heads.heads
        self.choices = torch.tensor([p[-1] * heads + len(p) - 1 for p in tree], device=device)  # into (width, K)
        self.verified_tokens = sum(map(len, paths))
        self.current = torch.zeros(1, dtype=torch.long, device=device)
        self.hidden = torch.zeros(medusa.heads.target.hidden_size, dtype=model.dtype, device=device)

    def fill(self, current: int, hidden: torch.Tensor, length: int) -> None:
        self.current.fill_(current)
        self.hidden.copy_(hidden)
        self.tree.fit(self.step)
        self.step.length.fill_(length)

    def counted(self, offered: int) -> tuple[int, int]:
        return self.tree.size, self.verified_tokens

    def propose(self) -> None:
        """The heads' top choices for the hidden state, filling the tree after c."""
        _, top = self.medusa.heads.top_scores(self.model, self.hidden, self.width)
        guesses = top.indices.reshape(-1).index_select(0, self.choices)
        self.step.ids[0, : self.tree.size] = torch.cat([self.current, guesses])

    def settle(self) -> torch.Tensor:
        step = self.step
        fed, argmax = step.ids[0, : self.tree.size], step.argmax.long()
        accepted, kept, block = verified(self.tree.rows, self.tree.real, fed, argmax)
        kept_down(step, accepted, kept)
        last = torch.cat([kept.new_zeros(1), kept]).index_select(0, accepted.view(1))
        self.hidden.copy_(step.states.index_select(0, last)[0])
        self.current.copy_(block.index_select(0, accepted.view(1)))
        self.propose()
        return torch.cat([accepted.view(1), accepted.new_zeros(1), block]).to(torch.int32)


def medusa_state(decoder: GuessingDecoder) -> OnDevice:
    passes, medusa = decoder.passes, decoder.proposer.medusa
    key = (medusa.heads, medusa.tree)
    state = kept_with(passes.step, key, lambda: MedusaOnDevice(passes.step, medusa, decoder.model))
    state.load(decoder.sequence[-1], decoder.fresh[-1], passes.length)
    return state


# Medusa moves to the device from its first step
RESIDENT = Resident(lambda request, planner: True, lambda decoder: True, medusa_state)
