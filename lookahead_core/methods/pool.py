"""The n-gram pool: where lookahead keeps the n-grams it harvested, and picks guesses from.

Each entry is an N-gram split into a key (its first token) and a continuation (the N-1 tokens
after it), remembered with the token that preceded it and where it came from: the prompt, the
Jacobi window, or the committed output. Under each key at most `capacity` continuations are
kept, most recent last; re-inserting one moves it to the end; the oldest is evicted beyond
capacity. Guesses prefer continuations whose preceding token also matches (a two-token key),
then fall back to the one-token key, most recent first.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from ..records import GuessReason, GuessSource


@dataclass
class PoolEntry:
    continuation: tuple[int, ...]
    previous: int | None
    source: GuessSource


@dataclass
class Guess:
    """A candidate continuation chosen for verification, and why it was chosen."""

    tokens: list[int]
    source: GuessSource
    reason: GuessReason


class NGramPool:
    def __init__(self, ngram: int, capacity: int) -> None:
        self.ngram = ngram
        self.capacity = capacity
        self._entries: dict[int, OrderedDict[tuple[int, ...], PoolEntry]] = {}
        self.size = 0

    def insert(self, key: int, continuation: list[int], previous: int | None, source: GuessSource) -> PoolEntry | None:
        """Add one n-gram (key + N-1 continuation tokens); return the entry it evicted, if any."""
        if self.capacity == 0:
            return None
        cont = tuple(continuation)
        bucket = self._entries.setdefault(key, OrderedDict())
        if cont in bucket:
            bucket.move_to_end(cont)
            entry = bucket[cont]
            entry.previous = previous if previous is not None else entry.previous
            return None
        bucket[cont] = PoolEntry(continuation=cont, previous=previous, source=source)
        self.size += 1
        if len(bucket) > self.capacity:
            _, evicted = bucket.popitem(last=False)
            self.size -= 1
            return evicted
        return None

    def insert_sequence(self, tokens: list[int], source: GuessSource) -> int:
        """Add every n-gram of a token sequence (for the prompt or committed output); return how many."""
        n = self.ngram
        count = 0
        for start in range(len(tokens) - n + 1):
            previous = tokens[start - 1] if start > 0 else None
            self.insert(tokens[start], tokens[start + 1 : start + n], previous, source)
            count += 1
        return count

    def entries(self, key: int) -> list[PoolEntry]:
        """The continuations under `key`, oldest first."""
        return list(self._entries.get(key, {}).values())

    def keys(self) -> list[int]:
        """The keys that hold continuations."""
        return list(self._entries)


def chosen_guesses(entries: list[PoolEntry], previous: int | None, limit: int) -> list[Guess]:
    """At most `limit` guesses from one key's `entries` (oldest first): those whose preceding token is `previous`
    (a two-token key match) first, then the rest, newest first within each."""
    newest_first = entries[::-1]
    both = [e for e in newest_first if previous is not None and e.previous == previous]
    rest = [e for e in newest_first if not (previous is not None and e.previous == previous)]
    chosen = [Guess(list(e.continuation), e.source, GuessReason.TWO_TOKEN_KEY) for e in both]
    chosen += [Guess(list(e.continuation), e.source, GuessReason.ONE_TOKEN_KEY) for e in rest]
    return chosen[:limit]
