"""Greedy and lookahead decoding as step generators: one JSON-ready record per forward pass.

Both decoders share the prefill (step 0) and the commit rules: stop at the first token of any
EOS id, even inside an accepted block, and never commit more than the remaining max_new_tokens.
A lookahead step feeds the current token, the Jacobi window and the guesses from the n-gram
pool in one forward pass, commits the guaranteed next token plus whatever verification accepted
(up to N tokens: the longest matching guess and the bonus token after it), and keeps in the KV
cache only the committed rows. The engine knows nothing of display: records hold token ids,
counts and measured seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from .config import LookaheadConfig
from .forward import decode_one_token, forward_tree, keep_rows, prefill
from .layout import step_layout
from .pool import Guess, NGramPool
from .window import JacobiWindow


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


def verify(
    guesses: list[Guess], guess_rows, argmax: list[int], next_token: int
) -> tuple[list[int], int | None, list[int]]:
    """Greedy verification: each guess's matched length, the winner (longest, first on ties), the block.

    A guess token is accepted while it equals the model's prediction for its position: the first
    against the guaranteed next token, each later one against the argmax of the row before it.
    The block is the guaranteed token, then the prediction after each accepted guess token:
    m accepted tokens commit m + 1, the last being the bonus token.
    """
    matched = []
    for guess, rows in zip(guesses, guess_rows, strict=True):
        m, expected = 0, next_token
        while m < len(guess.tokens) and guess.tokens[m] == expected:
            expected = argmax[rows[m]]
            m += 1
        matched.append(m)
    best = max(range(len(matched)), key=lambda i: (matched[i], -i), default=None)
    if best is None or matched[best] == 0:
        return matched, None, [next_token]
    return matched, best, [next_token] + [argmax[row] for row in guess_rows[best][: matched[best]]]


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


def lookahead_steps(
    model,
    prompt_ids: list[int],
    config: LookaheadConfig,
    max_new_tokens: int,
    eos_ids: frozenset[int],
    seed: int = 0,
) -> Iterator[dict]:
    """Lookahead decoding (Jacobi window + n-gram pool + greedy verification); output equals greedy."""
    cache, token, seconds = prefill(model, prompt_ids)
    sequence = list(prompt_ids) + [token]
    committed, stop = commit_block([token], max_new_tokens, eos_ids)
    yield {**prefill_record(prompt_ids, token, seconds, "lookahead"), "stop": stop}
    produced = 1
    pool = NGramPool(config.ngram, config.guesses)
    pool.insert_sequence(sequence, "prompt")
    pooled_upto = len(sequence)
    window = JacobiWindow.initial(token, prompt_ids, config.window, config.ngram, seed)
    step = 0
    while stop is None:
        step += 1
        start = time.perf_counter()
        current, previous = sequence[-1], sequence[-2]
        position = len(sequence) - 1
        entries = [[list(e.continuation), e.source] for e in pool.entries(current)]
        guesses = pool.guesses(current, previous, config.guesses)
        layout = step_layout(len(window.levels), window.width, len(guesses), config.ngram - 1)
        window_before = window.copy_levels()
        input_ids = [t for level in window_before for t in level]
        input_ids += [t for g in guesses for t in g.tokens]

        argmax, seconds = forward_tree(model, cache, input_ids, layout)

        new_level = [argmax[row] for row in layout.window_rows[-1]]
        matched, winner, block = verify(guesses, layout.guess_rows, argmax, argmax[0])
        committed, stop = commit_block(block, max_new_tokens - produced, eos_ids)
        accepted = len(block) - 1
        if stop is None:
            accepted_rows = [position + r for r in layout.guess_rows[winner][:accepted]] if accepted else []
            keep_rows(cache, position + 1, accepted_rows)

        harvested = window.harvest(new_level)
        sequence += committed
        produced += len(committed)
        added, evicted = [], []
        for key, continuation, chain_previous, source in fresh_ngrams(
            harvested, window_before, previous, sequence, pooled_upto, config.ngram
        ):
            gone = pool.insert(key, continuation, chain_previous, source)
            added.append([key, continuation, source])
            evicted += [[key, list(gone)]] if gone else []
        pooled_upto = len(sequence)
        window.advance(new_level, sequence[-1])
        yield {
            "step": step,
            "method": "lookahead",
            "kind": "decode",
            "position": position,
            "current_token": current,
            "window": window_before,
            "jacobi_update": new_level,
            "window_next": window.copy_levels(),
            "warming_up": len(window_before) < config.ngram - 1,
            "harvested": harvested,
            "pool_key": current,
            "pool_entries": entries,
            "pool_added": added,
            "pool_evicted": evicted,
            "pool_size": pool.size,
            "guesses": [g.tokens for g in guesses],
            "guess_sources": [g.source for g in guesses],
            "guess_reasons": [g.reason for g in guesses],
            "guess_predictions": [[argmax[r] for r in rows] for rows in layout.guess_rows],
            "matched": matched,
            "winner": winner,
            "block": block,
            "committed": committed,
            "sources": commit_sources(len(committed), accepted),
            "input_ids": input_ids,
            "parents": list(layout.parents),
            "position_ids": [position + d for d in layout.depths],
            "tokens_fed": layout.size,
            "forward_seconds": seconds,
            "step_seconds": time.perf_counter() - start,
            "note": "G = 0: no guesses are verified, so each step commits one token" if config.guesses == 0 else None,
            "stop": stop,
        }
