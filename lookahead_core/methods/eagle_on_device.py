"""EAGLE's working state on the device (working_state.OnDevice), beside its host proposer.

After its first step (the host's drafting feeds the layer the prompt), the layer's own static KV cache, the
kept rows' hidden states with the tokens after them, and the chain of k the layer drafts from them, every step all k
(the confidence floor cuts the candidate, not the drafting: `EagleOnDevice`).

What the device step shares with the other methods' (the tree, greedy verification, the copy-down, how a
state is kept with its step) is working_state's; tests/test_working_state.py checks it against the host step.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache, DynamicCache

from ..device.fixed import FixedStep, SpanLayer
from ..method_spec import Resident
from ..step.decoding import GuessingDecoder
from ..working_state import OnDevice, fixed_tree, kept_down, kept_with, verified
from .draft import Draft


class EagleOnDevice(OnDevice):
    """EAGLE's state: the layer's own static KV cache (its E positions, each fed with the model's true feature
    there), the rows still to feed it (the last pass's kept rows' hidden states, with the tokens after them: the
    block) and the chain drafted from them. Its tree is a chain of k after c. Each step the pass verifies the chain
    (only its first m tokens, m cut by the confidence floor as the host cuts it), the kept rows' hidden states and
    the block are fed to the layer at [E, E + 1 + k) (the rows past 1 + accepted written there too: past E, so
    masked from every later row until the drafts or the next step's feed write over them), E advances by
    1 + accepted, and the layer drafts k tokens one row at a time from the last kept row's prediction, the j-th
    drafted row at E + j seeing the positions up to its own. All k are drafted every step (no host read decides
    when to stop): those past m are fed and cannot win."""

    drafts_inside = True

    def __init__(self, step: FixedStep, draft: Draft, model) -> None:
        device, k = step.ids.device, draft.tokens
        super().__init__(step, fixed_tree([-1, *range(k)], [list(range(1, k + 1))], device))
        self.layer, self.model, self.confidence = draft.model, model, draft.confidence
        self.head, self.embed = self.layer.head_for(model), model.get_input_embeddings()
        config, width = self.layer.body.config, self.layer.target.hidden_size
        # past the C committed positions: a last step's block, which the device keeps whole past the budget the host
        # commits, and the k - 1 rows drafted after it
        positions = step.shape.capacity + 2 * (1 + k)
        keys = torch.zeros(1, config.num_key_value_heads, positions, config.head_dim, dtype=self.layer.dtype)
        keys, values = keys.to(device), keys.clone().to(device)
        self.length = torch.zeros((), dtype=torch.long, device=device)  # E: the layer's positions with true features
        self.rows, self.reach = torch.arange(1 + k, device=device), torch.arange(k, device=device)
        self.columns = torch.arange(positions, device=device)
        self.fed_slots = torch.zeros(1 + k, dtype=torch.long, device=device)
        self.drafted_slot = torch.zeros(1, dtype=torch.long, device=device)
        self.fed_cache = Cache(layers=[SpanLayer(keys, values, self.length, self.fed_slots)])
        self.drafted_cache = Cache(layers=[SpanLayer(keys, values, self.length, self.drafted_slot)])
        self.fresh = torch.zeros(1 + k, width, dtype=model.dtype, device=device)  # the rows to feed: true features
        self.after = torch.zeros(1 + k, dtype=torch.long, device=device)  # and the token after each
        self.fresh_count = torch.zeros((), dtype=torch.long, device=device)
        self.real = torch.zeros(k, dtype=torch.bool, device=device)  # the chain's first m tokens
        self.offered = torch.zeros((), dtype=torch.long, device=device)  # m

    def fill(self, cache: DynamicCache | None, cached: int, fresh: torch.Tensor, after: list[int], length: int):
        """The host proposer's state in: its layer cache's `cached` positions, the features still to feed and the
        tokens after them."""
        layer = self.fed_cache.layers[0]
        if cached:
            layer.keys[:, :, :cached] = cache.layers[0].keys[:, :, :cached]
            layer.values[:, :, :cached] = cache.layers[0].values[:, :, :cached]
        self.length.fill_(cached)
        self.fresh[: len(after)] = fresh.to(self.fresh.dtype)
        self.after[: len(after)] = torch.tensor(after, device=self.after.device)
        self.fresh_count.fill_(len(after))
        self.tree.fit(self.step)
        self.step.length.fill_(length)

    def counted(self, offered: int) -> tuple[int, int]:
        return 1 + offered, offered

    def propose(self) -> None:
        """Feed the fresh rows, then draft k tokens from the last one's prediction; c and the chain are the next
        pass's ids, and the chain's first m tokens its candidate (m: up to the first below the confidence floor)."""
        feature, tokens, chances = self.fed(), [], []
        k, vocabulary = self.reach.shape[0], self.head.vocabulary
        for j in range(k):
            logits = self.head.scores(self.model, feature.to(self.model.dtype)).float()
            q = torch.softmax(logits[0], dim=-1)  # as draft.draft_token's greedy draw: its argmax and its chance
            index = q.argmax().view(1)
            chances.append(q.index_select(0, index))
            tokens.append(index if vocabulary is None else vocabulary.index_select(0, index))
            if j + 1 < k:
                feature = self.drafted(feature, tokens[-1], j)
        below = torch.cat(chances).double() < self.confidence  # as the host compares: a float32 chance, a float
        self.offered.copy_(torch.where(below.any(), below.long().argmax() + 1, k))
        self.real.copy_(self.reach < self.offered)
        current = self.after.index_select(0, self.fresh_count.view(1) - 1)
        self.step.ids[0, : self.tree.size] = torch.cat([current, *tokens])

    def fed(self) -> torch.Tensor:
        """The fresh rows through the layer at [E, E + 1 + k); E advanced by the real ones; the prediction (1, d) of
        the last real one."""
        positions = self.length + self.rows
        self.fed_slots.copy_(positions)
        embedded = self.embed(self.after[None]).to(self.layer.dtype)
        predicted = self.layer.features(
            self.fresh[None].to(self.layer.dtype), embedded, self.fed_cache, self.mask(positions), positions[None]
        )
        self.length += self.fresh_count
        return predicted[0].index_select(0, self.fresh_count.view(1) - 1)

    def drafted(self, feature: torch.Tensor, token: torch.Tensor, j: int) -> torch.Tensor:
        """The j-th drafted row (the predicted feature, the token drafted from it) at E + j; its prediction (1, d)."""
        position = (self.length + j).view(1)
        self.drafted_slot.copy_(position)
        embedded = self.embed(token[None]).to(self.layer.dtype)
        predicted = self.layer.features(
            feature[None].to(self.layer.dtype), embedded, self.drafted_cache, self.mask(position), position[None]
        )
        return predicted[0]

    def mask(self, positions: torch.Tensor) -> torch.Tensor:
        """Each row sees the columns up to its own position (a row is written at its position): (1, 1, rows, cols)."""
        seen = self.columns[None, :] <= positions[:, None]
        least = torch.finfo(self.layer.dtype).min
        return torch.zeros(seen.shape, dtype=self.layer.dtype, device=seen.device).masked_fill(~seen, least)[None, None]

    def settle(self) -> torch.Tensor:
        step = self.step
        fed, argmax = step.ids[0, : self.tree.size], step.argmax.long()
        accepted, kept, block = verified(self.tree.rows, self.real[None], fed, argmax)
        report = torch.cat([accepted.view(1), self.offered.view(1), block]).to(torch.int32)
        kept_down(step, accepted, kept)
        self.fresh.copy_(step.states.index_select(0, torch.cat([kept.new_zeros(1), kept])))
        self.after.copy_(block)
        self.fresh_count.copy_(1 + accepted)
        self.propose()
        return report


def eagle_held(decoder: GuessingDecoder) -> OnDevice:
    passes, draft = decoder.passes, decoder.proposer.draft
    key = (draft.model, draft.tokens, draft.confidence)
    return kept_with(passes.step, key, lambda: EagleOnDevice(passes.step, draft, decoder.model))


def eagle_recorded(decoder: GuessingDecoder) -> OnDevice:
    """EAGLE's state with its `settle` recorded at the prefill, on a stand-in (an empty layer cache, c to feed):
    the first step's host drafting then fills the layer's cache, and no timed step holds the recording."""
    state = eagle_held(decoder)
    if state.run is None:
        fresh = torch.zeros(1, state.fresh.shape[1], dtype=state.fresh.dtype)
        state.load(None, 0, fresh, decoder.sequence[-1:], decoder.passes.length)
    return state


def eagle_state(decoder: GuessingDecoder) -> OnDevice:
    state, proposer = eagle_held(decoder), decoder.proposer
    after = decoder.sequence[proposer.cached + 1 :]
    state.load(proposer.cache, proposer.cached, decoder.fresh, after, decoder.passes.length)
    return state


# EAGLE moves to the device after its first step, whose host drafting feeds the layer the prompt's features (more
# rows than a step's)
RESIDENT = Resident(lambda request, planner: True, lambda decoder: decoder.step_index >= 1, eagle_state, eagle_recorded)
