"""How a Run, a race or a bench was timed, in words: rounds, medians with their spread, the verdict, and the
machine's load.

Pure functions of a `records.Timing` (a bench's of its `BenchTotals` and settings). A speedup reads as its
median with its interval ("1.93×, 1.85–2.01×"); the verdict names a winner only when the record's leaders are
one method, says "within noise" otherwise, and is withheld below FEWEST_ROUNDS rounds; a Run's verdict speaks of
its method against plain decoding only. What other programs used of the CPU is said beside the figures.
"""

from __future__ import annotations

from lookahead_core.records import (
    METHODS,
    BenchSettings,
    BenchTotals,
    Busy,
    Method,
    MethodTiming,
    ProductChoice,
    Spread,
    StepMode,
    Timing,
)

from .caption import plural

STEP_MODES = {
    StepMode.EAGER: "eager step",
    StepMode.FIXED: "fixed-shape step, uncaptured",
    StepMode.CUDA_GRAPH: "fixed-shape step captured as a CUDA graph",
    StepMode.COMPILED: "fixed-shape step through torch.compile",
}


def mode_words(mode: StepMode, note: str) -> str:
    """How the steps were run, as the facts line says it: the mode, and why it is not the one asked for."""
    return STEP_MODES[mode] + (f" ({note})" if note else "")


def products_words(choice: ProductChoice | None) -> str:
    """How a CPU took its linear products, as the facts lines say it: for each run of row counts, the way kept for
    most of the model's weights, and where and when that was measured ("" where no choice was made: a GPU's run,
    a record from before the choice)."""
    if choice is None or not choice.groups:
        return ""
    runs: list[list] = []  # [way, first size, last size]
    for i, size in enumerate(choice.sizes):
        weights: dict[str, int] = {}
        for group in choice.groups:
            size_of = group.out_features * group.in_features * group.layers
            weights[group.ways[i]] = weights.get(group.ways[i], 0) + size_of
        way = max(weights, key=weights.get)
        if runs and runs[-1][0] == way:
            runs[-1][2] = size
        else:
            runs.append([way, size, size])
    last_way, first, _ = runs[-1]
    above = f"{last_way} from {first} rows" if last_way == "nn.Linear" else f"{last_way} at {first}–{runs[-1][2]} rows"
    kept = [f"{way} at {a}" + (f"–{b}" if b != a else "") + " rows" for way, a, b in runs[:-1]] + [above]
    where = choice.fingerprint
    threads = plural(int(where.get("threads", "0")), "thread")
    return (
        f"products (most weights): {', '.join(kept)}"
        + (", nn.Linear above" if last_way != "nn.Linear" else "")
        + f"; measured on {where.get('cpu', 'this CPU')} at {threads}, {choice.measured_at[:10]}"
    )


def shape_words(rows: int, needs: int) -> str:
    """A fixed shape's rows, as the facts line says them ("" for the eager step, which has no shape)."""
    if not rows:
        return ""
    if rows == needs:
        return f"{rows} rows a pass"
    return f"{rows} rows a pass (its steps feed at most {needs}: widened to the cheapest size on the step costs)"


FEWEST_COMPARED = 8  # tokens: a round the deadline cut shorter gives speedups that are mostly its prefill's


def too_short(timing: Timing) -> bool:
    """Whether the deadline cut the round shown so short (fewer than FEWEST_COMPARED tokens compared) that its
    speedups measure the prefill and the first steps, not the methods: then none is shown."""
    return timing.partial and timing.compared_tokens < FEWEST_COMPARED


def baseline_cut(timing: Timing) -> bool:
    """Whether the deadline cut greedy's (plain decoding's) lap short: it is the baseline every speedup divides by,
    so the comparison is void then (a race once showed greedy cut beside "1.37×")."""
    return timing.of(Method.GREEDY).partial


def compared(timing: Timing) -> bool:
    """Whether the speedups can be shown at all: neither too few tokens compared nor the baseline cut."""
    return not too_short(timing) and not baseline_cut(timing)


def speedup_words(timing: Timing, method: Method) -> str:
    """A method's speedup as shown: its median with its interval, or that too few tokens were compared, or that
    the baseline was cut (the comparison void)."""
    if too_short(timing):
        return f"not compared ({plural(timing.compared_tokens, 'token')})"
    if baseline_cut(timing):
        return "void (greedy was cut short)"
    return times(timing.of(method).speedup)


def times(spread: Spread) -> str:
    """A speedup: its median, and its interval when the rounds give one."""
    if spread.low == spread.high:
        return f"{spread.median:.2f}×"
    return f"{spread.median:.2f}× ({spread.low:.2f}–{spread.high:.2f}×)"


def share_words(share: float) -> str:
    """A share as a percentage a reader can set beside tokens per step: whole percents from 10%, one decimal
    below, and "under 0.1%" for a share above 0 that would read as 0% (a wide window verifies hundreds of
    candidate tokens a step, so 0.14 accepted of them is 0.1%, not none)."""
    if share >= 0.1 or share == 0:
        return f"{share:.0%}"
    if share < 0.001:
        return "under 0.1%"
    return f"{share:.1%}"


def rate_words(timing: MethodTiming) -> str:
    """Tokens per second: the median over the rounds, and their min–max."""
    rate = timing.rate
    if rate.low == rate.high:
        return f"{rate.median:.1f} tok/s"
    return f"{rate.median:.1f} tok/s ({rate.low:.1f}–{rate.high:.1f})"


def busy_words(busy: Busy, what: str) -> str:
    """What other programs used of the CPU while `what` (a Run, this race) was measured."""
    if busy.other_cores is None:
        return f"What other programs used of the machine during {what} could not be read on it."
    share = f"about {busy.other_cores * 100:.0f}% of one core (this machine has {busy.cores})"
    if busy.heavy:
        return f"Other programs used {share} during {what}: these timings are less reliable."
    return f"The machine was otherwise quiet during {what}: other programs used {share}."


def rounds_words(timing: Timing, what: str, shown: str) -> str:
    """How many interleaved rounds ran, in what order, and which one `shown` (the playback, the replay) shows."""
    order = ", ".join(METHODS[m].short for m in timing.order)
    if timing.rounds == 1:
        return f"{what} ran its methods once ({order}): only one round fitted its time, so there is no spread."
    ran = (
        f"{what} ran {timing.rounds} interleaved rounds ({order}, then again); each figure is the median over "
        f"the rounds, with its range; shown in {shown}: round {timing.shown_round + 1}."
    )
    if not timing.later_tokens:
        return ran
    later = "round 2" if timing.rounds == 2 else f"rounds 2–{timing.rounds}"
    return (
        f"{ran} The later rounds, whole, no longer fitted the time left after round 1, so {later} decoded only the "
        f"first {plural(timing.later_tokens, 'new token')}, and every rate and speedup counts the first "
        f"{plural(timing.compared_tokens, 'token')} of each round, the prefill included (over so few tokens it "
        f"weighs more, and draws the speedups toward 1×); shown in {shown}: round 1, whole."
    )


FEWEST_ROUNDS = 3  # rounds: fewer give an interval too thin to name a winner by (two points are no spread)
ROUND_COUNTS = {1: "one round", 2: "two rounds"}


def no_verdict(timing: Timing, where: str) -> str:
    """Why no verdict is given ("" when one is): the deadline cut the round shown to a few tokens, or fewer
    than FEWEST_ROUNDS rounds were timed. Nothing is named fastest then, not even within the rounds."""
    if too_short(timing):
        return (
            f"The request's time ran out on {where} when {plural(timing.compared_tokens, 'token')} had been compared: "
            "too few to tell the methods' speeds apart (the prefill and the first steps weigh most), so no speedup is "
            "given."
        )
    if baseline_cut(timing):
        return (
            f"Greedy decoding's share of the request's time ran out on {where} before it finished: it is the baseline "
            "every speed is divided by, so the comparison is void and no speedup or verdict is given."
        )
    if timing.rounds < FEWEST_ROUNDS:
        done = ROUND_COUNTS.get(timing.rounds, f"{timing.rounds} rounds")
        return (
            f"Only {done} fitted in the time on {where}: fewer than {FEWEST_ROUNDS} rounds were timed, so no verdict "
            "is given (so few rounds cannot tell a real difference from noise)."
        )
    return ""


def against_one(spread: Spread) -> str:
    """Where a speedup's interval lies against 1× (no difference), in words."""
    if spread.low > 1:
        return "lies above 1×"
    if spread.high < 1:
        return "lies below 1×"
    return "includes 1×"


def verdict(timing: Timing, where: str, plain: str = "greedy") -> str:
    """A race's verdict: the winner when the intervals say so, or which methods are within noise of each other;
    none from a round cut short or from fewer than FEWEST_ROUNDS rounds (`no_verdict`)."""
    withheld = no_verdict(timing, where)
    if withheld:
        return withheld
    if len(timing.leaders) == 1:
        (winner,) = timing.leaders
        if winner == Method.GREEDY:
            who = "Greedy decoding" if plain == "greedy" else plain.capitalize()
            return f"{who} was fastest on {where}: every other method's interval lies below 1×."
        return (
            f"{METHODS[winner].short.capitalize()} won on {where}, {times(timing.of(winner).speedup)} as fast as "
            f"{plain}: its interval clears every other method's."
        )
    names = [METHODS[m].short if m != Method.GREEDY else plain for m in timing.leaders]
    listed = ", ".join(names[:-1]) + " and " + names[-1]
    return f"Within noise on {where}: {listed} cannot be told apart (their intervals overlap)."


def run_verdict(timing: Timing, method: Method, where: str, plain: str = "greedy") -> str:
    """A Run's verdict in plain words: its one method against `plain` decoding, the only comparison a Run
    measures (a race compares the methods); none from a round cut short or from fewer than FEWEST_ROUNDS."""
    withheld = no_verdict(timing, where)
    if withheld:
        return withheld
    name = METHODS[method].name
    if timing.leaders == [method]:
        return f"{name} was faster than {plain} on {where}."
    if timing.leaders == [Method.GREEDY]:
        return f"{name} was slower than {plain} on {where}."
    return f"{name} and {plain} were within noise of each other on {where}: neither can be called faster."


def partial_words(timing: Timing) -> str:
    """What a deadline cut, if anything: which decodings, by their share of the request's time (not the whole of
    it: a race that "took 45.8 s" said "the request's 60 s ran out"), and what that does to the comparison (void
    where the baseline was cut)."""
    if not timing.partial:
        return ""
    cut = [METHODS[t.method].short for t in timing.methods if t.partial]
    listed = ", ".join(cut[:-1]) + " and " + cut[-1] if len(cut) > 1 else cut[0]
    shares = "their shares" if len(cut) > 1 else "its share"
    what = (
        "greedy decoding is the baseline every speed is divided by, so the comparison is void"
        if baseline_cut(timing)
        else "the speeds compare the tokens every method reached"
    )
    return (
        f"Partial: in round 1 each decoding had an equal share of the time left of the request's "
        f"{timing.budget_seconds:.0f} s; {listed} reached the end of {shares} before finishing and stopped at the next "
        f"step: {what}."
    )


def lengths_words(timing: Timing, plain: str) -> str:
    """Runs that ended at different lengths (the deadline stopped them at different points, or sampled text
    stopped at its own end of sequence): say why, and that the rates compare equal lengths."""
    if not timing.lengths_differ:
        return ""
    why = (
        "the deadline stopped them at different points"
        if timing.partial
        else "sampled text stops at its own end of sequence"
    )
    return (
        f"The runs ended at different lengths ({why}): each rate counts the first {timing.compared_tokens} tokens, "
        f"as {plain} did, so like is compared with like."
    )


def fitted_words(timing: Timing, what: str, decoded: int) -> str:
    """Why `what` decoded at most `decoded` new tokens where more were asked for ("" where it decoded as many)."""
    if not timing.asked_tokens:
        return ""
    return (
        f"At this machine's latest pace the rounds of the {timing.asked_tokens} new tokens asked for would not have "
        f"fitted in the time, so {what} decoded at most {decoded} of them, so that its rounds would fit."
    )


def timing_notes(timing: Timing, what: str, shown: str, plain: str = "greedy", decoded: int = 0) -> list[str]:
    """Every sentence about how the figures were taken, in reading order (empty ones left out); `decoded` the new
    tokens each decoding was asked for (fewer than the visitor's where the machine's pace made them so)."""
    notes = [
        fitted_words(timing, what, decoded),
        rounds_words(timing, what.capitalize(), shown),
        partial_words(timing),
        lengths_words(timing, plain),
        busy_words(timing.busy, what),
    ]
    return [note for note in notes if note]


def bench_rate(totals: BenchTotals) -> str:
    """A bench method's tokens per second: the median of its rounds' rates with their min–max, or the one
    timing of a report from before rounds."""
    rate = totals.rate
    if rate is None:
        return f"{totals.tokens_per_second:.2f}"
    return f"{rate.median:.2f} ({rate.low:.2f}–{rate.high:.2f})"


def bench_speedup(totals: BenchTotals) -> str:
    """A bench method's speedup: the ratio of medians with its interval, or the one ratio of an older report."""
    if totals.speedup_interval is None:
        return f"{totals.speedup:.2f}x"
    return times(totals.speedup_interval)


def bench_rounds_words(settings: BenchSettings) -> str:
    """How a bench's figures were taken: its interleaved rounds and medians, or once (an older report)."""
    if settings.repeats is None:
        return "Each method was timed once per prompt (a report from before repeated rounds): no spread is known."
    rounds = "1 round" if settings.repeats == 1 else f"{settings.repeats} interleaved rounds"
    return (
        f"Timed in {rounds} per prompt, every method once per round in the order shown. A round's rate is its "
        "tokens over its seconds on all the prompts; tokens/s is the median of the rounds' rates (min–max), "
        "seconds the median of the rounds' seconds, and the speedup the ratio of medians with its bootstrap "
        "interval over the rounds. Each prompt's figures are those of its median round."
    )
