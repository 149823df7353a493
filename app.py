"""Lookahead Lab, the teaching app: record a real lookahead run, then replay it one forward pass at a time.

Wiring only: layout, events and per-session state. The engine (lookahead_core) records, the
drawings (visuals) render. Run and Race are the only model work: they wait in a bounded queue for
the one model slot, report their progress after every forward pass, and stop at the next pass
when their visitor leaves, presses Stop or cancels. Every replay event (step, scrub, play,
preset) reads the session's recorded run outside the queue and never waits for model work.
"""

from __future__ import annotations

try:  # ZeroGPU Spaces: `spaces` must be imported before anything touches CUDA
    import spaces
except ImportError:
    spaces = None

import hashlib
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

import gradio as gr

from lab import space
from lab.access import MAX_MODEL_NAME, AccessError, access_from_environment
from lab.budget import RACE_SECONDS, RUN_SECONDS, BudgetError, Prices, check_budget, decodings, warmed_prices
from lab.race import RACED, racing
from lab.shelf import Shelf
from lookahead_core.attention import UnsupportedModel
from lookahead_core.config import (
    MAX_TOKENS_PER_STEP,
    PROMPT_LOOKUP,
    LookaheadConfig,
    LookupConfig,
    SettingsError,
    check_draft_tokens,
)
from lookahead_core.costs import step_costs
from lookahead_core.decoding import DecodingError
from lookahead_core.draft import DEFAULT_DRAFT, DEFAULT_DRAFT_TOKENS, Draft, make_draft
from lookahead_core.models import (
    DEFAULT_MODEL,
    DTYPES,
    GEMMA,
    LoadedModel,
    ModelLoadError,
    PromptError,
    encode_prompt,
    load_model,
    resolve_device,
)
from lookahead_core.records import Machine, Method, Progress, RaceRecord, Run, SchemaError
from lookahead_core.sampling import GREEDY, SamplingConfig
from lookahead_core.trace import machine_facts, recording_run
from lookahead_core.tuning import auto_settings, choose_settings
from visuals import library, replay
from visuals.cards import card_head_html
from visuals.export import page_css, png_js, slide_html, standalone_html
from visuals.lesson import LESSON, lesson_text, step_index
from visuals.markup import escape
from visuals.methods import NAMES
from visuals.progress import tokens_per_step_figure
from visuals.race import cost_figure, playback_html, race_figure, race_html
from visuals.summary import (
    feed_html,
    model_html,
    notice_html,
    preset_note,
    progress_fraction,
    progress_words,
    summary_html,
)

PRESETS = library.load_presets()
METHODS = (Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.SPECULATIVE)
DEFAULT = PRESETS[0]
PLAY, PAUSE = "▶ Play", "⏸ Pause"
# Slider ranges wide enough that the engine's budget of tokens per step, not the slider, is what refuses
# the largest settings (W=N=G at their maximum would feed 1 + 31 + 8*32 + 32*9 = 576 > 512 tokens).
MAX_WINDOW, MAX_NGRAM, MAX_GUESSES = 32, 10, 32
SESSION_SECONDS = 3 * 3600  # a recorded run is kept this long after its last update, then the session expires
# Requests waiting for the model slot, past the one that runs: at most RUN_SECONDS each, so the last
# in line waits five minutes at worst; the next one is told the lab is busy.
MAX_WAITING = 10
# What the dtype picker offers: float32 (exact) everywhere, bfloat16 where there is a GPU.
DTYPE_CHOICES = ("auto", "float32", "bfloat16")
# Recorded and opened runs kept for links (?run=ID), gzipped (tens of KB each), for as long as a session
SHELF = Shelf(capacity=300, seconds=SESSION_SECONDS)
EXPORTS = Path(tempfile.mkdtemp(prefix="lookahead-lab-exports-"))  # files a visitor downloads, by content

# ----------------------------------------------------------------------------------------------
# The model: loaded on the first Run, shared by every session


@dataclass
class Held:
    """One loaded model and what is made from it: its prices on this hardware (None: not priced) and, on
    first use, its bfloat16 copy, the speculative draft. A request takes one Held and uses it throughout,
    so a switch of model between two of its passes cannot mix two models in one run."""

    lm: LoadedModel
    prices: Prices | None = None
    copy: Draft | None = None

    def draft(self, tokens: int) -> Draft:
        """The model's bf16 copy as a draft of `tokens` tokens per step (the copy is made once)."""
        if self.copy is None:
            self.copy = make_draft(self.lm, DEFAULT_DRAFT, DEFAULT_DRAFT_TOKENS)
        return Draft(self.copy.model, DEFAULT_DRAFT, tokens)


class ModelHolder:
    """One loaded model for the whole server, loaded on demand under a lock: the one a request names.

    A request for another model (or dtype) loads it and lets the previous one go once no request uses
    it; a model that fails to load leaves the held one in place. With `warm`, a model is warmed up
    once after loading and its work priced on this hardware (budget.warmed_prices); on ZeroGPU each
    request warms up in its own GPU slot instead.
    """

    def __init__(self, warm: bool = True) -> None:
        self._held: Held | None = None
        self._warm = warm
        self._lock = threading.Lock()

    def get(self, choice: str = DEFAULT_MODEL, dtype: str = "auto") -> Held:
        """The model `choice` (DEFAULT_MODEL, GEMMA, a hub id or a folder) in `dtype`, loaded if another is held.

        Raises ModelLoadError or UnsupportedModel (the held model stays) for one that cannot be used.
        """
        with self._lock:
            if self._held is None or not holds(self._held.lm, choice, dtype):
                lm = load_model(None if choice == DEFAULT_MODEL else choice, dtype=dtype)
                self._held = Held(lm)
            if self._warm and self._held.prices is None:
                self._held.prices = warmed_prices(self._held.lm, self._held.draft(DEFAULT_DRAFT_TOKENS))
            return self._held

    def put(self, lm: LoadedModel) -> None:
        with self._lock:
            self._held = Held(lm)

    def facts(self) -> Machine | None:
        held = self._held
        return machine_facts(held.lm) if held is not None else None

    def loading(self, choice: str, dtype: str) -> bool:
        """Whether a request for `choice` would load it first (it is not the held model)."""
        held = self._held
        return held is None or not holds(held.lm, choice, dtype)


def holds(lm: LoadedModel, choice: str, dtype: str) -> bool:
    """Whether `lm` is the model `choice` in `dtype` (auto: in whatever dtype it was loaded)."""
    return lm.name == choice and (dtype == "auto" or lm.dtype == DTYPES.get(dtype))


ZERO_GPU = space.on_zero_gpu(spaces)
SERVER_NAME = os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0")
ACCESS = access_from_environment(SERVER_NAME, ZERO_GPU)
LOG = logging.getLogger("lookahead_lab")
MODEL = ModelHolder(warm=not ZERO_GPU)
MAX_NEW_TOKENS = space.MAX_NEW_TOKENS if ZERO_GPU else replay.MAX_NEW_TOKENS
RUN_NOTICE = (
    notice_html(None, cap=MAX_NEW_TOKENS) if ZERO_GPU else notice_html(None, budget=(RUN_SECONDS, RACE_SECONDS))
)
if ZERO_GPU:  # the platform's contract: load at module scope and move to CUDA; workers get the weights streamed
    MODEL.put(load_model(device="cpu", dtype="float32"))
    MODEL.get().lm.model.to("cuda")
GPU_WORK = []  # the functions that hold a GPU slot on ZeroGPU: all the model work there is


def on_gpu(duration):
    """On ZeroGPU, run the function with a GPU attached for `duration(*its arguments)` seconds at most."""

    def attach(fn):
        GPU_WORK.append(fn)
        return spaces.GPU(fn, duration=duration) if spaces is not None else fn

    return attach


def slot(prompt, chat, config, max_new_tokens, auto, *rest) -> int:
    """The GPU seconds a Run asks for: two recordings and their warm-ups (and, once, the draft's copy);
    auto may measure step costs."""
    return space.slot_seconds(max_new_tokens, runs=3, measures_costs=auto)


def within_budget(prices, prompt_ids, max_new_tokens, methods, config, lookup, draft_tokens, seconds) -> None:
    """Refuse (BudgetError) model work that could hold the model past `seconds` at `prices` (None: unpriced)."""
    if prices is not None:
        check_budget(prices, len(prompt_ids), max_new_tokens, decodings(methods, config, lookup, draft_tokens), seconds)


@on_gpu(slot)
def record(
    prompt: str,
    chat: bool,
    config: LookaheadConfig,
    max_new_tokens: int,
    auto: bool,
    sampling: SamplingConfig,
    method: Method = Method.LOOKAHEAD,
    lookup: LookupConfig = PROMPT_LOOKUP,
    draft_tokens: int = DEFAULT_DRAFT_TOKENS,
    choice: str = DEFAULT_MODEL,
    dtype: str = "auto",
) -> Iterator[Progress | tuple[Run, float]]:
    """A Run's model work: the method's trace and the plain trace for one prompt on the model `choice`
    in `dtype` (loaded first if another is held), a Progress after every forward pass, and last the Run
    with the seconds it all took. Stops between two passes when its consumer stops.

    With `auto`, lookahead runs this hardware's auto settings and records each step's plan.
    """
    started = time.perf_counter()
    held = MODEL.get(choice, dtype)
    lm = held.lm
    prompt_ids = encode_prompt(lm.tokenizer, prompt, chat)
    auto_choice = auto_settings(lm) if auto and method == Method.LOOKAHEAD else None
    chosen = auto_choice.config if auto_choice is not None else config
    methods = (method, Method.GREEDY)
    within_budget(held.prices, prompt_ids, max_new_tokens, methods, chosen, lookup, draft_tokens, RUN_SECONDS)
    draft = held.draft(draft_tokens) if method == Method.SPECULATIVE else None
    work = recording_run(lm, prompt_ids, config, max_new_tokens, prompt, auto_choice, sampling, method, lookup, draft)
    for item in work:
        yield item if isinstance(item, Progress) else (item, time.perf_counter() - started)


def race_slot(prompt, chat, config, max_new_tokens, auto, *rest) -> int:
    """The GPU seconds a race asks for: four methods, each warmed up first; auto may measure step costs."""
    return space.slot_seconds(max_new_tokens, runs=len(RACED) + 1, measures_costs=auto)


@on_gpu(race_slot)
def timed_race(
    prompt: str,
    chat: bool,
    config: LookaheadConfig,
    max_new_tokens: int,
    auto: bool,
    sampling: SamplingConfig,
    lookup: LookupConfig = PROMPT_LOOKUP,
    draft_tokens: int = DEFAULT_DRAFT_TOKENS,
    choice: str = DEFAULT_MODEL,
    dtype: str = "auto",
) -> Iterator[Progress | tuple[RaceRecord, float]]:
    """A race's model work on the model `choice` in `dtype`: every method on the prompt, timed with nothing
    drawn (auto: W, N, G from measured costs), a Progress after every forward pass, and last the race with
    its seconds. Stops between two passes when its consumer stops."""
    started = time.perf_counter()
    held = MODEL.get(choice, dtype)
    lm = held.lm
    prompt_ids = encode_prompt(lm.tokenizer, prompt, chat)
    costs = step_costs(lm)
    auto_choice = choose_settings(costs) if auto else None
    chosen = auto_choice.config if auto_choice is not None else config
    within_budget(held.prices, prompt_ids, max_new_tokens, RACED, chosen, lookup, draft_tokens, RACE_SECONDS)
    draft = held.draft(draft_tokens)
    work = racing(lm, prompt_ids, config, max_new_tokens, costs, draft, auto_choice, sampling, lookup)
    for item in work:
        yield item if isinstance(item, Progress) else (item, time.perf_counter() - started)


@cache
def example_run(preset_id: str) -> Run:
    """A preset's recorded example run; shared read-only by all sessions (nothing mutates a run)."""
    return library.load_run(library.example_path(library.preset(PRESETS, preset_id)))


# ----------------------------------------------------------------------------------------------
# What an event sends back: every event updates OUTPUTS (below), skipping what it leaves alone


def playback(playing: bool, steps_per_second=None) -> list:
    timer = (
        gr.Timer(active=playing)
        if steps_per_second is None
        else gr.Timer(value=replay.play_interval(steps_per_second), active=playing)
    )
    return [playing, timer, gr.Button(value=PAUSE if playing else PLAY)]


def loaded(run: Run, index: int = 0) -> list:
    """A newly loaded run: its summary and chart, the step slider's range, the panels; playback stops."""
    slider = gr.Slider(value=index, maximum=max(replay.last_step(run), 1))
    return [
        run,
        slider,
        summary_html(run),
        tokens_per_step_figure(run),
        *replay.panel_values(run, index),
        *playback(False),
    ]


def moved(run: Run, index: int, play: list | None = None) -> list:
    """The same run at another step; `play` updates playback when given."""
    return [gr.skip(), index, gr.skip(), gr.skip(), *replay.panel_values(run, index), *(play or [gr.skip()] * 3)]


def opened(request: gr.Request) -> list:
    """A new page: the lesson step, run or preset and the step its link names (`?lesson=4`, `?run=ID&step=4`,
    `?preset=python&step=17`), else the default example at step 0; the model in use now (another visitor may
    have loaded it); and the panel to highlight, if a lesson step was named.

    A run's link works while the shelf keeps the run; after that the page says so and opens the preset.
    """
    query = request.query_params if request is not None else {}
    model = model_html(MODEL.facts(), DEFAULT_MODEL)
    step = query.get("step", "0")
    if "lesson" in query:
        *shown, panel = lesson_at(lesson_number(query["lesson"]) - 1)
        return [*shown, model, panel, gr.Sidebar(open=True)]
    if "run" in query:
        kept = SHELF.get(query["run"])
        if kept is not None:
            return [gr.skip(), None, *run_values(kept, query["run"], KEPT_RUN, step), model, "", gr.skip()]
    preset_id = query.get("preset", DEFAULT["id"])
    if preset_id not in PRESET_IDS:
        preset_id, shown = DEFAULT["id"], preset_values(DEFAULT["id"])
        if "preset" in query:
            unknown = f"No preset is called {replay.short(query.get('preset'))}: here is {DEFAULT['label']!r}."
            shown[PRESET_CAPTION] = preset_note(unknown)
    else:
        shown = preset_values(preset_id, step)
    if "run" in query:
        shown[PRESET_CAPTION] = preset_note(RUN_GONE, library.preset(PRESETS, preset_id)["caption"])
    return [gr.skip(), preset_id, *shown, model, "", gr.skip()]


def lesson_number(value) -> int:
    """`?lesson=N` as a lesson step, 1 to len(LESSON) (anything else: 1)."""
    try:
        return min(max(int(value), 1), len(LESSON))
    except (TypeError, ValueError):
        return 1


def lesson_at(index: int) -> list:
    """Lesson step `index` (from 0): the walkthrough on it, its preset's run at the step it talks about, and
    the panel to highlight (after the preset's dropdown and preset_values, in opened's order)."""
    item = LESSON[index]
    shown = preset_values(item.preset, str(step_index(example_run(item.preset), item)))
    return [gr.Walkthrough(selected=index), item.preset, *shown, item.panel]


RUN_GONE = (
    f"The run this link names is no longer kept (the server keeps a recorded run {SESSION_SECONDS // 3600} hours, "
    f"and at most {SHELF.capacity} runs, and forgets them all when it restarts): here is a preset instead."
)
KEPT_RUN = "A run recorded here and opened from its link: it replays exactly as it was recorded."
OPENED_RUN = "A run opened from a file: it replays exactly as it was recorded, on the machine its summary names."


def expired() -> list:
    """The example again, saying why (replay events run outside the queue, where no toast can be sent)."""
    run = example_run(DEFAULT["id"])
    shown = loaded(run)
    shown[2] = notice_html(replay.SESSION_EXPIRED, "Session expired") + summary_html(run)
    return shown


# ----------------------------------------------------------------------------------------------
# Event handlers


def step_back(run, index):
    return moved(run, replay.step_by(run, index, -1)) if replay.is_run(run) else expired()


def step_forward(run, index):
    return moved(run, replay.step_by(run, index, 1)) if replay.is_run(run) else expired()


def scrub(run, index):
    return moved(run, replay.clamp_step(run, index)) if replay.is_run(run) else expired()


def toggle_play(run, index, playing, speed):
    if not replay.is_run(run):
        return expired()
    if playing:
        return moved(run, replay.clamp_step(run, index), playback(False))
    return moved(run, replay.play_start(run, index), playback(True, speed))


def tick(run, index):
    if not replay.is_run(run):
        return expired()
    following, keep_playing = replay.play_tick(run, index)
    return moved(run, following, None if keep_playing else playback(False))


def set_speed(speed):
    return gr.Timer(value=replay.play_interval(speed))


def choose_preset(preset_id):
    """A preset picked: its settings and its example run from step 0 (the page is left as it is for an
    unknown preset, saying so)."""
    if preset_id not in PRESET_IDS:
        shown = [gr.skip()] * len(preset_values(DEFAULT["id"]))
        shown[PRESET_CAPTION] = preset_note(
            f"No preset is called {replay.short(preset_id)}: choose one of {', '.join(PRESET_IDS)}."
        )
        return shown
    return preset_values(preset_id)


def own_prompt() -> list:
    """The visitor edited the prompt: no preset describes it any more."""
    return [gr.Dropdown(value=None), preset_note(OWN_PROMPT)]


OWN_PROMPT = (
    "Your own prompt: no preset describes it. Run records it on the model; the summary then says what "
    "this hardware made of it."
)


def preset_values(preset_id: str, step="0") -> list:
    """A preset's settings, description and example run at `step` (a number, clamped to the run)."""
    item = library.preset(PRESETS, preset_id)
    settings = [item["prompt"], item["chat"], item["window"], item["ngram"], item["guesses"], item["max_new_tokens"]]
    settings += [
        item.get("method", Method.LOOKAHEAD.value),
        item.get("lookup_tokens", LookupConfig.tokens),
        item.get("draft_tokens", DEFAULT_DRAFT_TOKENS),
    ]
    sampled = item.get("sampling")
    sampling = [sampled is not None, *(sampled or SAMPLING_DEFAULTS).values()]
    run = example_run(preset_id)
    shown = loaded(run, replay.linked_step(run, step))
    return [*settings, preset_note(item["caption"]), *shown, RUN_NOTICE, *sampling, ""]


def run_values(run: Run, key: str, caption: str, step="0") -> list:
    """A run that is no preset (recorded here, or opened from a file), kept on the shelf under `key`, in the
    places preset_values fills: its prompt, a caption, the run at `step`; the other settings stay as they are."""
    index = replay.linked_step(run, step)
    prompt_text = run.trace.meta.prompt_text
    shown = [
        prompt_text if prompt_text is not None else gr.skip(),
        *[gr.skip()] * (PRESET_CAPTION - 1),
        preset_note(caption),
    ]
    return [*shown, *loaded(run, index), RUN_NOTICE, *[gr.skip()] * (len(SAMPLING_DEFAULTS) + 1), key]


PRESET_IDS = [p["id"] for p in PRESETS]
PRESET_CAPTION = 9  # where a preset's description sits among preset_values (after its nine settings)


SAMPLING_DEFAULTS = {"temperature": 0.8, "top_k": 0, "top_p": 0.95, "seed": 0}


def check_space_cap(max_new_tokens: int) -> None:
    """On ZeroGPU a request is capped so that it fits well inside a visitor's daily GPU quota."""
    if max_new_tokens > MAX_NEW_TOKENS:
        raise replay.InputError(
            f"On this Space a request decodes at most {MAX_NEW_TOKENS} new tokens (each visitor has a small daily "
            "GPU quota): lower Max new tokens."
        )


def sampling_of(sample, temperature, top_k, top_p, seed) -> SamplingConfig:
    """The sampling settings sent with Run or Race (greedy when the switch is off); SettingsError if out of range."""
    if not sample:
        return GREEDY
    k, s = replay.whole_number(top_k, "top-k"), replay.whole_number(seed, "Seed")
    return SamplingConfig(replay.number(temperature, "Temperature"), k, replay.number(top_p, "Top-p"), s)


def feed(window, ngram, guesses):
    try:
        w, n, g, _ = replay.check_settings(window, ngram, guesses, 1)
        return feed_html(LookaheadConfig(window=w, ngram=n, guesses=g).tokens_per_step, MAX_TOKENS_PER_STEP)
    except (replay.InputError, SettingsError) as error:
        return feed_html(None, MAX_TOKENS_PER_STEP, str(error))


def refused(error: Exception) -> list:
    """Leave the replay as it is and say why nothing ran: a toast, and a note under the Run button."""
    message = warned(error, "Not run")
    return [*[gr.skip()] * len(OUTPUTS), gr.skip(), gr.skip(), notice_html(message)]


def warned(error: Exception, title: str) -> str:
    """A refused request's message: shown in a toast (Gradio draws a toast's text as HTML), and written on one
    line of the log with what only the operator may read (a model's load error in the library's words)."""
    message, detail = str(error), getattr(error, "detail", "")
    LOG.info("%s: %s%s", title, message, f" ({detail})" if detail else "")
    gr.Warning(escape(message), title=title)
    return message


def method_of(method) -> Method:
    """The method chosen for Run; InputError for anything else."""
    if not isinstance(method, str) or method not in {m.value for m in METHODS}:
        raise replay.InputError(f"Choose a method to run: {', '.join(m.value for m in METHODS)}.")
    return Method(method)


def lookup_of(lookup_tokens) -> LookupConfig:
    """Prompt lookup's settings from the slider; InputError or SettingsError when out of range."""
    return LookupConfig(tokens=replay.whole_number(lookup_tokens, "Prompt lookup tokens"))


def draft_tokens_of(draft_tokens) -> int:
    """The draft's k from the slider; InputError or SettingsError when out of range."""
    return check_draft_tokens(replay.whole_number(draft_tokens, "Draft tokens k"))


def model_of(choice, dtype) -> tuple[str, str]:
    """The model and dtype a request names; InputError for an empty or overlong name or an unknown dtype,
    AccessError for a model this server's operator does not let visitors load (docs/deploy.md)."""
    name = choice.strip() if isinstance(choice, str) else ""
    if not name or len(name) > MAX_MODEL_NAME:
        raise replay.InputError(
            f"Name a model: one of {', '.join(ACCESS.offered())} ({MAX_MODEL_NAME} characters at most)."
        )
    if not isinstance(dtype, str) or dtype not in DTYPE_CHOICES:
        raise replay.InputError(f"Choose a dtype: {', '.join(DTYPE_CHOICES)}.")
    return ACCESS.check(name), dtype


GPU = resolve_device("auto") == "cuda"
DTYPE_DEFAULT = "bfloat16" if GPU and not ZERO_GPU else "auto"
MODEL_NOTE = (
    "One model is held at a time on this server: another one loads on the next Run or race, for everyone who "
    "picks it. The lab refuses, with the reason, a model it cannot run exactly."
)


def model_choices() -> list[tuple[str, str]]:
    """The models the operator offers (ACCESS), named for the picker."""
    names = {DEFAULT_MODEL: f"{DEFAULT_MODEL} (embedded default)", GEMMA: "Gemma 3 270M (base, Gemma terms of use)"}
    return [(names.get(name, name), name) for name in ACCESS.offered()]


def announced_load(choice: str, dtype: str, progress: gr.Progress, unchanged: list):
    """Before model work that must load `choice` first, say so in the progress bar (one yield of `unchanged`)."""
    if MODEL.loading(choice, dtype):
        progress(
            0,
            desc=f"Loading {choice}: this server holds one model at a time, and a model's first load takes "
            "seconds to minutes (a hub model is downloaded, a GGUF dequantized once); the runs after it reuse it",
        )
        yield unchanged


PROGRESS = gr.Progress()  # Gradio passes it in place of this default, bound to the event being served
REFUSALS = (
    replay.InputError,
    AccessError,
    SettingsError,
    DecodingError,
    ModelLoadError,
    UnsupportedModel,
    PromptError,
    BudgetError,
)


def reporting(work: Iterator, progress: gr.Progress, unchanged: list):
    """Show model work's Progress in Gradio's progress bar, yielding `unchanged` after each forward pass (a
    yield is where Gradio stops work whose visitor left, pressed Stop or cancelled); return its result."""
    for item in work:
        if not isinstance(item, Progress):
            return item
        progress(progress_fraction(item), desc=progress_words(item))
        yield unchanged
    raise RuntimeError("model work ended without a result")


def checked_request(prompt, window, ngram, guesses, max_new_tokens, *sampling):
    """What Run and Race share, validated: the prompt's text, W, N, G, the new tokens and the sampling
    settings; InputError or SettingsError when out of range, or over the Space's cap."""
    text = replay.check_prompt(prompt)
    w, n, g, tokens = replay.check_settings(window, ngram, guesses, max_new_tokens)
    check_space_cap(tokens)
    return text, LookaheadConfig(window=w, ngram=n, guesses=g), tokens, sampling_of(*sampling)


def run_model(
    prompt,
    chat,
    window,
    ngram,
    guesses,
    max_new_tokens,
    auto,
    method,
    lookup_tokens,
    draft_tokens,
    sample,
    temperature,
    top_k,
    top_p,
    seed,
    choice=DEFAULT_MODEL,
    dtype="auto",
    progress=PROGRESS,
):
    """Validate, record the method and plain decoding on the model chosen, and show the new run from step 0."""
    unchanged = [gr.skip()] * (len(OUTPUTS) + 3)
    try:
        request = (window, ngram, guesses, max_new_tokens, sample, temperature, top_k, top_p, seed)
        text, config, tokens, sampling = checked_request(prompt, *request)
        family = method_of(method), lookup_of(lookup_tokens), draft_tokens_of(draft_tokens)
        choice, dtype = model_of(choice, dtype)
        yield from announced_load(choice, dtype, progress, unchanged)
        work = record(text, bool(chat), config, tokens, bool(auto), sampling, *family, choice, dtype)
        run, seconds = yield from reporting(work, progress, unchanged)
    except REFUSALS as error:
        yield refused(error)
        return
    model = model_html(run.trace.meta.machine, DEFAULT_MODEL)
    yield [*loaded(run), model, SHELF.put(run), notice_html(None, used=seconds, gpu=ZERO_GPU)]


# ----------------------------------------------------------------------------------------------
# Exports and import: a run leaves the server as JSON, a standalone HTML replay or a PNG, and comes back


def export_file(run: Run, suffix: str, text: str) -> str:
    """`text` written once under a name made of the run's method and content (the same run, the same file)."""
    for old in EXPORTS.iterdir():  # a session's worth of downloads is kept, no more
        if old.stat().st_mtime < time.time() - SESSION_SECONDS:
            old.unlink(missing_ok=True)
    digest = hashlib.sha256(run.to_json().encode()).hexdigest()[:12]
    path = EXPORTS / f"lookahead-lab-{run.trace.meta.method.value}-{digest}{suffix}"
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    return str(path)


def json_export(run) -> list:
    """The run as JSON, for the download button (nothing, saying why, once the session expired)."""
    if not replay.is_run(run):
        return [None, notice_html(replay.SESSION_EXPIRED, "Nothing to download")]
    return [export_file(run, ".json", run.to_json()), ""]


def html_export(run, index) -> list:
    """The run as a self-contained HTML replay opening at the step shown."""
    if not replay.is_run(run):
        return [None, notice_html(replay.SESSION_EXPIRED, "Nothing to download")]
    index = replay.clamp_step(run, index)
    return [export_file(run, f"-step{index}.html", standalone_html(run, index)), ""]


def step_slide(run, index) -> list:
    """The step shown as a slide's HTML, which the browser draws into a PNG."""
    if not replay.is_run(run):
        return ["", notice_html(replay.SESSION_EXPIRED, "Nothing to draw")]
    return [slide_html(run, replay.clamp_step(run, index)), ""]


def opened_file(data) -> list:
    """A run file a visitor chose: shown from step 0 and kept for links; the page is left as it was, saying
    why, for a file that is not a run of this schema version."""
    try:
        run = library.read_run(data if isinstance(data, bytes) else b"")
    except SchemaError as error:
        message = f"This file cannot be opened: {error}."
        return [*[gr.skip()] * (1 + len(preset_values(DEFAULT["id"]))), notice_html(message, "Not opened")]
    return [None, *run_values(run, SHELF.put(run), OPENED_RUN), ""]


RACE_AUTO, RACE_SLIDERS = "auto: measured for this hardware", "the sliders' W, N, G"
RACE_INTRO = (
    '<div class="ll-budget">The race decodes your prompt with greedy decoding, lookahead, prompt lookup and '
    "speculative decoding (a bfloat16 copy of the model as the draft), one after the other on the model loaded "
    "here, each warmed up first and timed with the device synchronised and nothing drawn. Then it plays them back "
    "side by side at the measured speed: what this hardware really gains, and why. "
    f"{'' if ZERO_GPU else f'It may hold the model for {RACE_SECONDS:.0f} s at most (see the note under Run).'}</div>"
)


def race_model(
    prompt,
    chat,
    window,
    ngram,
    guesses,
    max_new_tokens,
    settings,
    lookup_tokens,
    draft_tokens,
    sample,
    temperature,
    top_k,
    top_p,
    seed,
    choice=DEFAULT_MODEL,
    dtype="auto",
    progress=PROGRESS,
):
    """Validate, race every method on the model chosen, and show the playback, the verdict and the curves."""
    try:
        request = (window, ngram, guesses, max_new_tokens, sample, temperature, top_k, top_p, seed)
        text, config, tokens, sampling = checked_request(prompt, *request)
        lookup, k = lookup_of(lookup_tokens), draft_tokens_of(draft_tokens)
        choice, dtype = model_of(choice, dtype)
        yield from announced_load(choice, dtype, progress, [gr.skip()] * 5)
        auto = settings != RACE_SLIDERS
        work = timed_race(text, bool(chat), config, tokens, auto, sampling, lookup, k, choice, dtype)
        result, seconds = yield from reporting(work, progress, [gr.skip()] * 5)
    except REFUSALS as error:
        yield notice_html(warned(error, "Not raced"), "Not raced"), *[gr.skip()] * 4
        return
    yield (
        race_html(result, used=seconds, gpu=ZERO_GPU),
        result,
        gr.HTML(playback_html(result, take=time.monotonic_ns()), visible=True),
        gr.Plot(race_figure(result), visible=True),
        gr.Plot(cost_figure(result), visible=True),
    )


def busy() -> list:
    """While model work waits or runs: Run and Race off, Stop on."""
    return [gr.Button(interactive=False)] * 2 + [gr.Button(interactive=True)] * 2


def idle() -> list:
    return [gr.Button(interactive=True)] * 2 + [gr.Button(interactive=False)] * 2


def replay_race(result, slow):
    """The race's playback from the start again, at the measured speed or slowed down."""
    if not isinstance(result, RaceRecord):
        return gr.skip()
    return gr.HTML(playback_html(result, bool(slow), take=time.monotonic_ns()), visible=True)


# ----------------------------------------------------------------------------------------------
# Layout


class LabBlocks(gr.Blocks):
    """Gradio's Blocks, except that a request Gradio cannot read (too few values, a file that is no file) is
    refused with the lab's message and one log line, not a traceback and an empty error."""

    async def preprocess_data(self, block_fn, inputs, state, explicit_call: bool = False):
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except gr.Error:
            raise
        except Exception as error:  # noqa: BLE001 - whatever Gradio's reading raised, the client sent it
            name = block_fn.api_name or block_fn.name
            LOG.info("Not accepted: /%s got values it cannot read (%s)", name, type(error).__name__)
            count = len(block_fn.inputs)
            message = (
                f"Not accepted: /{name} takes {count} value{'s' if count != 1 else ''} of the types its API page "
                "lists, and this request sent something else."
            )
            raise gr.Error(message, title="Not accepted", print_exception=False) from None


KEYBOARD = """
() => {
  const keys = {ArrowLeft: "ll-back", ArrowRight: "ll-forward", " ": "ll-play"};
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || !(event.key in keys)) return;
    if (event.target.closest && event.target.closest("input, textarea, select, [contenteditable]")) return;
    const button = document.getElementById(keys[event.key]);
    if (button) { event.preventDefault(); button.click(); }
  });
}
"""

# The page's address becomes a link to this run or preset and step (and is copied where the browser allows).
COPY_LINK = """
(preset, step, run) => {
  if (!preset && !run) {
    alert("A link opens a preset, or a run recorded here, at a step: press Run to record your prompt first.");
    return;
  }
  const link = new URL(location.pathname, location.origin);
  link.searchParams.set(run ? "run" : "preset", run || preset);
  link.searchParams.set("step", String(step));
  history.replaceState(null, "", link.href);
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(link.href).catch(() => {});
}
"""

# The lesson's panel: outlined, and scrolled to the middle of the screen
HIGHLIGHT = """
(name) => {
  document.querySelectorAll(".ll-lit").forEach((element) => element.classList.remove("ll-lit"));
  const target = name && document.getElementById("ll-" + name);
  if (!target) return;
  const card = target.closest(".ll-card") || target;
  card.classList.add("ll-lit");
  card.scrollIntoView({ behavior: "smooth", block: "center" });
}
"""
# A download button, hidden, clicked once the server has written its file (Gradio's download needs a file first)
CLICK_DOWNLOAD = """
(file) => { if (file) document.querySelector("#%s")?.click(); }
"""
# The slide's HTML, drawn into a PNG in the browser by assets/png.js with the export's own CSS
DRAW_PNG = f"""
async (html, step) => {{
  if (!html) return;
  {png_js()}
  await slidePng(html, {json.dumps(page_css())}, `lookahead-step-${{step}}.png`);
}}
"""

THEME = gr.themes.Soft(
    primary_hue="blue",
    neutral_hue="slate",
    font=["ui-sans-serif", "system-ui", "Segoe UI", "Helvetica", "Arial", "sans-serif"],
    font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
)
# The only file the app takes is a run to open (library.read_run refuses more than MAX_RUN_BYTES with its own
# message); Gradio's upload route refuses anything larger still.
LAUNCH_OPTIONS = {
    "theme": THEME,
    "css_paths": [library.ASSETS / "style.css"],
    "js": KEYBOARD,
    "max_file_size": 2 * library.MAX_RUN_BYTES,
}

HOW_IT_WORKS = """
1. Each **step** is one forward pass of the unmodified model. It feeds the current token **c**, the **2D Jacobi
   window** (N−1 levels × W columns of guessed future tokens) and up to G **guesses** from the **n-gram pool**.
2. The row of c gives the **guaranteed** next token: exactly what greedy decoding would emit.
3. The window's top level gets a **Jacobi update** (each row's argmax); each column, read upwards, is a fresh
   n-gram that goes into the pool, keyed by its first token.
4. **Verification**: each guess whose key is c is checked token by token against the model's own predictions in
   the same pass, and so are the window's own Jacobi trajectories (they cost nothing extra: the pass computed
   their rows anyway). The longest match is **accepted**, plus the **bonus** token predicted after it.
5. So one pass commits 1 to N tokens, and the output is token for token the greedy output.
6. The **compression ratio** (tokens per step) is the speedup when a wide step costs what a narrow one does
   (a GPU); on a CPU each extra token fed costs time, so the clock can disagree.
"""


def panel_card(name: str, first: dict) -> gr.HTML:
    gr.HTML(card_head_html(name), elem_classes="ll-card-head")
    return gr.HTML(first[name], elem_id=f"ll-{name}")


first_run = example_run(DEFAULT["id"])
first_panels = replay.panels(first_run, 0)

with LabBlocks(title="Lookahead Lab", delete_cache=(3600, SESSION_SECONDS)) as demo:
    run_state = gr.State(None, time_to_live=SESSION_SECONDS)
    playing = gr.State(False)
    timer = gr.Timer(replay.play_interval(2), active=False)

    # Closed at first (open, it covers a phone's screen); a lesson link (?lesson=N) opens it
    with gr.Sidebar(label="Guided lesson", open=False, width=380, elem_id="ll-lesson-bar") as lesson_bar:
        gr.Markdown(
            f"### 🎓 Lookahead decoding in {len(LESSON)} steps\nEach step moves the replay to the moment it talks "
            "about and outlines the panel to look at. Leave it any time: the page is yours to explore.",
            elem_id="ll-lesson-intro",
        )
        lesson_moves = []
        with gr.Walkthrough(selected=0, elem_id="ll-lesson") as lesson:
            for number, item in enumerate(LESSON):
                with gr.Step(item.title, id=number):
                    gr.Markdown(lesson_text(example_run(item.preset), item), elem_classes="ll-lesson-text")
                    with gr.Row():
                        if number > 0:
                            lesson_moves.append(
                                (number - 1, gr.Button("◀ Back", size="sm", elem_id=f"ll-back-{number}"))
                            )
                        if number + 1 < len(LESSON):
                            lesson_moves.append(
                                (
                                    number + 1,
                                    gr.Button("Next ▶", size="sm", variant="primary", elem_id=f"ll-next-{number}"),
                                )
                            )
        lit = gr.Textbox("", visible="hidden", elem_id="ll-lit")
    gr.Markdown(
        "# Lookahead Lab\nWatch **lookahead decoding** (Fu et al., ICML 2024) on a real model, one forward pass at "
        "a time: the Jacobi window guesses n-grams, the pool keeps them, verification accepts the ones the model "
        "agrees with, and the output stays exactly what greedy decoding would write. Keys: ← → step, space plays. "
        "New here? Open the **guided lesson** (the arrow at the top left, or [this link](?lesson=1)).",
        elem_id="ll-title",
    )
    with gr.Accordion("How lookahead decoding works, in six lines", open=False):
        gr.Markdown(HOW_IT_WORKS)
    with gr.Row(equal_height=False, elem_id="ll-main"):
        with gr.Column(scale=1, min_width=330, elem_id="ll-controls"):
            preset = gr.Dropdown([(p["label"], p["id"]) for p in PRESETS], value=DEFAULT["id"], label="Preset")
            preset_caption = gr.HTML(preset_note(DEFAULT["caption"]), elem_id="ll-preset-caption")
            prompt = gr.Textbox(DEFAULT["prompt"], lines=5, max_lines=14, label="Prompt (or write your own)")
            chat = gr.Checkbox(DEFAULT["chat"], label="Wrap the prompt in the model's chat template")
            method = gr.Radio(
                [(NAMES[m], m.value) for m in METHODS],
                value=Method.LOOKAHEAD.value,
                label="Method to run against greedy",
                elem_id="ll-method",
            )
            window = gr.Slider(1, MAX_WINDOW, value=DEFAULT["window"], step=1, label="W · window size (columns)")
            ngram = gr.Slider(2, MAX_NGRAM, value=DEFAULT["ngram"], step=1, label="N · n-gram size (N−1 levels)")
            guesses = gr.Slider(0, MAX_GUESSES, value=DEFAULT["guesses"], step=1, label="G · guesses verified per step")
            budget = gr.HTML(feed(DEFAULT["window"], DEFAULT["ngram"], DEFAULT["guesses"]))
            max_new_tokens = gr.Slider(
                1,
                MAX_NEW_TOKENS,
                value=DEFAULT["max_new_tokens"],
                step=1,
                label="Max new tokens",
                elem_id="ll-max",
            )
            with gr.Accordion("Prompt lookup and the draft model", open=False, elem_id="ll-family"):
                lookup_tokens = gr.Slider(
                    1, 32, value=LookupConfig.tokens, step=1, label="Prompt lookup: tokens copied after a match"
                )
                draft_tokens = gr.Slider(
                    1,
                    16,
                    value=DEFAULT_DRAFT_TOKENS,
                    step=1,
                    label="Speculative: tokens k the draft (a bf16 copy) writes",
                )
            with gr.Accordion("Sampling (for Run and the race)", open=False, elem_id="ll-sampling"):
                sample = gr.Checkbox(False, label="Sample instead of greedy decoding", elem_id="ll-sample")
                temperature = gr.Slider(0.05, 2, value=SAMPLING_DEFAULTS["temperature"], step=0.05, label="Temperature")
                top_k = gr.Slider(0, 200, value=SAMPLING_DEFAULTS["top_k"], step=1, label="Top-k (0: off)")
                top_p = gr.Slider(0.05, 1, value=SAMPLING_DEFAULTS["top_p"], step=0.01, label="Top-p (1: off)")
                seed = gr.Number(SAMPLING_DEFAULTS["seed"], precision=0, minimum=0, label="Seed")
            run_auto = gr.Checkbox(
                False,
                label="Auto: W, N, G and each step's plan from this hardware's measured step costs",
                elem_id="ll-run-auto",
            )
            with gr.Row(equal_height=False):
                run_button = gr.Button("Run on the model", variant="primary", elem_id="ll-run", scale=3)
                run_stop = gr.Button("■ Stop", interactive=False, elem_id="ll-run-stop", scale=1, min_width=80)
            run_notice = gr.HTML(RUN_NOTICE, elem_id="ll-run-notice", min_height=30)
            model_info = gr.HTML(model_html(None, DEFAULT_MODEL))
            with gr.Accordion("Model", open=False, elem_id="ll-model-box"):
                model_choice = gr.Dropdown(
                    model_choices(),
                    value=DEFAULT_MODEL,
                    allow_custom_value=ACCESS.open,
                    interactive=not ZERO_GPU,
                    label="Model for Run and the race: pick one"
                    + (", or type a Hugging Face id or a local folder" if ACCESS.open else ""),
                    info=MODEL_NOTE,
                    elem_id="ll-model",
                )
                dtype = gr.Radio(
                    list(DTYPE_CHOICES),
                    value=DTYPE_DEFAULT,
                    label="dtype: float32 is exact; bfloat16 is faster on a GPU and may flip near-ties; auto keeps the "
                    "held model's",
                    visible=GPU and not ZERO_GPU,
                    elem_id="ll-dtype",
                )
        with gr.Column(scale=3):
            summary = gr.HTML(summary_html(first_run), elem_id="ll-summary")
            with gr.Row(equal_height=False, elem_id="ll-replay"):
                back = gr.Button("◀ Step", elem_id="ll-back", size="md", scale=0, min_width=96)
                play = gr.Button(PLAY, elem_id="ll-play", size="md", scale=0, min_width=96)
                forward = gr.Button("Step ▶", elem_id="ll-forward", size="md", scale=0, min_width=96)
                step = gr.Slider(
                    0, replay.last_step(first_run), value=0, step=1, label="Step", elem_id="ll-step", scale=4
                )
                speed = gr.Slider(0.5, 8, value=2, step=0.5, label="Speed (steps/s)", scale=1, min_width=160)
                link = gr.Button("🔗 Link", elem_id="ll-link", size="md", scale=0, min_width=80)
            with gr.Row(equal_height=False, elem_id="ll-share"):
                json_button = gr.Button("⬇ JSON", size="sm", scale=0, min_width=90, elem_id="ll-json")
                html_button = gr.Button("⬇ HTML replay (offline)", size="sm", scale=0, min_width=180, elem_id="ll-html")
                png_button = gr.Button("📷 PNG of this step", size="sm", scale=0, min_width=150, elem_id="ll-png")
                upload = gr.UploadButton(
                    "⬆ Open a run (JSON)",
                    file_types=[".json", ".gz"],
                    type="binary",
                    size="sm",
                    scale=0,
                    min_width=170,
                    elem_id="ll-open",
                )
                share_notice = gr.HTML("", elem_id="ll-share-notice", scale=1)
                json_file = gr.DownloadButton(visible="hidden", elem_id="ll-json-file")
                html_file = gr.DownloadButton(visible="hidden", elem_id="ll-html-file")
                slide_source = gr.Textbox(visible="hidden", elem_id="ll-slide-source")
                run_id = gr.Textbox("", visible="hidden", elem_id="ll-run-id")
            caption = gr.HTML(first_panels["caption"], elem_id="ll-caption")
            with gr.Row(equal_height=False):
                with gr.Column(scale=3, elem_classes="ll-card"):
                    window_panel = panel_card("window", first_panels)
                with gr.Column(scale=2, elem_classes="ll-card"):
                    pool_panel = panel_card("pool", first_panels)
            with gr.Row(equal_height=False):
                with gr.Column(scale=3, elem_classes="ll-card"):
                    verification_panel = panel_card("verification", first_panels)
                with gr.Column(scale=2, elem_classes="ll-card"):
                    output_panel = panel_card("output", first_panels)
            with gr.Row(equal_height=False):
                with gr.Column(scale=1, elem_classes="ll-card"):
                    mask_panel = panel_card("mask", first_panels)
                with gr.Column(scale=1, elem_classes="ll-card"):
                    progress_panel = panel_card("progress", first_panels)
                    chart = gr.Plot(tokens_per_step_figure(first_run), show_label=False, container=False)
            with gr.Column(elem_classes="ll-card", elem_id="ll-race"):
                gr.HTML(
                    "<h3>7 · The race: greedy, lookahead, prompt lookup and a draft model, timed<small>same prompt, "
                    "same model, one after the other, played back side by side</small></h3>",
                    elem_classes="ll-card-head",
                )
                race_state = gr.State(None, time_to_live=SESSION_SECONDS)
                with gr.Row(equal_height=False):
                    race_settings = gr.Radio(
                        [RACE_AUTO, RACE_SLIDERS], value=RACE_AUTO, label="Lookahead settings", scale=3
                    )
                    race_button = gr.Button(
                        "Race on the model", variant="primary", elem_id="ll-race-run", scale=1, size="md"
                    )
                    race_stop = gr.Button(
                        "■ Stop", interactive=False, elem_id="ll-race-stop", scale=0, size="md", min_width=80
                    )
                with gr.Row(equal_height=False):
                    restart = gr.Button("↺ Restart playback", size="sm", scale=0, min_width=150, elem_id="ll-restart")
                    slow = gr.Checkbox(False, label="Slow down ×0.25", scale=0, min_width=150, elem_id="ll-slow")
                race_playback = gr.HTML(visible=False, elem_id="ll-race-playback")
                race_summary = gr.HTML(RACE_INTRO, elem_id="ll-race-summary")
                with gr.Row(equal_height=False):
                    race_chart = gr.Plot(show_label=False, container=False, visible=False)
                    cost_chart = gr.Plot(show_label=False, container=False, visible=False)

    panel_outputs = {
        "caption": caption,
        "window": window_panel,
        "pool": pool_panel,
        "verification": verification_panel,
        "output": output_panel,
        "mask": mask_panel,
        "progress": progress_panel,
    }
    OUTPUTS = [run_state, step, summary, chart, *(panel_outputs[name] for name in replay.PANELS), playing, timer, play]
    # Replay events skip the queue: they never wait behind model work, and a full queue never refuses them.
    # Every handler checks the raw values a client sent (preprocess=False): a wrong type gets the lab's message,
    # not a component's exception. Only the upload needs Gradio's preprocessing, to read the file.
    replaying = {"queue": False, "show_progress": "hidden", "preprocess": False}
    model_work = {"concurrency_limit": 1, "concurrency_id": "model", "show_progress": "full", "preprocess": False}
    buttons = [run_button, race_button, run_stop, race_stop]
    sampling = [sample, temperature, top_k, top_p, seed]
    # What Run and Race both send: the request, then (after each one's own choices) the family, sampling, model
    asked = [prompt, chat, window, ngram, guesses, max_new_tokens]
    shared = [lookup_tokens, draft_tokens, *sampling, model_choice, dtype]

    preset_outputs = [
        prompt,
        chat,
        window,
        ngram,
        guesses,
        max_new_tokens,
        method,
        lookup_tokens,
        draft_tokens,
        preset_caption,
        *OUTPUTS,
        run_notice,
        *sampling,
        run_id,
    ]
    demo.load(
        opened,
        None,
        [lesson, preset, *preset_outputs, model_info, lit, lesson_bar],
        api_visibility="private",
        **replaying,
    ).then(None, lit, None, js=HIGHLIGHT)
    for target, button in lesson_moves:
        button.click(
            partial(lesson_at, target),
            None,
            [lesson, preset, *preset_outputs, lit],
            api_visibility="private",
            **replaying,
        ).then(None, lit, None, js=HIGHLIGHT)
    prompt.input(own_prompt, None, [preset, preset_caption], api_visibility="private", **replaying)
    link.click(None, [preset, step, run_id], None, js=COPY_LINK, api_visibility="private")
    json_button.click(json_export, run_state, [json_file, share_notice], api_name="json", **replaying).then(
        None, json_file, None, js=CLICK_DOWNLOAD % "ll-json-file", api_visibility="private"
    )
    html_button.click(html_export, [run_state, step], [html_file, share_notice], api_name="html", **replaying).then(
        None, html_file, None, js=CLICK_DOWNLOAD % "ll-html-file", api_visibility="private"
    )
    png_button.click(step_slide, [run_state, step], [slide_source, share_notice], api_name="slide", **replaying).then(
        None, [slide_source, step], None, js=DRAW_PNG, api_visibility="private"
    )
    upload.upload(
        opened_file,
        upload,
        [preset, *preset_outputs, share_notice],
        api_name="open",
        **{**replaying, "preprocess": True},
    )
    back.click(step_back, [run_state, step], OUTPUTS, api_name="step_back", **replaying)
    forward.click(step_forward, [run_state, step], OUTPUTS, api_name="step_forward", **replaying)
    step.input(scrub, [run_state, step], OUTPUTS, api_name="scrub", trigger_mode="always_last", **replaying)
    play.click(toggle_play, [run_state, step, playing, speed], OUTPUTS, api_name="play", **replaying)
    timer.tick(tick, [run_state, step], OUTPUTS, api_visibility="private", trigger_mode="always_last", **replaying)
    speed.change(set_speed, speed, timer, api_visibility="private", **replaying)
    preset.input(choose_preset, preset, preset_outputs, api_name="preset", **replaying)
    gr.on(
        [window.change, ngram.change, guesses.change],
        feed,
        [window, ngram, guesses],
        budget,
        api_visibility="private",
        **replaying,
    )
    run_event = run_button.click(busy, None, buttons, api_visibility="private", **replaying).then(
        run_model,
        [*asked, run_auto, method, *shared],
        [*OUTPUTS, model_info, run_id, run_notice],
        api_name="run",
        show_progress_on=run_notice,
        **model_work,
    )
    race_event = race_button.click(busy, None, buttons, api_visibility="private", **replaying).then(
        race_model,
        [*asked, race_settings, *shared],
        [race_summary, race_state, race_playback, race_chart, cost_chart],
        api_name="race",
        show_progress_on=race_summary,
        **model_work,
    )
    for finished in (run_event, race_event):  # done, refused, failed or cancelled: the buttons come back
        finished.then(idle, None, buttons, api_visibility="private", **replaying)
    gr.on(
        [run_stop.click, race_stop.click],
        idle,
        None,
        buttons,
        cancels=[run_event, race_event],
        api_visibility="private",
        **replaying,
    )
    gr.on(
        [restart.click, slow.change],
        replay_race,
        [race_state, slow],
        race_playback,
        api_name="race_playback",
        **replaying,
    )

demo.queue(max_size=MAX_WAITING)

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    demo.launch(
        server_name=SERVER_NAME,
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
        **LAUNCH_OPTIONS,
    )
