"""Greedy verification and the commit rules, on hand-made candidates and argmax rows.

Verification decides which guessed tokens are kept, so each of its outputs is checked by hand: the
verdict (the winner, the block and its bonus token, each candidate's matched length) and the record
the recorder makes of it (the per-candidate predictions and verdicts). Row 0 of the argmax is always
the current token c.
"""

from __future__ import annotations

import pytest

from lookahead_core.methods.lookahead import guess_branch, window_branch
from lookahead_core.methods.pool import Guess
from lookahead_core.methods.window import JacobiWindow
from lookahead_core.records import (
    Draw,
    GuessReason,
    GuessSource,
    PlanReason,
    SampledPosition,
    StopReason,
    TokenSource,
    Verdict,
)
from lookahead_core.step.decoding import lay_out
from lookahead_core.step.planning import Plan
from lookahead_core.step.proposers import Candidate, Proposal
from lookahead_core.step.recorder import commit_sources, verification_record
from lookahead_core.step.verify import StepVerdict, commit, verify


def guess(tokens: list[int], first_row: int, lane: int) -> Candidate:
    """A guess laid out as a chain from `first_row`."""
    rows = tuple(range(first_row, first_row + len(tokens)))
    return Candidate(tuple(tokens), rows, GuessSource.PROMPT, GuessReason.ONE_TOKEN_KEY, lane)


# rows: 0 c | 1-3 guess 0 | 4-6 guess 1 | 7-9 guess 2 | 10-12 guess 3 | 13-14 guess 4
CANDIDATES = [
    guess([5, 9, 9], 1, 0),  # 5 is right, then 9 is not what row 1 predicts (6)
    guess([5, 6, 7], 4, 1),  # all three right: the winner
    guess([5, 6, 0], 7, 2),  # two right
    guess([5, 6, 7], 10, 3),  # as long as the winner, but later
    guess([4, 6], 13, 4),  # the first token is not the guaranteed one
]
ARGMAX = [5, 6, 0, 0, 6, 7, 8, 6, 7, 0, 6, 7, 1, 0, 0]


def test_the_longest_match_wins_and_brings_its_bonus_token():
    result = verify(CANDIDATES, ARGMAX)
    assert result.winner == 1 and result.accepted == 3
    assert result.block == (5, 6, 7, 8)  # the guaranteed token, three accepted, the prediction after the last
    assert result.bonus == 8
    assert result.matched == (1, 3, 2, 3, 0)


def test_each_candidate_records_what_the_model_expected_and_how_much_matched():
    record = verification_record(CANDIDATES, verify(CANDIDATES, ARGMAX), ARGMAX)
    assert (record.guaranteed, record.winner, record.accepted, record.bonus) == (5, 1, 3, 8)
    assert record.block == [5, 6, 7, 8]
    candidates = record.candidates
    assert [c.expected for c in candidates] == [[5, 6, 0], [5, 6, 7], [5, 6, 7], [5, 6, 7], [5, 0]]
    assert [c.matched for c in candidates] == [1, 3, 2, 3, 0]
    assert [c.verdict for c in candidates] == [
        Verdict.SHORTER,
        Verdict.WON,
        Verdict.SHORTER,
        Verdict.TIED_LATER,
        Verdict.NO_MATCH,
    ]
    first = candidates[0]  # the candidate itself is kept as verified: its tokens, rows, origin
    assert (first.tokens, first.rows, first.lane, first.source) == ([5, 9, 9], [1, 2, 3], 0, GuessSource.PROMPT)


def test_no_match_commits_the_guaranteed_token_alone():
    argmax = [3, *ARGMAX[1:]]
    result = verify(CANDIDATES, argmax)
    assert result.winner is None and result.accepted == 0 and result.bonus is None
    assert result.block == (3,)
    assert {c.verdict for c in verification_record(CANDIDATES, result, argmax).candidates} == {Verdict.NO_MATCH}
    assert verify([], [7]).block == (7,)


def test_a_tie_goes_to_the_first_candidate():
    candidates, argmax = [guess([4, 1], 1, 0), guess([4, 2], 3, 1)], [4, 9, 9, 9, 9]
    result = verify(candidates, argmax)
    assert result.winner == 0 and result.block == (4, 9)
    verdicts = [c.verdict for c in verification_record(candidates, result, argmax).candidates]
    assert verdicts == [Verdict.WON, Verdict.TIED_LATER]


def test_a_window_trajectory_is_verified_like_a_guess():
    # rows: 0 c | 1 L0C1 | 2 L0C2 | 3 L1C0 | 4 L1C1 | 5 L1C2 | 6 g0 | 7 g1
    window = JacobiWindow([[10, 11, 12], [21, 22, 0]], ngram=3)
    offered = guess_branch(Guess([11, 41], GuessSource.OUTPUT, GuessReason.TWO_TOKEN_KEY), 0)
    plan = Plan(feed_window=True, guesses=1, length=2, reason=PlanReason.PAPER, offered=1)
    fed = lay_out(10, Proposal(window_branch(window), [offered]), plan)
    result = verify(fed.candidates, [11, 12, 0, 0, 0, 30, 40, 0])
    # guess [11, 41]: 11 is the guaranteed token, 41 is not what row 6 predicts (40).
    # trajectory of column 2 [11, 12, 0]: each is what the row before it predicts.
    assert result.matched == (1, 0, 1, 3)
    assert [c.source for c in fed.candidates] == [GuessSource.OUTPUT] + [GuessSource.TRAJECTORY] * 3
    assert fed.candidates[3].reason == GuessReason.JACOBI_TRAJECTORY and fed.candidates[3].lane == 2
    assert result.winner == 3 and result.block == (11, 12, 0, 30) and result.bonus == 30


def greedy_outcome(accepted: int) -> StepVerdict:
    block = tuple(range(accepted + 1))
    return StepVerdict(block=block, accepted=accepted, winner=0 if accepted else None, matched=(accepted,))


def test_commit_sources_name_the_guaranteed_accepted_and_bonus_tokens():
    assert commit_sources(4, greedy_outcome(3)) == [
        TokenSource.GUARANTEED,
        TokenSource.ACCEPTED,
        TokenSource.ACCEPTED,
        TokenSource.BONUS,
    ]
    assert commit_sources(1, greedy_outcome(0)) == [TokenSource.GUARANTEED]
    cut = commit_sources(2, greedy_outcome(3))  # a block cut by the rules
    assert cut == [TokenSource.GUARANTEED, TokenSource.ACCEPTED]


def test_sampled_commit_sources_name_accepted_then_bonus_or_drawn_tokens():
    drawn = SampledPosition(
        offset=1,
        row=3,
        draws=[Draw(token=9, probability=0.4, chance=0.4, uniform=0.7, accepted=False)],
        token=5,
        drawn=True,
    )
    offered = SampledPosition(
        offset=0,
        row=0,
        draws=[Draw(token=4, probability=0.5, chance=0.5, uniform=0.1, accepted=True)],
        token=4,
        drawn=False,
    )
    sampled = StepVerdict(block=(4, 5), accepted=1, winner=0, matched=(1,), positions=(offered, drawn))
    assert sampled.bonus is None
    assert commit_sources(2, sampled) == [TokenSource.ACCEPTED, TokenSource.SAMPLED]
    free = SampledPosition(offset=1, row=1, draws=[], token=5, drawn=True)  # nothing left to try: the bonus
    bonus = StepVerdict(block=(4, 5), accepted=1, winner=0, matched=(1,), positions=(offered, free))
    assert bonus.bonus == 5
    assert commit_sources(2, bonus) == [TokenSource.ACCEPTED, TokenSource.BONUS]


@pytest.mark.parametrize(
    ("block", "remaining", "eos", "expected"),
    [
        ([1, 2, 3], 5, frozenset(), ([1, 2, 3], None)),
        ([1, 2, 3], 2, frozenset(), ([1, 2], StopReason.MAX_NEW_TOKENS)),
        ([1, 2, 3], 3, frozenset(), ([1, 2, 3], StopReason.MAX_NEW_TOKENS)),
        ([1, 2, 3], 5, frozenset({2, 9}), ([1, 2], StopReason.EOS)),
        ([1, 2, 3], 1, frozenset({2}), ([1], StopReason.MAX_NEW_TOKENS)),
        ([2, 2, 3], 1, frozenset({2}), ([2], StopReason.EOS)),
    ],
)
def test_commit_stops_at_any_eos_and_at_the_budget(block, remaining, eos, expected):
    assert commit(block, remaining, eos) == expected
