"""The run at a glance: settings, model and machine, and the measured result against greedy.

It also says where any speedup comes from (tokens per step) or goes (the cost of one lookahead
step on this device), since on a CPU a wide window can cost more than it saves.
"""

from __future__ import annotations

from lookahead_core.records import (
    METHODS,
    DraftRecord,
    Fit,
    HeadsRecord,
    Machine,
    Method,
    MethodReport,
    Progress,
    Run,
    SuffixRecord,
    Trace,
)

from .caption import plural
from .markup import escape
from .methods import recorded_words
from .plans import origin_words, settings_words
from .sources import run_sources_html
from .timing import (
    FEWEST_ROUNDS,
    ROUND_COUNTS,
    against_one,
    compared,
    mode_words,
    no_verdict,
    products_words,
    run_verdict,
    shape_words,
    speedup_words,
    times,
    timing_notes,
)


def plain_name(run: Run) -> str:
    """What the method is compared with: greedy decoding, or ordinary sampling with the same settings."""
    return "greedy" if run.trace.meta.sampling is None else "plain sampling"


def sampling_words(run: Run) -> str:
    sampling = run.trace.meta.sampling
    if sampling is None:
        return "greedy"
    return f"T={sampling.temperature:g} top-k={sampling.top_k} top-p={sampling.top_p:g} seed={sampling.seed}"


def mean_decode_seconds(trace: Trace) -> float:
    """Mean seconds of a step after the prefill (the prefill is the same for both methods)."""
    decode = [r.step_seconds for r in trace.steps[1:]]
    return sum(decode) / len(decode) if decode else 0.0


def step_cost(run: Run) -> float:
    """What one decoding step of the method cost, in mean greedy steps (0 when greedy made none)."""
    greedy_step = mean_decode_seconds(run.greedy)
    return mean_decode_seconds(run.trace) / greedy_step if greedy_step else 0.0


def measured_speedup(run: Run) -> str:
    """The method's speedup: the ratio of median rates over the rounds with its interval, or the one timing
    of a run recorded before repeated rounds."""
    if run.timing is not None:
        return speedup_words(run.timing, run.trace.meta.method)
    rate = run.greedy.summary.tokens_per_second
    return f"{run.trace.summary.tokens_per_second / rate if rate else 0.0:.2f}×"


def verdict_words(run: Run, where: str) -> str:
    """The Run's verdict in plain words: its method against plain decoding only, and none from fewer rounds than
    a verdict needs or from a run timed once (recorded before repeated rounds)."""
    if run.timing is None:
        name = METHODS[run.trace.meta.method].name
        return f"{name} was timed once against {plain_name(run)} on {where}, so no verdict is given."
    return run_verdict(run.timing, run.trace.meta.method, where, plain_name(run))


def figures_words(run: Run) -> str:
    """The measured speedup behind the verdict: its median and interval over the rounds ("" when the round shown
    compared too few tokens for a speedup)."""
    name, plain, timing = METHODS[run.trace.meta.method].name, plain_name(run), run.timing
    if timing is None:
        return f"{name} ran {measured_speedup(run)} as fast as {plain} in that one timing."
    if not compared(timing):
        return ""
    speedup = measured_speedup(run)
    if timing.rounds < FEWEST_ROUNDS:
        return f"{name} ran {speedup} as fast as {plain} over {ROUND_COUNTS[timing.rounds]}, too few to judge by."
    spread = timing.of(run.trace.meta.method).speedup
    return (
        f"{name} ran {speedup} as fast as {plain}: the median of {timing.rounds} rounds, and its interval "
        f"{against_one(spread)}."
    )


def speed_story(run: Run) -> str:
    """Whether the method was faster than plain decoding on its machine, in plain words first (the verdict of
    the rounds' intervals, and why: tokens per step against the cost of a step), then the measured speedup."""
    ours = run.trace
    decode = ours.steps[1:]
    if not decode:
        return "The prefill alone produced the only new token: there was no decoding step to speed up."
    compression = ours.summary.tokens_per_step
    cost = step_cost(run)
    device = ours.meta.machine.device_name
    plain = plain_name(run)
    why = (
        f"It committed {compression:.2f} tokens per step where {plain} commits one, and a typical step of it took "
        f"{cost:.2f}× as long as a {plain} step"
    )
    mean_fed = sum(r.tokens_fed for r in decode) / len(decode)
    if cost < 1 and mean_fed > 1:
        why += (
            f" (a step of {mean_fed:.1f} tokens cannot cost less than a 1-token step: that difference is timing "
            "noise, not a finding)"
        )
    story = " ".join(part for part in (verdict_words(run, device), why + ".", figures_words(run)) if part)
    reports = [r.method_report for r in decode if r.method_report is not None]
    if reports:
        story += " " + report_time_words(reports[0], sum(report.seconds for report in reports) / len(decode))
    if METHODS[ours.meta.method].window and all(r.window.warming_up for r in decode):
        story += " The run ended while the window was still warming up, before any n-gram was harvested."
    elif compression < 1.15:
        story += " Few guesses were accepted: the text was hard to predict."
    elif run.timing is not None and run.timing.leaders == [Method.GREEDY] and not no_verdict(run.timing, device):
        story += " Guesses were accepted, but each step fed so many tokens that it cost more than they saved."
    return story


def report_time_words(report: MethodReport, seconds: float) -> str:
    """What the method's work before each pass took (its report's `seconds`), on average over the steps."""
    if isinstance(report, DraftRecord):
        return f"Of each step, {seconds:.3f} s on average went to drafting."
    if isinstance(report, HeadsRecord):
        return f"Of each step, {seconds * 1000:.1f} ms on average went to the heads."
    if isinstance(report, SuffixRecord):
        return f"Of each step, {seconds * 1000:.2f} ms on average went to finding the match and growing its tree."
    return f"Of each step, {seconds * 1000:.2f} ms on average went to making its guesses."


def time_figures(run: Run) -> tuple[str, str]:
    """The time tile: with repeated rounds, the median over the rounds of the seconds the compared tokens took, the
    same rounds as the speed's median (round 1's time beside a median speed read 4.2 s vs 7.3 s at 1.23×); a run
    timed once gives its one time."""
    plain, timing = plain_name(run), run.timing
    if timing is None:
        return f"{run.trace.summary.seconds:.1f} s vs {run.greedy.summary.seconds:.1f} s", f"time vs {plain}"
    ours, theirs = timing.of(run.trace.meta.method), timing.of(Method.GREEDY)
    label = f"time vs {plain}, for {plural(ours.median_tokens(), 'token')}"
    if timing.rounds > 1:
        label += f": the median of {timing.rounds} rounds, as the speed is"
    return f"{ours.median_seconds():.1f} s vs {theirs.median_seconds():.1f} s", label


def passes_label(run: Run) -> str:
    """What the forward passes compare; sampled runs of different lengths say so, since their passes are not
    like for like."""
    ours, theirs = run.trace.summary.tokens, run.greedy.summary.tokens
    label = f"forward passes vs {plain_name(run)}"
    return label if ours == theirs else f"{label}, for {ours} vs {theirs} tokens: different lengths"


def how_timed(run: Run) -> str:
    """How the Run's figures were taken, or that an older run was timed once."""
    if run.timing is None:
        return "Each method was timed once (a run recorded before repeated rounds): no spread is known."
    return " ".join(timing_notes(run.timing, "this Run", "the replay", plain_name(run), run.trace.meta.max_new_tokens))


def stat(value: str, label: str, tooltip: str) -> str:
    return f'<div class="ll-stat" title="{escape(tooltip)}"><b>{escape(value)}</b><span>{escape(label)}</span></div>'


def big(value: str, label: str, note: str = "") -> str:
    """One of the headline's large figures, with its label under it (and `note` as a further line: an interval)."""
    more = f"<small>{escape(note)}</small>" if note else ""
    return f'<div class="ll-big"><b>{escape(value)}</b><span>{escape(label)}</span>{more}</div>'


NO_VERDICT = "no verdict"


def speed_figure(run: Run) -> tuple[str, str, str]:
    """The headline's speed: its median, label and interval where the rounds give a verdict (faster or slower than
    plain decoding); else NO_VERDICT, why, and the figure it withholds: a big "0.84×" beside "no verdict" read as a
    finding."""
    plain, timing, method = plain_name(run), run.timing, run.trace.meta.method
    if timing is None:
        return NO_VERDICT, "timed once", f"{measured_speedup(run)} vs {plain} in that one timing"
    if not compared(timing):
        return NO_VERDICT, speedup_words(timing, method), f"too little was compared against {plain}"
    spread = timing.of(method).speedup
    if timing.rounds < FEWEST_ROUNDS:
        return NO_VERDICT, f"only {ROUND_COUNTS[timing.rounds]}", f"{times(spread)} vs {plain}"
    if timing.leaders not in ([method], [Method.GREEDY]):
        return NO_VERDICT, "within noise", f"{times(spread)} vs {plain}: the interval includes 1×"
    faster = "faster" if timing.leaders == [method] else "slower"
    return f"{spread.median:.2f}×", f"speed vs {plain}: {faster}", f"interval {spread.low:.2f}–{spread.high:.2f}×"


def headline_html(run: Run) -> str:
    """The Run at a glance, readable from the back of a classroom: tokens per step, the speed against plain
    decoding (or no verdict) and the forward passes saved."""
    ours, theirs = run.trace.summary, run.greedy.summary
    value, label, note = speed_figure(run)
    speed = big(value, label, note).replace('class="ll-big"', 'class="ll-big ll-no-verdict"', value == NO_VERDICT)
    saved = theirs.steps - ours.steps
    passes = f"{ours.steps} vs {plain_name(run)}'s {theirs.steps}" + (
        "" if ours.tokens == theirs.tokens else f", for {ours.tokens} vs {theirs.tokens} tokens"
    )
    return (
        '<div class="ll-headline">'
        + big(f"{ours.tokens_per_step:.2f}", "tokens per step", f"{plain_name(run)}: 1")
        + speed
        + big(str(saved), "forward passes saved" if saved >= 0 else "forward passes more", passes)
        + "</div>"
    )


RACE_TAKES = "A race takes the same unless you pick otherwise on its card."


def settings_line(run: Run) -> str:
    """What the method ran with and where those settings came from, in a sentence a student reads (lookahead's:
    auto or the sliders, as the race takes them too)."""
    meta = run.trace.meta
    name, settings = METHODS[meta.method].name, meta.settings.lookahead
    ran = f"{name} ran" + (f" with {recorded_words(meta.settings)}" if recorded_words(meta.settings) else "")
    where = f" on {meta.machine.device_name}, {meta.recorded_at[:10]}"
    if settings is None:
        return f"{ran}{where}."
    return f"{ran}{where}: {origin_words(settings)}. {RACE_TAKES}"


def summary_html(run: Run) -> str:
    """The recorded run: what it ran with, three large figures (tokens per step, the speed against plain decoding
    or no verdict, the passes saved), and one click away the rest: the figures in detail, the machine, and where
    the speed went."""
    ours, theirs = run.trace, run.greedy
    meta, s, g = ours.meta, ours.summary, theirs.summary
    machine, settings = meta.machine, meta.settings.lookahead
    seconds, time_words = time_figures(run)
    stats = [
        stat(
            recorded_words(meta.settings),
            f"{METHODS[meta.method].short} settings" + (f", {settings.planner.value} plan" if settings else ""),
            settings_words(settings) if settings else METHODS[meta.method].name,
        ),
        stat(str(s.tokens), "new tokens", f"stop: {s.stop.value if s.stop else 'none'}; {sampling_words(run)}"),
        stat(f"{s.steps} vs {g.steps}", passes_label(run), "the prefill counts as one pass"),
        stat(f"{s.tokens_per_step:.2f}", "tokens per step", "the compression ratio: tokens / forward passes"),
        stat(
            f"{step_cost(run):.2f}×",
            f"a typical step vs {plain_name(run)}'s",
            "mean seconds of a decoding step over plain decoding's (the prefill apart)",
        ),
        stat(seconds, time_words, f"measured on {machine.device_name}"),
    ]
    shape = shape_words(meta.shape_rows, meta.shape_needs)
    facts = (
        f"Recorded {meta.recorded_at} · {machine.model} · {machine.device_name} · {machine.dtype} · "
        f"{mode_words(meta.mode, meta.mode_note)} · "
        + (f"{shape} · " if shape else "")
        + (f"{products_words(machine.products)} · " if machine.products else "")
        + f"{sampling_words(run)}:"
    )
    return (  # when and where it was measured, before what was measured: a shipped example is not this machine's
        f'<div class="ll-summary"><p class="ll-settings-line">{escape(settings_line(run))}</p>{headline_html(run)}'
        '<details class="ll-more"><summary>The figures in detail, and how they were measured</summary>'
        f'<div class="ll-stats">{"".join(stats)}</div>'
        f'<div class="ll-dim"><i>{escape(facts)}</i> {escape(speed_story(run))}</div>'
        f"{run_sources_html(ours)}"
        f'<div class="ll-dim ll-timing">{escape(how_timed(run))}</div></details></div>'
    )


def fit_words(fit: Fit) -> str:
    """What fits in a request's time at this machine's latest prices: the lab's suggested lengths, and why."""
    return (
        f" At the pace this machine showed on its latest steps ({fit.step_seconds * 1000:.0f} ms for a 1-token step), "
        f"{plural(fit.rounds, 'round')} of a Run fit in its {fit.run_seconds:.0f} s with up to about "
        f"{plural(fit.run_tokens, 'new token')} (at plain decoding's pace: a method that ran slower here fits fewer), "
        f"and {plural(fit.rounds, 'round')} of the race in its {fit.race_seconds:.0f} s with up to about "
        f"{fit.race_tokens} (each method at its latest pace); a longer request decodes about that many, so that its "
        "rounds fit, and one that still reaches its time stops, partial."
    )


def model_html(machine: Machine | None, default_model: str, fit: Fit | None = None) -> str:
    """The model and device in use, or the one that will be loaded on the first Run; with `fit`, what fits in a
    request's time at its latest prices."""
    if machine is None:
        return (
            f'<div class="ll-budget">Model in use: none yet. <b>{escape(default_model)}</b> loads on '
            "the first Run, on a GPU when this machine has one, else on the CPU.</div>"
        )
    millions = machine.parameters / 1e6
    sliding = (
        f"; a sliding window of {machine.sliding_window} tokens on {machine.sliding_layers} of its "
        f"{machine.layers} layers"
        if machine.sliding_layers
        else ""
    )
    return (
        f'<div class="ll-budget">Model in use: <b>{escape(machine.model)}</b> ({escape(machine.architecture)}, '
        f"{millions:.0f} M parameters) on <b>{escape(machine.device_name)}</b>, {escape(machine.dtype)}, "
        f"{escape(machine.attention)} attention{sliding}.{escape(products_sentence(machine))}"
        f"{escape(fit_words(fit)) if fit else ''}</div>"
    )


def products_sentence(machine: Machine) -> str:
    """The products' choice as a sentence of its own ("" where none was made)."""
    words = products_words(machine.products)
    return f" Its {words}." if words else ""


def preset_note(*paragraphs: str) -> str:
    """A preset's description, or what the page says in its place (which may quote a visitor's value), as text."""
    return "".join(f'<p class="ll-preset-note">{escape(text)}</p>' for text in paragraphs)


def example_note(caption: str, run: Run) -> str:
    """A preset's description, marked as about its shipped example run (when and where that was recorded): the note
    stays under the preset after a Run of the visitor's own replaces the example, and must not read as about it (it
    said the window "has already harvested the right n-grams" beside a live Run's summary saying none had)."""
    meta = run.trace.meta
    about = f"About this preset's example run (recorded {meta.recorded_at[:10]} on {meta.machine.device_name}), "
    return (
        f'<p class="ll-preset-note"><b class="ll-about">{escape(about)}not about a Run of yours:</b> '
        f"{escape(caption)}</p>"
    )


def feed_html(tokens: int | None, budget: int, problem: str | None = None) -> str:
    """How many tokens one step of these settings feeds to the model, against the per-step budget."""
    if problem is not None:
        return f'<div class="ll-budget ll-over"><b>Refused:</b> {escape(problem)}</div>'
    return (
        f'<div class="ll-budget">Each full step feeds <b>{tokens}</b> tokens to one forward pass '
        f"(1 + (W−1) + (N−2)·W + G·(N−1); budget {budget}).</div>"
    )


def used_words(seconds: float, gpu: bool) -> str:
    """The model time a request took, measured around its work (on ZeroGPU: GPU time from the visitor's quota)."""
    where = "of GPU time from your daily quota on this Space" if gpu else "of model time on this machine"
    return f"This request took {seconds:.1f} s {where}."


def progress_words(progress: Progress) -> str:
    """What model work is doing now, for the progress bar: which decoding of how many, its step and tokens."""
    name = METHODS[progress.method].short
    done = f"{progress.tokens} of {progress.max_new_tokens}"
    if progress.warming_up:
        return f"{progress.part}/{progress.parts} · warming up {name} (untimed): {done} tokens"
    return f"{progress.part}/{progress.parts} · {name}: step {progress.steps}, {done} new tokens"


def progress_fraction(progress: Progress) -> float:
    """How much of the request is done: its finished decodings and this one's share of its tokens."""
    share = min(progress.tokens / progress.max_new_tokens, 1.0) if progress.max_new_tokens else 1.0
    return (progress.part - 1 + share) / progress.parts


def notice_html(
    message: str | None,
    refused: str = "Not run",
    used: float | None = None,
    gpu: bool = False,
    cap: int | None = None,
    budget: tuple[float, float] | None = None,
) -> str:
    """Under the Run button: why the last Run was refused (headed `refused`), what it used, or what a Run does
    and its limits: `cap` new tokens on a Space, or `budget`, the seconds a Run and a race may hold the model."""
    if message is not None:
        return f'<div class="ll-budget ll-over"><b>{escape(refused)}:</b> {escape(message)}</div>'
    if used is not None:
        return f'<div class="ll-budget">{escape(used_words(used, gpu))}</div>'
    limit = ""
    if cap:
        limit = f" On this Space a request decodes at most {cap} new tokens (GPU time is a daily quota)."
    elif budget:
        limit = (
            f" One model serves every visitor in turn: a Run may hold it for {budget[0]:.0f} s, a race for "
            f"{budget[1]:.0f} s. A request that reaches its time stops at its next step and says it is partial; "
            "only one where not even a first token could fit (priced from this machine's step costs, measured "
            "again before each request) is refused before it starts, saying why."
        )
    return (
        '<div class="ll-budget">Run records the chosen method and then greedy decoding of your prompt on the model '
        "(each warmed up first, so neither is timed cold), then times both again in interleaved rounds while they "
        "fit, and replays the first from step 0; the run's summary (under the panels) gives each speed as a median "
        f"over the rounds, with its range.{escape(limit)}</div>"
    )
