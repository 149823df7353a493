"""The guided lesson: lookahead decoding told in twelve short steps, on the shipped example runs.

Each lesson step names a preset's example run, the step of it to show, and the panel the eye should
land on. Its text states only what that recorded step shows; the numbers in it are read from the
run's records (`facts`), and `shows` is the check, run by the tests, that the step still shows it
after the examples are recorded again. No model is needed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lookahead_core.records import GuessSource, Method, Run

from .summary import mean_decode_seconds


@dataclass(frozen=True)
class LessonStep:
    title: str
    text: str  # Markdown; {names} are filled from facts(run, step)
    preset: str
    step: int  # the run's step to show; -1: its last
    panel: str  # the element to highlight: a panel ("window", ...), "summary" or "controls"
    shows: Callable[[Run, int], bool]  # whether the recorded step shows what the text says


def step_index(run: Run, item: LessonStep) -> int:
    return item.step if item.step >= 0 else len(run.trace.steps) + item.step


def facts(run: Run, index: int) -> dict[str, str]:
    """The measured numbers a lesson text may quote: the run's totals and its step `index`."""
    trace, greedy = run.trace, run.greedy
    record = trace.steps[index]
    verification = record.verification
    meta = trace.meta
    return {
        "tokens": str(trace.summary.tokens),
        "steps": str(trace.summary.steps),
        "greedy_steps": str(greedy.summary.steps),
        "ratio": f"{trace.summary.tokens_per_step:.2f}",
        "speedup": f"{greedy.summary.seconds / trace.summary.seconds:.2f}×",
        "step_ms": f"{mean_decode_seconds(trace) * 1000:.0f}",
        "greedy_ms": f"{mean_decode_seconds(greedy) * 1000:.0f}",
        "device": meta.machine.device_name,
        "date": meta.recorded_at[:10],
        "levels": str(meta.settings.ngram - 1) if meta.settings else "",
        "fed": str(record.tokens_fed),
        "committed": str(len(record.committed)),
        "accepted": str(verification.accepted) if verification else "0",
        "draft_tokens": str(meta.draft.tokens) if meta.draft else "",
    }


def lesson_text(run: Run, item: LessonStep) -> str:
    return item.text.format(**facts(run, step_index(run, item)))


def accepted(run: Run, index: int, at_least: int = 1) -> bool:
    verification = run.trace.steps[index].verification
    return verification is not None and verification.accepted >= at_least


def winner_from(run: Run, index: int, source: GuessSource) -> bool:
    verification = run.trace.steps[index].verification
    return accepted(run, index) and verification.candidates[verification.winner].source == source


def window_levels(run: Run, index: int) -> int:
    window = run.trace.steps[index].window
    return len(window.levels) if window is not None else 0


def slower(run: Run, index: int) -> bool:
    return run.trace.summary.seconds > run.greedy.summary.seconds


LESSON: tuple[LessonStep, ...] = (
    LessonStep(
        "One pass, one token",
        "A language model writes **one token per forward pass**: each token depends on the one before it. "
        "This first pass read the whole prompt and made {committed} token (see the output). Plain greedy decoding "
        "of these {tokens} tokens takes {greedy_steps} passes, and every pass reads all of the model's weights to "
        "make a single token.",
        "python",
        0,
        "output",
        lambda run, index: len(run.trace.steps[index].committed) == 1,
    ),
    LessonStep(
        "Guess, then refine (Jacobi)",
        "Lookahead also **guesses tokens further ahead, and refines every guess in the same pass**. Level 0 of "
        "the window starts as tokens picked from the prompt; each pass, the model's prediction at every column "
        "becomes a new level on top (pink): a *Jacobi update*. During warm-up the window gains a level per step.",
        "python",
        2,
        "window",
        lambda run, index: 1 < window_levels(run, index) < run.trace.meta.settings.ngram,
    ),
    LessonStep(
        "The 2D window moves",
        "With N−1 = {levels} levels the window is full. **Each column, read upwards, is an n-gram** the model "
        "itself proposed, one token per level. After the pass the oldest level drops off and the new one stays on "
        "top: the window slides forward with the text.",
        "python",
        10,
        "window",
        lambda run, index: window_levels(run, index) == run.trace.meta.settings.ngram - 1,
    ),
    LessonStep(
        "Harvesting n-grams into the pool",
        "Every outlined column goes into the **n-gram pool**, keyed by its first token; n-grams of the prompt and "
        "of the output go in too. Before a pass, the pool is looked up with the current token, and up to G "
        "matching n-grams become this step's guesses.",
        "python",
        17,
        "pool",
        lambda run, index: winner_from(run, index, GuessSource.WINDOW),
    ),
    LessonStep(
        "Verification and the bonus token",
        "The same pass **checks each guess against the model's own predictions**, token by token. Here a guess "
        "matched {accepted} tokens: they are accepted, and the prediction after the last of them comes free, the "
        "**bonus** token. This one pass committed {committed} tokens, exactly what greedy decoding writes.",
        "python",
        17,
        "verification",
        lambda run, index: accepted(run, index, 2) and run.trace.steps[index].verification.bonus is not None,
    ),
    LessonStep(
        "One pass, one attention mask",
        "All of this is **one forward pass of the unmodified model**: {fed} tokens fed at once. The attention mask "
        "lets each window row see only its own column's past, and each guess only its own tokens; position ids put "
        "rival guesses at the same positions.",
        "python",
        17,
        "mask",
        lambda run, index: run.trace.steps[index].tokens_fed > 1,
    ),
    LessonStep(
        "The same text in fewer passes",
        "Over the whole run lookahead needed **{steps} passes where greedy needed {greedy_steps}**: {ratio} tokens "
        "per pass, and the same text token for token. Whether that is faster depends on what a wide pass costs on "
        "the hardware: on this run's {device}, lookahead ran {speedup} as fast as greedy.",
        "python",
        -1,
        "progress",
        lambda run, index: run.trace.summary.steps < run.greedy.summary.steps,
    ),
    LessonStep(
        "When it pays off",
        "Text that **repeats its prompt** is the easy case: the prompt's n-grams are right again and again, so "
        "this pass accepted {accepted} guessed tokens. Over the run: {ratio} tokens per pass, and {speedup} as fast "
        "as greedy, measured on {device} on {date}: a CPU, where wide passes cost time.",
        "spelling",
        3,
        "verification",
        lambda run, index: winner_from(run, index, GuessSource.PROMPT) and not slower(run, index),
    ),
    LessonStep(
        "When it does not",
        "**Hard-to-predict text** (a translation into German) leaves the pool little to reuse: {ratio} tokens per "
        "pass. And on a CPU a wide pass costs time: a lookahead pass here took {step_ms} ms against greedy's "
        "{greedy_ms} ms, so lookahead ran {speedup} as fast as greedy ({device}, {date}). The race at the bottom "
        "measures the cost of a wide pass on the machine serving this page.",
        "german",
        -1,
        "summary",
        lambda run, index: slower(run, index),
    ),
    LessonStep(
        "Sampling, exactly",
        "With **sampling**, a guessed token is accepted with the probability the model gives it, and where a draw "
        "rejects it, the token is drawn from what remains: the output has exactly the distribution of ordinary "
        "sampling. Here the draws accepted {accepted} guessed tokens.",
        "story-sampled",
        4,
        "verification",
        lambda run, index: run.trace.meta.sampling is not None and accepted(run, index, 2),
    ),
    LessonStep(
        "A draft model instead of a pool",
        "**Speculative decoding** takes its guesses from a small *draft model* (here a bfloat16 copy of the "
        "model): {draft_tokens} tokens, one small pass each, checked by the model in one pass. This pass committed "
        "{committed} tokens; the draft's passes cost time too, and over the run it ran {speedup} as fast as greedy "
        "on {device}.",
        "study-tips-speculative",
        1,
        "verification",
        lambda run, index: run.trace.meta.method == Method.SPECULATIVE and accepted(run, index, 2),
    ),
    LessonStep(
        "Your turn",
        "Pick a preset or write your own prompt, choose W, N and G, and press **Run on the model**: it records "
        "lookahead and greedy on this server's hardware, and the summary says what they measured. **🔗 Link** "
        "shares the step you are on; **⬇ HTML replay** saves a replay that works with no network.",
        "pencils",
        0,
        "controls",
        lambda run, index: index == 0,
    ),
)
