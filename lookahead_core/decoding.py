"""Greedy and lookahead decoding as step generators: one JSON-ready record per forward pass.

Both decoders share the prefill (step 0) and the commit rules: stop at the first token of any
EOS id, even inside an accepted block, and never commit more than the remaining max_new_tokens.
A lookahead step feeds the current token, the Jacobi window and the guesses from the n-gram
pool in one forward pass, commits the guaranteed next token plus whatever verification accepted
(the longest matching guess or window trajectory, and the bonus token after it), and keeps in
the KV cache only the committed rows. The engine knows nothing of display: records hold token ids,
counts and measured seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from .config import LookaheadConfig
from .forward import decode_one_token, forward_tree, keep_rows, prefill
from .layout import step_layout
from .planning import FullPlanner
from .pool import NGramPool
from .window import JacobiWindow

NO_GUESSES_NOTE = (
    "G = 0: no n-gram guesses are verified; only the window's own Jacobi trajectories can add tokens "
    "(plain Jacobi decoding), so the n-gram pool is idle"
)


class DecodingError(ValueError):
    """The request cannot be decoded as asked (empty prompt, no room in the context, ...)."""


def check_request(prompt_ids: list[int], max_new_tokens: int, context_length: int | None, reach: int = 0) -> None:
    """Refuse an empty prompt, a non-positive budget, or a request that outruns the model's context.

    `reach` is how far past the last committed token a step's guesses may sit (0 for greedy).
    """
    if not prompt_ids:
        raise DecodingError("the prompt is empty: give at least one token")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise DecodingError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    if context_length is not None and len(prompt_ids) + max_new_tokens + reach > context_length:
        raise DecodingError(
            f"the prompt has {len(prompt_ids)} tokens; with {max_new_tokens} new tokens"
            + (f" and a lookahead reach of {reach}" if reach else "")
            + f" it would exceed the model's context of {context_length} tokens"
        )


def commit_block(block: list[int], remaining: int, eos_ids: frozenset[int]) -> tuple[list[int], str | None]:
    """The tokens of `block` that may be committed, and why decoding stops after them (or None)."""
    committed = []
    for token in block[:remaining]:
        committed.append(token)
        if token in eos_ids:
            return committed, "eos"
    return committed, ("max_new_tokens" if len(committed) == remaining else None)


def prefill_record(prompt_ids: list[int], token: int, seconds: float, method: str) -> dict:
    return {
        "step": 0,
        "method": method,
        "kind": "prefill",
        "position": 0,
        "tokens_fed": len(prompt_ids),
        "committed": [token],
        "sources": ["guaranteed"],
        "forward_seconds": seconds,
        "step_seconds": seconds,
    }


# ----------------------------------------------------------------------------------------------
# Greedy


def greedy_steps(model, prompt_ids: list[int], max_new_tokens: int, eos_ids: frozenset[int]) -> Iterator[dict]:
    """Plain autoregressive greedy decoding: one committed token per forward pass."""
    cache, token, seconds = prefill(model, prompt_ids)
    committed, stop = commit_block([token], max_new_tokens, eos_ids)
    yield {**prefill_record(prompt_ids, token, seconds, "greedy"), "stop": stop}
    produced = 1
    step = 0
    while stop is None:
        step += 1
        start = time.perf_counter()
        position = len(prompt_ids) + produced - 1
        token, seconds = decode_one_token(model, cache, token)
        committed, stop = commit_block([token], max_new_tokens - produced, eos_ids)
        produced += 1
        yield {
            "step": step,
            "method": "greedy",
            "kind": "decode",
            "position": position,
            "tokens_fed": 1,
            "committed": committed,
            "sources": ["guaranteed"],
            "forward_seconds": seconds,
            "step_seconds": time.perf_counter() - start,
            "stop": stop,
        }


# ----------------------------------------------------------------------------------------------
# Lookahead


def verify(paths, input_ids: list[int], argmax: list[int]) -> tuple[list[int], int | None, list[int]]:
    """Greedy verification of token paths after c: each path's matched length, the winner, the block.

    A path is a list of rows that each extend the one before (the first extends c). Its token is
    accepted while it equals the model's prediction for its position: the first against the
    guaranteed next token (argmax of c's row), each later one against the argmax of the row
    before it. The longest match wins (the first on ties). The block is the guaranteed token,
    then the prediction after each accepted token: m accepted tokens commit m + 1, the last
    being the bonus token.
    """
    matched = []
    for rows in paths:
        m, expected = 0, argmax[0]
        while m < len(rows) and input_ids[rows[m]] == expected:
            expected = argmax[rows[m]]
            m += 1
        matched.append(m)
    best = max(range(len(matched)), key=lambda i: (matched[i], -i), default=None)
    if best is None or matched[best] == 0:
        return matched, None, [argmax[0]]
    return matched, best, [argmax[0]] + [argmax[row] for row in paths[best][: matched[best]]]


def commit_sources(length: int, accepted: int) -> list[str]:
    """How each committed token was produced: the guaranteed next token, verified guess tokens, the bonus."""
    if accepted == 0:
        return ["guaranteed"][:length]
    return (["guaranteed"] + ["accepted"] * (accepted - 1) + ["bonus"])[:length]


def fresh_ngrams(harvested, window_before, previous, sequence, pooled_upto, ngram):
    """This step's n-grams for the pool, as (key, continuation, preceding token, source).

    The window's harvested columns (preceded by the level-0 token left of them, or by the token
    before c), then every n-gram of the committed output that ends after `pooled_upto`.
    """
    for j, column in enumerate(harvested):
        yield column[0], column[1:], window_before[0][j - 1] if j else previous, "window"
    for start in range(max(pooled_upto - ngram + 1, 0), len(sequence) - ngram + 1):
        yield sequence[start], sequence[start + 1 : start + ngram], sequence[start - 1] if start else None, "output"


class LookaheadDecoder:
    """One lookahead run's state: KV cache, committed sequence, Jacobi window and n-gram pool."""

    def __init__(
        self, model, prompt_ids, config: LookaheadConfig, max_new_tokens: int, eos_ids, seed: int = 0, planner=None
    ):
        self.model, self.config, self.max_new_tokens, self.eos_ids = model, config, max_new_tokens, eos_ids
        self.planner = planner or FullPlanner()
        self.prompt_ids = list(prompt_ids)
        self.seed = seed
        self.pool = NGramPool(config.ngram, config.guesses)
        self.stop: str | None = None
        self.step_index = 0

    def prefill(self) -> dict:
        """Step 0: run the prompt, commit the first token, seed the pool and the window from the prompt."""
        self.cache, token, seconds = prefill(self.model, self.prompt_ids)
        committed, self.stop = commit_block([token], self.max_new_tokens, self.eos_ids)
        self.sequence = self.prompt_ids + committed
        self.pool.insert_sequence(self.sequence, "prompt")
        self.pooled_upto = len(self.sequence)
        self.window = JacobiWindow.initial(token, self.prompt_ids, self.config.window, self.config.ngram, self.seed)
        return {**prefill_record(self.prompt_ids, token, seconds, "lookahead"), "stop": self.stop}

    def step(self) -> dict:
        """One forward pass: feed c, the window and the guesses the plan picked; verify; update window, pool, cache."""
        start = time.perf_counter()
        self.step_index += 1
        current, previous, position = self.sequence[-1], self.sequence[-2], len(self.sequence) - 1
        entries = [[list(e.continuation), e.source] for e in self.pool.entries(current)]
        offered = self.pool.guesses(current, previous, self.config.guesses)
        warming_up = not self.window.is_full
        window_tokens = sum(map(len, self.window.levels)) - 1
        plan = self.planner.plan(offered, window_tokens, self.config.ngram - 1)
        guesses = plan.guesses
        window_before = self.window.copy_levels() if plan.feed_window else [[current]]
        guess_length = len(guesses[0].tokens) if guesses else 0
        layout = step_layout(len(window_before), len(window_before[0]), len(guesses), guess_length)
        input_ids = [t for level in window_before for t in level] + [t for g in guesses for t in g.tokens]

        argmax, seconds = forward_tree(self.model, self.cache, input_ids, layout)

        # The guesses first, so a guess wins a tie; then the window's own Jacobi trajectories,
        # which cost no extra input: a trajectory that matches is accepted like a guess.
        paths = layout.guess_rows + layout.trajectory_rows
        matched, best, block = verify(paths, input_ids, argmax)
        committed, self.stop = commit_block(block, self.max_new_tokens - self.produced, self.eos_ids)
        accepted = len(block) - 1
        if self.stop is None:
            keep_rows(self.cache, position + 1, [position + r for r in paths[best][:accepted]] if accepted else [])
        self.sequence += committed
        if plan.feed_window:
            new_level = [argmax[row] for row in layout.window_rows[-1]]
            harvested = self.window.harvest(new_level)
            self.window.advance(new_level, self.sequence[-1])
        else:
            new_level, harvested = [], []
            self.window.reanchor(self.sequence[-1])
        added, evicted = self.update_pool(harvested, window_before, previous)
        record = {
            "step": self.step_index,
            "method": "lookahead",
            "kind": "decode",
            "position": position,
            "current_token": current,
            "plan": plan.as_record(len(offered)),
            "window": window_before,
            "jacobi_update": new_level,
            "window_predictions": [[argmax[row] for row in rows] for rows in layout.window_rows],
            "window_next": self.window.copy_levels(),
            "warming_up": warming_up,
            "harvested": harvested,
            "pool_key": current,
            "pool_entries": entries,
            "pool_added": added,
            "pool_evicted": evicted,
            "pool_size": self.pool.size,
            "guesses": [g.tokens for g in guesses],
            "guess_sources": [g.source for g in guesses],
            "guess_reasons": [g.reason for g in guesses],
            "guess_predictions": [[argmax[r] for r in rows] for rows in layout.guess_rows],
            "matched": matched[: len(guesses)],
            "winner": best if best is not None and best < len(guesses) else None,
            "trajectories": [[input_ids[row] for row in rows] for rows in layout.trajectory_rows],
            "trajectory_matched": matched[len(guesses) :],
            "trajectory_winner": best - len(guesses) if best is not None and best >= len(guesses) else None,
            "block": block,
            "committed": committed,
            "sources": commit_sources(len(committed), accepted),
            "input_ids": input_ids,
            "parents": list(layout.parents),
            "position_ids": [position + d for d in layout.depths],
            "tokens_fed": layout.size,
            "forward_seconds": seconds,
            "step_seconds": time.perf_counter() - start,
            "note": NO_GUESSES_NOTE if self.config.guesses == 0 else None,
            "stop": self.stop,
        }
        self.planner.observe(record)
        return record

    @property
    def produced(self) -> int:
        return len(self.sequence) - len(self.prompt_ids)

    def update_pool(self, harvested, window_before, previous: int) -> tuple[list, list]:
        """Insert this step's fresh n-grams (`previous` precedes c); return what was added and evicted."""
        added, evicted = [], []
        fresh = fresh_ngrams(harvested, window_before, previous, self.sequence, self.pooled_upto, self.config.ngram)
        for key, continuation, previous, source in fresh:
            gone = self.pool.insert(key, continuation, previous, source)
            added.append([key, continuation, source])
            evicted += [[key, list(gone)]] if gone else []
        self.pooled_upto = len(self.sequence)
        return added, evicted


def lookahead_steps(
    model,
    prompt_ids: list[int],
    config: LookaheadConfig,
    max_new_tokens: int,
    eos_ids: frozenset[int],
    seed: int = 0,
    planner=None,
) -> Iterator[dict]:
    """Lookahead decoding (Jacobi window + n-gram pool + greedy verification); output equals greedy.

    `planner` picks each step's input (default: the paper's full window and G guesses).
    """
    decoder = LookaheadDecoder(model, prompt_ids, config, max_new_tokens, eos_ids, seed, planner)
    yield decoder.prefill()
    while decoder.stop is None:
        yield decoder.step()
