"""The Jacobi proposer on a hand-made prompt, with hand-made argmax rows in place of a model.

`propose` must offer the window (its column trajectories as free candidates) and the pool's
guesses for c, two-token key first; `observe` must apply the Jacobi update, harvest the columns
and the committed output into the pool, and report both as the step's WindowRecord and
PoolRecord. Each step here is decided the way the decoder does it: lay out, verify, commit.
"""

from __future__ import annotations

import pytest

from lookahead_core.config import LookaheadConfig
from lookahead_core.methods.lookahead import JacobiProposer
from lookahead_core.methods.window import JacobiWindow
from lookahead_core.records import (
    Branch,
    GuessReason,
    GuessSource,
    NGram,
    PlanReason,
    PoolEntry,
    VerificationRecord,
)
from lookahead_core.step.decoding import lay_out
from lookahead_core.step.planning import FullPlanner, Plan
from lookahead_core.step.proposers import Outcome, ProposerReport, StepContext
from lookahead_core.step.recorder import verification_record
from lookahead_core.step.verify import commit, verify

CONFIG = LookaheadConfig(window=2, ngram=3, guesses=3)
# Under key 1 the prompt pools (2, 3) after 7, (4, 5) after 9 and (6, 6) after 5, oldest first.
PROMPT = [7, 1, 2, 3, 9, 1, 4, 5, 1, 6, 6, 9]
SEQUENCE = [*PROMPT, 1]  # the prefill committed 1: c = 1, the token before it 9


@pytest.fixture
def proposer() -> JacobiProposer:
    """The proposer after the prefill, its window's random fill replaced by known tokens 50, 51."""
    proposer = JacobiProposer(CONFIG, SEQUENCE, PROMPT)
    proposer.window = JacobiWindow([[1, 50, 51]], CONFIG.ngram)
    return proposer


def decide(
    proposer: JacobiProposer, sequence: list[int], step: int, argmax: list[int], plan: Plan | None = None
) -> tuple[list[int], VerificationRecord, ProposerReport]:
    """One step with `argmax` as the model's output: the new sequence, the verification, the report."""
    proposal = proposer.propose(StepContext(sequence, step))
    plan = plan or FullPlanner().plan(proposal)
    fed = lay_out(sequence[-1], proposal, plan)
    assert len(argmax) == len(fed.tokens), fed.tokens
    verdict = verify(fed.candidates, argmax)
    committed, _ = commit(verdict.block, 100, frozenset())
    sequence = sequence + committed
    window_argmax = [argmax[0], *(argmax[r] for r in fed.window_rows)] if plan.feed_window else []
    outcome = Outcome(sequence, step, plan.feed_window, window_argmax, fed.candidates, verdict)
    proposer.observe(outcome)
    return sequence, verification_record(fed.candidates, verdict, argmax), proposer.report(outcome)


# Step 1 rows: 0 c=1 | 1 L0C1=50 | 2 L0C2=51 | 3-4 guess 0 (4, 5) | 5-6 guess 1 (6, 6) | 7-8 guess 2 (2, 3).
# The model predicts 6 after c, and 8 after guess 1's first token: guess 1 wins one token, bonus 8.
STEP_1_ARGMAX = [6, 60, 61, 0, 0, 8, 0, 0, 0]


def test_the_proposer_starts_from_the_prompt():
    proposer = JacobiProposer(CONFIG, SEQUENCE, PROMPT)
    assert proposer.pool.size == len(SEQUENCE) - CONFIG.ngram + 1  # every n-gram, all distinct here
    level = proposer.window.levels[0]
    assert level[0] == 1 and len(level) == CONFIG.window + CONFIG.ngram - 2 and set(level[1:]) <= set(PROMPT)
    assert proposer.window.origins == [0]


def test_propose_offers_the_window_and_its_trajectories(proposer):
    window = proposer.propose(StepContext(SEQUENCE, 1)).window
    assert window.kind == Branch.WINDOW and window.tokens == (50, 51) and window.parents == (-1, 0)
    # One level: column 0 is c itself, so only columns 1 and 2 have a trajectory to verify.
    assert [(c.tokens, c.rows, c.lane) for c in window.candidates] == [((50,), (0,), 1), ((50, 51), (0, 1), 2)]
    assert {(c.source, c.reason) for c in window.candidates} == {
        (GuessSource.TRAJECTORY, GuessReason.JACOBI_TRAJECTORY)
    }


def test_propose_offers_the_pool_guesses_two_token_key_first(proposer):
    """(4, 5) followed 9, as c does now, so it comes first though (6, 6) is newer; then newest first."""
    guesses = proposer.propose(StepContext(SEQUENCE, 1)).guesses
    assert [g.tokens for g in guesses] == [(4, 5), (6, 6), (2, 3)]
    assert [g.candidates[0].reason for g in guesses] == [GuessReason.TWO_TOKEN_KEY] + [GuessReason.ONE_TOKEN_KEY] * 2
    assert [g.candidates[0].source for g in guesses] == [GuessSource.PROMPT] * 3
    assert [g.places for g in guesses] == [((lane, 0), (lane, 1)) for lane in range(3)]
    assert {g.kind for g in guesses} == {Branch.GUESS}


def test_observe_applies_the_jacobi_update_and_records_the_window_before_it(proposer):
    sequence, verification, report = decide(proposer, SEQUENCE, 1, STEP_1_ARGMAX)
    assert verification.block == [6, 8] and sequence == [*SEQUENCE, 6, 8]
    window = report.window
    assert window.fed and window.warming_up
    assert window.levels == [[1, 50, 51]] and window.origins == [0]
    assert window.update == [6, 60, 61]  # the argmax of c and of each level-0 row
    assert window.harvested == []  # still warming up: no column is a whole n-gram yet
    # Warm-up: every level drops its first column, the update goes on top, c becomes the new last token.
    assert proposer.window.levels == [[8, 51], [60, 61]] and proposer.window.origins == [0, 1]


def test_observe_records_the_pool_entries_with_their_guess_and_what_changed(proposer):
    _, _, report = decide(proposer, SEQUENCE, 1, STEP_1_ARGMAX)
    pool = report.pool
    assert (pool.key, pool.previous) == (1, 9)
    assert pool.entries == [  # oldest first, as they stood before the step
        PoolEntry(continuation=[2, 3], source=GuessSource.PROMPT, guess=2),
        PoolEntry(continuation=[4, 5], source=GuessSource.PROMPT, guess=0),
        PoolEntry(continuation=[6, 6], source=GuessSource.PROMPT, guess=1),
    ]
    # The committed 6, 8 complete two output n-grams: 9 1 6 and 1 6 8, which evicts key 1's oldest.
    assert pool.added == [
        NGram(key=9, continuation=[1, 6], source=GuessSource.OUTPUT),
        NGram(key=1, continuation=[6, 8], source=GuessSource.OUTPUT),
    ]
    assert pool.evicted == [NGram(key=1, continuation=[2, 3], source=GuessSource.PROMPT)]
    assert (pool.size_before, pool.size) == (11, 12) == (pool.size_before, proposer.pool.size)


def test_a_full_window_harvests_its_columns_into_the_pool(proposer):
    sequence, _, _ = decide(proposer, SEQUENCE, 1, STEP_1_ARGMAX)
    # Step 2 rows: 0 c=8 | 1 L0C1=51 | 2 L1C0=60 | 3 L1C1=61; no n-gram starts with 8, so no guess.
    sequence, verification, report = decide(proposer, sequence, 2, [70, 71, 72, 73])
    assert verification.block == [70] and verification.winner is None
    window = report.window
    assert not window.warming_up and window.levels == [[8, 51], [60, 61]] and window.origins == [0, 1]
    assert window.update == [72, 73]  # the argmax of the top level's rows
    assert window.harvested == [[8, 60, 72], [51, 61, 73]]  # each column bottom to top, then its update
    assert report.pool.entries == [] and (report.pool.key, report.pool.previous) == (8, 6)
    assert report.pool.added == [
        NGram(key=8, continuation=[60, 72], source=GuessSource.WINDOW),
        NGram(key=51, continuation=[61, 73], source=GuessSource.WINDOW),
        NGram(key=6, continuation=[8, 70], source=GuessSource.OUTPUT),
    ]
    assert report.pool.evicted == [] and report.pool.size == 15
    # Full: level 0 drops out, the others move down, the update (from step 2) goes on top.
    assert proposer.window.levels == [[70, 61], [72, 73]] and proposer.window.origins == [1, 2]


def test_a_step_that_leaves_the_window_out_keeps_it_and_marks_only_verified_guesses(proposer):
    plan = Plan(feed_window=False, guesses=1, length=2, reason=PlanReason.BEST_RATIO, offered=3)
    # Rows: 0 c=1 | 1-2 guess 0 (4, 5): both accepted, bonus 9.
    sequence, verification, report = decide(proposer, SEQUENCE, 1, [4, 5, 9], plan)
    assert verification.block == [4, 5, 9] and sequence[-1] == 9
    assert not report.window.fed and report.window.update == [] and report.window.harvested == []
    assert proposer.window.levels == [[9, 50, 51]] and proposer.window.origins == [0]
    assert [e.guess for e in report.pool.entries] == [None, 0, None]  # guesses 1 and 2 were not verified
