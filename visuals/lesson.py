"""The guided lesson: lookahead decoding and its family told in fifteen short steps, on the shipped example runs.

Each lesson step names a preset's example run, the step of it to show, and the panel the eye should
land on. Its text states only what that recorded step shows: the figures in it are read from the
run's records (`facts`), and each one is checked against the outlined panel as the app draws it
(`quotes`: where, and in what sense, the panel displays that figure); `shows` checks what else the
text claims. The tests run both (`problems`) after the examples are recorded again. No model is needed.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser

from lookahead_core.records import GuessSource, Method, Run, SuffixRecord, TokenSource

from . import library, replay
from .sources import run_origins
from .summary import measured_speedup, step_cost, summary_html
from .tune import turned, two_machines_facts, two_machines_html

# Whether a panel's HTML displays a figure in the sense the lesson's text quotes it
Quote = Callable[[str, str], bool]


@dataclass(frozen=True)
class LessonStep:
    title: str
    text: str  # Markdown; {names} are filled from facts(run, step)
    preset: str
    step: int  # the run's step to show; -1: its last
    panel: str  # the element to outline: a panel ("window", ...), "summary" or "run" (the Run button)
    shows: Callable[[Run, int], bool]  # whether the recorded step shows what the text says besides its figures
    quotes: dict[str, Quote] = field(default_factory=dict)  # each {name} in the text: how the panel displays it


def step_index(run: Run, item: LessonStep) -> int:
    return item.step if item.step >= 0 else len(run.trace.steps) + item.step


def facts(run: Run, index: int) -> dict[str, str]:
    """The measured figures a lesson text may quote: the run's totals and its step `index`, and the recorded tune
    maps' (where both are shipped)."""
    trace, greedy = run.trace, run.greedy
    record = trace.steps[index]
    verification, suffix = record.verification, record.report(SuffixRecord)
    meta = trace.meta
    matched = run_origins(trace).matched  # the run's matched guess tokens, by where each guess came from
    return {
        "steps": str(trace.summary.steps),
        "greedy_steps": str(greedy.summary.steps),
        "ratio": f"{trace.summary.tokens_per_step:.2f}",
        "speedup": measured_speedup(run),
        "step_cost": f"{step_cost(run):.2f}×",
        "device": meta.machine.device_name,
        "date": meta.recorded_at[:10],
        "ngram": str(meta.settings.lookahead.ngram) if meta.settings.lookahead else "",
        "fed": str(record.tokens_fed),
        "committed": str(len(record.committed)),
        "matched": str(verification.accepted) if verification else "0",  # the winner's matched tokens
        "accepted": str(record.sources.count(TokenSource.ACCEPTED)),  # committed as accepted (not guaranteed)
        "pool_size": str(record.pool.size) if record.pool else "0",
        "harvested": str(sum(a.source == GuessSource.WINDOW for a in record.pool.added)) if record.pool else "0",
        "window_tokens": str(matched["window"]),
        "prompt_tokens": str(matched["prompt"]),
        "output_tokens": str(matched["output"]),
        "earlier_tokens": str(matched["earlier"]),  # suffix decoding: what followed in earlier runs' outputs
        "match": str(len(suffix.match)) if suffix else "0",
        "found": str(suffix.found) if suffix else "0",
        "store": str(len(meta.settings.suffix.store)) if meta.settings.suffix else "0",
    } | map_facts()


def map_facts() -> dict[str, str]:
    maps = library.recorded_maps()
    return two_machines_facts(*maps) if maps is not None and maps[1] is not None else {}


def two_maps(run: Run, index: int) -> bool:
    """Both recorded maps are shipped, and a lookahead cell loses on the first machine and pays on the second."""
    maps = library.recorded_maps()
    return maps is not None and maps[1] is not None and turned(*maps) is not None


def lesson_text(run: Run, item: LessonStep) -> str:
    return item.text.format(**facts(run, step_index(run, item)))


# ----------------------------------------------------------------------------------------------
# What the outlined panel displays, and the check that the text quotes it


def panel_html(run: Run, index: int, panel: str) -> str:
    """The outlined panel at step `index`, drawn by the function the app draws it with ("" for the Run button)."""
    if panel == "summary":
        return summary_html(run)
    if panel == "tune":
        maps = library.recorded_maps()
        return two_machines_html(*maps) if maps is not None else ""
    return replay.panels(run, index).get(panel, "")


class ShownText(HTMLParser):
    """The text a panel displays (no tooltips), and how many token chips it draws with a class inside another."""

    VOID = {"br", "img", "input", "hr", "wbr"}

    def __init__(self, mark: str = "", inside: str = "") -> None:
        super().__init__()
        self.mark, self.inside = mark, inside
        self.parts: list[str] = []
        self.open: list[tuple[str, set[str]]] = []
        self.chips = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        classes = set((dict(attrs).get("class") or "").split())
        within = any(self.inside in c for _, c in self.open) or self.inside in classes
        self.chips += within and {"ll-tok", self.mark} <= classes
        if tag not in self.VOID:
            self.open.append((tag, classes))

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self.open:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        if not any(tag == "title" for tag, _ in self.open):  # an SVG shape's tooltip
            self.parts.append(data)

    def text(self) -> str:
        return " ".join(" ".join(self.parts).split())


def shown_text(html: str) -> str:
    parser = ShownText()
    parser.feed(html)
    return parser.text()


def says(phrase: str) -> Quote:
    """The panel's text has `phrase` with the figure for {} (and not as the tail of a longer number or word)."""

    def check(html: str, figure: str) -> bool:
        return re.search(r"(?<![\w.])" + re.escape(phrase.format(figure)), shown_text(html)) is not None

    return check


def marks(kind: str, inside: str) -> Quote:
    """The panel draws exactly the figure's number of token chips of `kind` (their colour and mark) inside
    its element of class `inside`."""

    def check(html: str, figure: str) -> bool:
        parser = ShownText(f"ll-{kind}", inside)
        parser.feed(html)
        return figure.isdigit() and parser.chips == int(figure)

    return check


def quoted(text: str) -> list[str]:
    """The facts a lesson text quotes, in order."""
    return [name for _, name, _, _ in string.Formatter().parse(text) if name]


def misquoted(item: LessonStep, figures: dict[str, str], html: str) -> list[str]:
    """The figures `item`'s text quotes that `html`, its outlined panel, does not display as its quotes say."""
    return [
        f"{{{name}}} = {figures[name]!r}"
        for name in quoted(item.text)
        if name not in item.quotes or not item.quotes[name](html, figures[name])
    ]


def problems(run: Run, item: LessonStep) -> list[str]:
    """What is wrong with `item` on `run`: its claims the recorded step does not show, its figures the
    outlined panel does not display (empty: the step says exactly what its panel shows)."""
    index = step_index(run, item)
    wrong = [] if item.shows(run, index) else [f"{item.preset} step {index} no longer shows what the text says"]
    return wrong + misquoted(item, facts(run, index), panel_html(run, index, item.panel))


# ----------------------------------------------------------------------------------------------
# The claims besides the figures, and the steps


def accepted(run: Run, index: int, at_least: int = 1) -> bool:
    verification = run.trace.steps[index].verification
    return verification is not None and verification.accepted >= at_least


def winner_from(run: Run, index: int, *sources: GuessSource) -> bool:
    verification = run.trace.steps[index].verification
    return accepted(run, index) and verification.candidates[verification.winner].source in sources


def pool_won(run: Run, index: int) -> bool:
    """A guess from the n-gram pool won (not a window trajectory, a prompt match or a draft)."""
    return winner_from(run, index, GuessSource.WINDOW, GuessSource.PROMPT, GuessSource.OUTPUT)


def earlier_won(run: Run, index: int) -> bool:
    """Suffix decoding: a path of what followed the match in an earlier run's output won, and the run needed fewer
    passes than greedy."""
    fewer = run.trace.summary.steps < run.greedy.summary.steps
    return run.trace.meta.method == Method.SUFFIX and fewer and winner_from(run, index, GuessSource.EARLIER)


def window_levels(run: Run, index: int) -> int:
    window = run.trace.steps[index].window
    return len(window.levels) if window is not None else 0


def window_gained(run: Run, index: int) -> bool:
    """Fewer passes than greedy, and n-grams the window harvested among the guesses that matched."""
    fewer = run.trace.summary.steps < run.greedy.summary.steps
    return fewer and run_origins(run.trace).matched["window"] > 0


def lost(run: Run, index: int) -> bool:
    """Greedy beat the method: the rounds' intervals name greedy alone the winner (one timing: it was faster)."""
    if run.timing is not None:
        return run.timing.leaders == [Method.GREEDY]
    return run.trace.summary.seconds > run.greedy.summary.seconds


# How the panels display the figures the texts quote
COMMITTED = says("Committed this step ({} token")
MATCHED = says("matched {} of")
ACCEPTED = marks("accepted", inside="ll-committed")
SUMMARY = {
    "steps": says("{} vs"),
    "greedy_steps": says("vs {} forward passes"),
    "ratio": says("{} tokens per step"),
    "speedup": says("ran {} as fast as"),
    "step_cost": says("took {} as long as"),
    "device": says("· {} ·"),
    "date": says("Recorded {}"),
}
SOURCES = {  # the summary's line on where the run's tokens came from
    "window_tokens": says("n-grams the window harvested {}"),
    "prompt_tokens": says("the prompt's n-grams {}"),
    "output_tokens": says("the output's n-grams {}"),
}

LESSON: tuple[LessonStep, ...] = (
    LessonStep(
        "One pass, one token",
        "A language model writes **one token per forward pass**: each token depends on the one before it. "
        "This first pass read the whole prompt and made {committed} token (underlined in the output). Plain "
        "greedy decoding makes every token this way, and every pass reads all of the model's weights.",
        "pencils",
        0,
        "output",
        lambda run, index: len(run.trace.steps[index].committed) == 1,
        {"committed": marks("this", inside="ll-output")},
    ),
    LessonStep(
        "Guess, then refine (Jacobi)",
        "Lookahead also **guesses tokens further ahead, and refines every guess in the same pass**. Level 0 of "
        "the window starts as tokens picked from the prompt; each pass, the model's prediction at every column "
        "becomes a new level on top (pink): a *Jacobi update*. During warm-up the window gains a level per step.",
        "pencils",
        2,
        "window",
        lambda run, index: 1 < window_levels(run, index) < run.trace.meta.settings.lookahead.ngram - 1,
    ),
    LessonStep(
        "The 2D window moves",
        "Now the window is full. **Each outlined column, read upwards, is an n-gram** the model itself proposed: "
        "{ngram} tokens, one per level. After the pass the oldest level drops off and the new one stays on top: "
        "the window slides forward with the text.",
        "pencils",
        10,
        "window",
        lambda run, index: window_levels(run, index) == run.trace.meta.settings.lookahead.ngram - 1,
        {"ngram": says("{} consecutive guesses")},
    ),
    LessonStep(
        "Harvesting n-grams into the pool",
        "Every column the window completes goes into the **n-gram pool**, keyed by its first token, and so do "
        "n-grams of the prompt and of the output: {pool_size} n-grams by now, {harvested} of them added from the "
        "window's columns this step. Before a pass, the pool is looked up with the current token, and up to G "
        "n-grams under it become this step's guesses.",
        "pencils",
        15,
        "pool",
        lambda run, index: winner_from(run, index, GuessSource.WINDOW),
        {"pool_size": says("{} n-grams in the pool"), "harvested": says("Added from the window's columns ({})")},
    ),
    LessonStep(
        "Verification and the bonus token",
        "The same pass **checks each guess against the model's own predictions**, token by token. Here the "
        "winning guess matched {matched} tokens: the first is the guaranteed token, the next {accepted} are "
        "**accepted**, and the prediction after the last of them comes free, the **bonus** token. This one pass "
        "committed {committed} tokens, exactly what greedy decoding writes.",
        "pencils",
        15,
        "verification",
        lambda run, index: accepted(run, index, 2) and run.trace.steps[index].verification.bonus is not None,
        {"matched": MATCHED, "accepted": ACCEPTED, "committed": COMMITTED},
    ),
    LessonStep(
        "One pass, one attention mask",
        "All of this is **one forward pass of the unmodified model**: {fed} tokens fed at once. The attention mask "
        "lets each window row see only its own column's past, and each guess only its own tokens; position ids put "
        "rival guesses at the same positions.",
        "pencils",
        15,
        "mask",
        lambda run, index: run.trace.steps[index].tokens_fed > 1,
        {"fed": says("{} rows fed in one forward pass")},
    ),
    LessonStep(
        "The same text in fewer passes",
        "Over the whole run lookahead needed **{steps} passes where greedy needed {greedy_steps}**: {ratio} tokens "
        "per pass, and the same text token for token. Whether that is faster depends on what a wide pass costs on "
        "the hardware: on this run's {device}, lookahead ran {speedup} as fast as greedy.",
        "pencils",
        -1,
        "summary",
        lambda run, index: run.trace.summary.steps < run.greedy.summary.steps,
        SUMMARY,
    ),
    LessonStep(
        "The window at work",
        "**Code repeats its own patterns**, and the window learns them as it goes: {window_tokens} of this run's "
        "tokens came from n-grams **the window guessed and harvested** before the text reached them, {output_tokens} "
        "from the output's n-grams and {prompt_tokens} from the prompt's. So lookahead needed {steps} passes where "
        "greedy needed {greedy_steps}. A pass that feeds the window costs more: on {device} a typical one took "
        "{step_cost} as long as a greedy one, and lookahead ran {speedup} as fast as greedy (recorded {date}).",
        "python-sub",
        -1,
        "summary",
        window_gained,
        SUMMARY | SOURCES,
    ),
    LessonStep(
        "When it does not",
        "**Hard-to-predict text** (a translation into German) leaves the pool little to reuse: {ratio} tokens per "
        "pass. And the paper's wide window makes each pass cost more: a typical one took {step_cost} as long as a "
        "greedy one, so lookahead ran {speedup} as fast as greedy ({device}, {date}). The race at the bottom "
        "measures the cost of a wide pass on the machine serving this page.",
        "german",
        -1,
        "summary",
        lost,
        SUMMARY,
    ),
    LessonStep(
        "Same method, another machine",
        "**The same method pays on one machine and loses on another.** {cell} commits {cell_tokens} tokens per "
        "step on {cpu_machine} and {gpu_tokens} on {gpu_machine}. (A cell is named by its settings: W, N and G for "
        "lookahead's window, k for the tokens a step proposes; a step's rows are the tokens its one forward pass is "
        "fed.) On {cpu_short} a 64-row step costs {cpu_cost} a "
        "1-row step, so the tune map predicts the cell at {cpu_speedup} of plain decoding's speed; on {gpu_short} it "
        "costs {gpu_cost}, and the same cell is predicted at {gpu_speedup}. Each map chose its own cell: "
        "{cpu_chosen} on the first, {gpu_chosen} on the second, measured at {gpu_measured} of plain decoding "
        "({gpu_date}).",
        "python",
        -1,
        "tune",
        two_maps,
        {
            "cell": says("{} commits"),
            "cell_tokens": says("commits {} tokens per step on"),
            "gpu_tokens": says("and {} on"),
            "cpu_short": says("On {} a 64-row step"),
            "gpu_short": says("on {} it costs"),
            "cpu_machine": says("slower than plain decoding on {}"),
            "gpu_machine": says("and faster on {}"),
            "cpu_cost": says("a 64-row step costs {} a 1-row step"),
            "gpu_cost": says("it costs {}."),
            "cpu_speedup": says("predicted at {} of plain decoding"),
            "gpu_speedup": says("{} on the"),
            "cpu_chosen": says("chose {})"),
            "gpu_chosen": says("it chose {}"),
            "gpu_measured": says("measured at {} of plain decoding"),
            "gpu_date": says("swept on {} "),
        },
    ),
    LessonStep(
        "Sampling, exactly",
        "With **sampling**, a guessed token is accepted with the probability the model gives it, and where a draw "
        "rejects it, the token is drawn from what remains: the output has exactly the distribution of ordinary "
        "sampling. Here the draws accepted {accepted} tokens of a guess from the pool, and this pass committed "
        "{committed}.",
        "story-sampled",
        39,
        "verification",
        lambda run, index: run.trace.meta.sampling is not None and accepted(run, index, 2) and pool_won(run, index),
        {"accepted": ACCEPTED, "committed": COMMITTED},
    ),
    LessonStep(
        "A draft model instead of a pool",
        "**Speculative decoding** takes its guesses from a small *draft model* (here a bfloat16 copy of the "
        "model), one small pass per token, and the model checks them all in one pass. Here the draft chain matched "
        "{matched} tokens and this pass committed {committed}; the draft's own passes cost time too, as the "
        "summary says.",
        "study-tips-speculative",
        1,
        "verification",
        lambda run, index: run.trace.meta.method == Method.SPECULATIVE and accepted(run, index, 2),
        {"matched": MATCHED, "committed": COMMITTED},
    ),
    LessonStep(
        "Heads instead of a draft model",
        "**Medusa** gives the model small extra *heads*: each reads the model's own last hidden state and guesses "
        "one token further ahead, and a tree of their top choices is checked in the next pass. No second model "
        "runs. Here {matched} of the heads' guesses matched along one path of the tree. Medusa's own recipe "
        "can also accept a guess that is merely *typical*; the lab does not, because that would change what the "
        "model writes.",
        "study-tips-medusa",
        2,
        "pool",
        lambda run, index: run.trace.meta.method == Method.MEDUSA and accepted(run, index),
        {"matched": says("{} of the heads' guesses matched")},
    ),
    LessonStep(
        "A pool that spans runs",
        "Prompt lookup copies what followed a match in this one text; lookahead's pool holds n-grams this run "
        "made. **Suffix decoding** also matches **earlier runs' outputs** (here {store} shipped examples), and "
        "guesses a tree of what followed, each node with **how often** it followed. Here the last {match} tokens "
        "occurred {found} times before, and verification accepted {matched} tokens along one path of the tree.",
        "study-tips-suffix",
        29,
        "pool",
        earlier_won,
        {
            "store": says("store held {} earlier outputs"),
            "match": says("the last {} token"),
            "found": says("occurred {} time"),
            "matched": says("verification accepted {} node"),
        },
    ),
    LessonStep(
        "Your turn",
        "Pick a preset or write your own prompt, choose W, N and G (or Auto), and press **Run on the model**: it "
        "records lookahead and greedy on this server's hardware, and the summary says what they measured. "
        "**Copy link** shares the step you are on; **Download HTML replay** saves a replay that works with no network.",
        "pencils",
        0,
        "run",
        lambda run, index: index == 0,
    ),
)
