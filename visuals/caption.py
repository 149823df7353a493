"""The caption of every step: what happened in this forward pass, in plain words, from its record.

Built from the record alone, e.g. "The key ‘def’ had 3 n-grams in the pool; guess 2 matched 3
tokens, so this one forward pass committed 4 tokens.", or, when the window's own trajectory won,
"...; no guess beat the window: column 3's Jacobi trajectory matched 2 tokens, so ...". Prompt
lookup, speculative decoding, Medusa and suffix decoding say what their matches, their draft chain, the heads'
tree or the tree of what followed the longest match did.
"""

from __future__ import annotations

from lookahead_core.records import (
    METHODS,
    DraftRecord,
    GuessSource,
    HeadsRecord,
    PlanReason,
    StepKind,
    StepRecord,
    SuffixRecord,
    TokenSource,
    Trace,
)

from .markup import escape
from .methods import STOP_WORDS, candidate_kind, draft_words
from .plans import plan_words
from .tokens import quoted

NO_GUESSES = (
    "G = 0: no n-gram guesses are verified; only the window's own Jacobi trajectories can add tokens "
    "(plain Jacobi decoding), so the n-gram pool is idle."
)


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else many or word + 's'}"


def prefill_caption(trace: Trace, record: StepRecord) -> str:
    vocab = trace.vocab
    prompt = len(trace.meta.prompt_token_ids)
    return (
        f"Prefill: the model reads the {prompt}-token prompt in one forward pass and "
        f"{'predicts' if record.sources[0] == TokenSource.GUARANTEED else 'samples'} the "
        f"first new token {quoted(vocab, record.committed[0])}. {METHODS[trace.meta.method].prefill}"
    )


def guesses_clause(record: StepRecord, vocab: dict) -> str:
    """Prompt lookup's matches, the draft's chain or the heads' tree, and how far the winner matched."""
    candidates = record.verification.candidates
    winner = winner_of(record)
    if (draft := record.report(DraftRecord)) is not None:
        drafted, passes = len(draft.tokens), plural(draft.forward_passes, "pass", "passes")
        clause = f"The draft model drafted {plural(drafted, 'token')} in {passes}"
        return clause + (f"; the target agreed with the first {winner.matched}" if winner else "; the first was wrong")
    if (heads := record.report(HeadsRecord)) is not None:
        paths = plural(len(candidates), "path")
        clause = f"The heads' guesses filled a tree of {plural(len(heads.tree), 'node')}: {paths} verified"
        return clause + (f"; path {winner.lane + 1} matched {plural(winner.matched, 'token')}" if winner else "")
    if record.report(SuffixRecord) is not None:
        return suffix_clause(record)
    if not candidates:
        return "The last tokens occur nowhere earlier in the text, so nothing was verified"
    clause = f"The last tokens occur earlier in the text: {plural(len(candidates), 'match', 'matches')} verified"
    return clause + (f"; match {winner.lane + 1} agreed for {plural(winner.matched, 'token')}" if winner else "")


def suffix_clause(record: StepRecord) -> str:
    """Suffix decoding: the longest match, how often it occurred, its tree and how far the winning path matched."""
    suffix, winner = record.report(SuffixRecord), winner_of(record)
    if not suffix.nodes:
        if not suffix.match:
            return "The last token occurs nowhere earlier, in this run or the earlier ones, so nothing was verified"
        return (
            f"The last {plural(len(suffix.match), 'token')} occurred {plural(suffix.found, 'time')} before, but "
            "nothing followed them often enough to guess, so nothing was verified"
        )
    paths = plural(len(record.verification.candidates), "path")
    clause = (
        f"The last {plural(len(suffix.match), 'token')} occurred {plural(suffix.found, 'time')} before; what "
        f"followed grew a tree of {plural(len(suffix.nodes), 'node')}: {paths} verified"
    )
    return clause + (f"; path {winner.lane + 1} matched {plural(winner.matched, 'token')}" if winner else "")


def winner_of(record: StepRecord):
    verification = record.verification
    return verification.candidates[verification.winner] if verification.winner is not None else None


def trajectory_clause(record: StepRecord) -> str:
    """What the winning trajectory did, e.g. "column 3's Jacobi trajectory matched 2 tokens"."""
    winner = winner_of(record)
    return f"column {winner.lane}'s Jacobi trajectory matched {plural(winner.matched, 'token')}"


def trajectory_won(record: StepRecord) -> bool:
    winner = winner_of(record)
    return winner is not None and winner.source == GuessSource.TRAJECTORY


def pool_clause(record: StepRecord, vocab: dict) -> str:
    """What the key's n-grams and, when they lost, the window's trajectories gave verification."""
    key = quoted(vocab, record.pool.key)
    entries = len(record.pool.entries)
    guesses = sum(c.source != GuessSource.TRAJECTORY for c in record.verification.candidates)
    if entries == 0:
        clause = f"The key {key} had no n-gram in the pool to verify"
        return clause + (f", but the window had a match: {trajectory_clause(record)}" if trajectory_won(record) else "")
    picked = "" if guesses == entries else f" and {guesses} of them were verified"
    clause = f"The key {key} had {plural(entries, 'n-gram')} in the pool{picked}; "
    if trajectory_won(record):
        return clause + f"no guess beat the window: {trajectory_clause(record)}"
    winner = winner_of(record)
    if winner is None:
        first = quoted(vocab, record.verification.guaranteed)
        if guesses == 0:  # the plan verified none of them: say so, not that none matched
            clause = f"The key {key} had {plural(entries, 'n-gram')} in the pool but the plan verified none of them"
            traj = f", and no window trajectory began with the guaranteed next token {first}"
            return clause + (traj if record.window.fed else "")
        nor = ", nor did any of the window's trajectories" if record.window.fed else ""
        return clause + f"none began with the guaranteed next token {first}{nor}"
    return clause + f"guess {winner.lane + 1} matched {plural(winner.matched, 'token')}"


def window_clause(record: StepRecord, vocab: dict) -> str:
    """For G = 0, where only the window's trajectories are verified: what they did."""
    if trajectory_won(record):
        clause = trajectory_clause(record)
        return clause[0].upper() + clause[1:]
    if record.verification.candidates:
        return (
            f"No window trajectory began with the guaranteed next token {quoted(vocab, record.verification.guaranteed)}"
        )
    return "Nothing was verified"


def commit_clause(record: StepRecord, vocab: dict) -> str:
    count = len(record.committed)
    if count == 1:
        return f"this forward pass committed only the guaranteed next token {quoted(vocab, record.committed[0])}"
    path = candidate_kind(winner_of(record))
    accepted = record.sources.count(TokenSource.ACCEPTED)
    parts = [f"the guaranteed next token (the {path}'s first token matched it)"]
    if accepted:
        parts.append(plural(accepted, "more accepted token"))
    if TokenSource.BONUS in record.sources:
        parts.append("the bonus token")
    listed = ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"this one forward pass committed {plural(count, 'token')}: {listed}"


def draw_words(vocab: dict, draw) -> str:
    token = quoted(vocab, draw.token)
    if draw.draft_probability is not None:
        rule = f"min(1, P/q) = min(1, {draw.probability:.2f}/{draw.draft_probability:.2f}) = {draw.chance:.2f}"
        if draw.accepted:
            return f"the draft's {token} was accepted with probability {rule} (the draw was {draw.uniform:.2f})"
        return (
            f"the draft's {token} was rejected (the draw, {draw.uniform:.2f}, was not below {rule}), "
            "so q was taken out of P"
        )
    if draw.accepted:
        chance, below = f"{draw.probability:.2f}", f"{draw.uniform:.2f}"
        return f"{token} was accepted with probability {chance} (the draw, {below}, fell below it)"
    return (
        f"{token} was rejected (the draw, {draw.uniform:.2f}, was not below its probability {draw.probability:.2f}), "
        "so it was taken out of P"
    )


def sampled_sentences(record: StepRecord, vocab: dict) -> list[str]:
    """Sampling, in plain words: at each position, each candidate's probability, the draw and the verdict."""
    sentences = []
    for position in record.verification.positions:
        parts = [draw_words(vocab, d) for d in position.draws]
        token = quoted(vocab, position.token)
        if position.drawn and position.draws:
            parts.append(f"so {token} was drawn from what remained of P")
        elif position.drawn and position.offset:
            parts.append(f"the bonus token {token} was drawn from P after the last accepted token")
        elif position.drawn:
            parts.append(f"no candidate offered a token here, so {token} was drawn from P")
        where = record.position + 1 + position.offset
        sentences.append(f"At position {where}: " + "; ".join(parts) + ".")
    count = len(record.committed)
    sentences.append(f"So this one forward pass committed {plural(count, 'token')}.")
    return sentences


def plan_sentence(record: StepRecord) -> str:
    """For a cost-aware step: what the planner fed and why, with its measured figures."""
    if record.plan is None or record.plan.reason in (PlanReason.PAPER, PlanReason.ALL_PROPOSED):
        return ""
    words = plan_words(record.plan)
    return f"Plan: {words[0].upper() + words[1:]}."


def step_caption(trace: Trace, index: int) -> str:
    """The caption of step `index` as HTML (token text escaped).

    With G = 0 the pool is idle and only the window's trajectories are reported.
    """
    record = trace.steps[index]
    vocab = trace.vocab
    if record.kind == StepKind.PREFILL:
        return prefill_caption(trace, record)
    sentences = [escape(plan_sentence(record))] if plan_sentence(record) else []
    if record.verification.positions:
        sentences += sampled_sentences(record, vocab)
    elif not METHODS[trace.meta.method].window:
        sentences.append(f"{guesses_clause(record, vocab)}, so {commit_clause(record, vocab)}.")
    elif trace.meta.settings.lookahead.guesses == 0:
        sentences.append(escape(NO_GUESSES))
        sentences.append(f"{window_clause(record, vocab)}, so {commit_clause(record, vocab)}.")
    else:
        if record.window.fed and record.window.warming_up:
            levels = plural(len(record.window.levels), "level")
            sentences.append(f"Warm-up: the window has {levels} and gains one this step.")
        sentences.append(f"{pool_clause(record, vocab)}, so {commit_clause(record, vocab)}.")
    if len(record.committed) < len(record.verification.block):
        sentences.append("The stop rule cut the accepted block short.")
    if record.stop:
        sentences.append(f"Decoding stops: {STOP_WORDS[record.stop]}.")
    return " ".join(sentences)


def step_header(trace: Trace, index: int) -> str:
    """Step number, position, tokens fed and the measured time of the forward pass, with the device."""
    record = trace.steps[index]
    last = len(trace.steps) - 1
    millis = record.forward_seconds * 1000
    draft = f" · {draft_words(record)}" if record.report(DraftRecord) is not None else ""
    return (
        f"Step {record.step} of {last} · position {record.position} · "
        f"{plural(record.tokens_fed, 'token')} fed · forward pass {millis:.0f} ms on {trace.meta.machine.device_name}"
        f"{draft}"
    )


def caption_html(trace: Trace, index: int) -> str:
    return (
        f'<div class="ll-caption"><div class="ll-stephead">{escape(step_header(trace, index))}</div>'
        f"<p>{step_caption(trace, index)}</p></div>"
    )
