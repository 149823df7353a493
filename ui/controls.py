"""The column of controls: the preset, the prompt, Run, then the method and its settings, and sampling.

Sliders are wide enough that the engine's budget of tokens per step, not the slider, refuses the
largest settings; the line under them says what one step of the chosen W, N, G feeds. A method's own settings
are on only while that method is chosen, as the method table says which it uses; a note says why the rest are off.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from lab.serve.budget import RACE_SECONDS, RUN_SECONDS
from lab.serve.requests import RUN_METHODS, InputError, lookahead_of
from lab.serve.server import CAP, ZERO_GPU
from lookahead_core.config import (
    DEFAULT_DRAFT_TOKENS,
    MAX_PROPOSED_TOKENS,
    MAX_TOKENS_PER_STEP,
    SUFFIX,
    LookupConfig,
    SettingsError,
)
from lookahead_core.records import METHODS, Branch, Method
from visuals import library
from visuals.markup import escape
from visuals.summary import example_note, feed_html, notice_html, preset_note

# W=N=G at their maximum would feed 1 + 31 + 8*32 + 32*9 = 576 > 512 tokens: the budget refuses it, not the slider
MAX_WINDOW, MAX_NGRAM, MAX_GUESSES = 32, 10, 32
SAMPLING_DEFAULTS = {"temperature": 0.8, "top_k": 0, "top_p": 0.95, "seed": 0}
RUN_NOTICE = notice_html(None, cap=CAP) if ZERO_GPU else notice_html(None, budget=(RUN_SECONDS, RACE_SECONDS))
OWN_PROMPT = (
    "Your own prompt: no preset describes it. Run records it on the model; the summary then says what "
    "this hardware made of it."
)


@dataclass(frozen=True)
class Sampling:
    """The sampling switch and its settings, in the order Run and Race send them."""

    sample: gr.Checkbox
    temperature: gr.Slider
    top_k: gr.Slider
    top_p: gr.Slider
    seed: gr.Number

    def inputs(self) -> list:
        return [self.sample, self.temperature, self.top_k, self.top_p, self.seed]


@dataclass(frozen=True)
class Controls:
    """Everything a Run (and a race) reads, the preset that filled it, and the Run button with its notes."""

    preset: gr.Dropdown
    preset_note: gr.HTML
    prompt: gr.Textbox
    chat: gr.Checkbox
    method: gr.Radio
    method_note: gr.HTML
    window: gr.Slider
    ngram: gr.Slider
    guesses: gr.Slider
    feed: gr.HTML
    max_new_tokens: gr.Slider
    lookup_tokens: gr.Slider
    draft_tokens: gr.Slider
    suffix_tree_size: gr.Slider
    suffix_alpha: gr.Slider
    sampling: Sampling
    auto: gr.Checkbox
    run: gr.Button
    again: gr.Button  # measures the Run's question once more, though this machine answered it a moment ago
    stop: gr.Button
    notice: gr.HTML


def build_controls(presets: list[dict]) -> Controls:
    """The controls, filled from the first preset: the preset, its prompt and Run first (on screen as the page
    opens at 1280×800), then the preset's description and the method's settings."""
    first = presets[0]
    preset = gr.Dropdown([(p["label"], p["id"]) for p in presets], value=first["id"], label="Preset")
    prompt = gr.Textbox(first["prompt"], lines=5, max_lines=6, label="Prompt (or write your own)")
    chat = gr.Checkbox(first["chat"], label="Wrap the prompt in the model's chat template")
    auto = gr.Checkbox(
        first.get("auto", False),
        label="Auto: W, N, G and each step's plan from this hardware's measured step costs",
        elem_id="ll-run-auto",
    )
    with gr.Row(equal_height=False):
        run = gr.Button("Run on the model", variant="primary", elem_id="ll-run", scale=3)
        stop = gr.Button("■ Stop", interactive=False, elem_id="ll-run-stop", scale=1, min_width=80)
    # a row of its own: Run's row is Run and Stop, so a Run's focus goes to its Stop (ui/scripts.FOCUS_KEPT)
    again = gr.Button("Measure again (adds rounds to this question's figures)", size="sm", elem_id="ll-run-again")
    notice = gr.HTML(RUN_NOTICE, elem_id="ll-run-notice", min_height=30)
    note = gr.HTML(example_note(first["caption"], library.example_run(first["id"])), elem_id="ll-preset-caption")
    method = gr.Radio(
        [(METHODS[m].name, m.value) for m in RUN_METHODS],
        value=Method.LOOKAHEAD.value,
        label="Method to run against greedy",
        elem_id="ll-method",
    )
    used = settings_used(Method.LOOKAHEAD)
    method_note = gr.HTML(unused_note(Method.LOOKAHEAD), elem_id="ll-method-note")
    window, ngram, guesses, feed = build_window_settings(first)
    max_new_tokens = gr.Slider(1, CAP, value=first["max_new_tokens"], step=1, label="Max new tokens", elem_id="ll-max")
    lookup_tokens, draft_tokens, suffix_tree_size, suffix_alpha = build_family_settings(used)
    sampling = build_sampling()
    return Controls(
        preset=preset,
        preset_note=note,
        prompt=prompt,
        chat=chat,
        method=method,
        method_note=method_note,
        window=window,
        ngram=ngram,
        guesses=guesses,
        feed=feed,
        max_new_tokens=max_new_tokens,
        lookup_tokens=lookup_tokens,
        draft_tokens=draft_tokens,
        suffix_tree_size=suffix_tree_size,
        suffix_alpha=suffix_alpha,
        sampling=sampling,
        auto=auto,
        run=run,
        again=again,
        stop=stop,
        notice=notice,
    )


def build_window_settings(first: dict) -> tuple:
    """Lookahead's W, N and G sliders at the first preset's values, and what one step of them feeds."""
    window = gr.Slider(1, MAX_WINDOW, value=first["window"], step=1, label="W · window size (columns)")
    ngram = gr.Slider(2, MAX_NGRAM, value=first["ngram"], step=1, label="N · n-gram size (N−1 levels)")
    guesses = gr.Slider(0, MAX_GUESSES, value=first["guesses"], step=1, label="G · guesses verified per step")
    feed = gr.HTML(feed_words(first["window"], first["ngram"], first["guesses"]))
    return window, ngram, guesses, feed


def build_family_settings(used: dict[str, bool]) -> tuple:
    """The other methods' settings, folded: prompt lookup's tokens, the draft's k, suffix decoding's tree; each on
    where the method shown uses it (`used`: settings_used)."""
    with gr.Accordion("Prompt lookup, the draft model, suffix decoding", open=False, elem_id="ll-family"):
        lookup_tokens = gr.Slider(
            1,
            32,
            value=LookupConfig.tokens,
            step=1,
            label="Prompt lookup: tokens copied after a match",
            interactive=used["lookup"],
        )
        draft_tokens = gr.Slider(
            1,
            16,
            value=DEFAULT_DRAFT_TOKENS,
            step=1,
            label="Speculative and EAGLE: tokens k the draft writes per step",
            interactive=used["draft"],
        )
        suffix_tree_size = gr.Slider(
            1,
            MAX_PROPOSED_TOKENS,
            value=SUFFIX.tree_size,
            step=1,
            label="Suffix decoding: nodes in its tree, at most",
            interactive=used["suffix"],
        )
        suffix_alpha = gr.Slider(
            0.5,
            16,
            value=SUFFIX.alpha,
            step=0.5,
            label="Suffix decoding: alpha, nodes per token of the match, at most",
            interactive=used["suffix"],
        )
    return lookup_tokens, draft_tokens, suffix_tree_size, suffix_alpha


def build_sampling() -> Sampling:
    with gr.Accordion("Sampling (for Run and the race)", open=False, elem_id="ll-sampling"):
        sample = gr.Checkbox(False, label="Sample instead of greedy decoding", elem_id="ll-sample")
        temperature = gr.Slider(0.05, 2, value=SAMPLING_DEFAULTS["temperature"], step=0.05, label="Temperature")
        top_k = gr.Slider(0, 200, value=SAMPLING_DEFAULTS["top_k"], step=1, label="Top-k (0: off)")
        top_p = gr.Slider(0.05, 1, value=SAMPLING_DEFAULTS["top_p"], step=0.01, label="Top-p (1: off)")
        seed = gr.Number(SAMPLING_DEFAULTS["seed"], precision=0, minimum=0, label="Seed")
    return Sampling(sample, temperature, top_k, top_p, seed)


def feed_words(window, ngram, guesses) -> str:
    """What one full step of W, N, G feeds against the budget, or why those settings are refused."""
    try:
        return feed_html(lookahead_of(window, ngram, guesses).tokens_per_step, MAX_TOKENS_PER_STEP)
    except (InputError, SettingsError) as error:
        return feed_html(None, MAX_TOKENS_PER_STEP, str(error))


# Each group of method settings, and what it sets, in the words of the note that says why it is off
SETTING_GROUPS = {
    "window": "W, N, G and Auto (lookahead's window; the race's lookahead lane still reads W, N and G)",
    "lookup": "prompt lookup's tokens copied",
    "draft": "the draft's k",
    "suffix": "suffix decoding's tree",
}


def settings_used(method: Method) -> dict[str, bool]:
    """Which groups of settings `method` runs with, as the method table says: the window's for a method that keeps
    one, and a family's own for the branch its guesses fill."""
    entry = METHODS[method]
    return {
        "window": entry.window,
        "lookup": entry.branch == Branch.GUESS,
        "draft": entry.branch == Branch.DRAFT,
        "suffix": entry.branch == Branch.SUFFIX,
    }


def unused_note(method: Method) -> str:
    """The note under the method: which settings are off, because `method` does not use them."""
    used = settings_used(method)
    window = [SETTING_GROUPS["window"]] if not used["window"] else []
    family = [words for group, words in SETTING_GROUPS.items() if group != "window" and not used[group]]
    family_words = ", ".join(family[:-1]) + (" and " if len(family) > 1 else "") + family[-1] if family else ""
    parts = window + ([f"{family_words} (under the settings below)"] if family_words else [])
    words = f"Off for {METHODS[method].name}, which does not use them: {'; '.join(parts)}."
    return f'<p class="ll-slider-note" id="ll-settings-off">{escape(words)}</p>'


def grouped(controls: Controls) -> dict[str, list]:
    """Each group's components."""
    return {
        "window": [controls.window, controls.ngram, controls.guesses, controls.auto],
        "lookup": [controls.lookup_tokens],
        "draft": [controls.draft_tokens],
        "suffix": [controls.suffix_tree_size, controls.suffix_alpha],
    }


# ----------------------------------------------------------------------------------------------
# Handlers


def method_chosen(page, method):
    """The method changed: its own settings on, the others off, and the note saying which and why."""
    try:
        chosen = Method(method)
    except ValueError:  # not a method the page offers: the Run that sends it is refused with the lab's message
        return {}
    used, c = settings_used(chosen), page.controls
    updates = {part: type(part)(interactive=used[group]) for group, parts in grouped(c).items() for part in parts}
    return updates | {c.method_note: unused_note(chosen)}


def feed(page, window, ngram, guesses):
    return {page.controls.feed: feed_words(window, ngram, guesses)}


def own_prompt(page):
    """The visitor edited the prompt: no preset describes it any more."""
    return {page.controls.preset: gr.Dropdown(value=None), page.controls.preset_note: preset_note(OWN_PROMPT)}
