"""The column of controls: the preset, the prompt, Run, then the method and its settings, and sampling.

Sliders are wide enough that the engine's budget of tokens per step, not the slider, refuses the
largest settings; the line under them says what one step of the chosen W, N, G feeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from lab.budget import RACE_SECONDS, RUN_SECONDS
from lab.requests import RUN_METHODS, InputError, lookahead_of
from lab.server import CAP, ZERO_GPU
from lookahead_core.config import MAX_PROPOSED_TOKENS, MAX_TOKENS_PER_STEP, SUFFIX, LookupConfig, SettingsError
from lookahead_core.draft import DEFAULT_DRAFT_TOKENS
from lookahead_core.records import METHODS, Method
from visuals import library
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
        again = gr.Button("Measure again", elem_id="ll-run-again", scale=2, min_width=120)
        stop = gr.Button("■ Stop", interactive=False, elem_id="ll-run-stop", scale=1, min_width=80)
    notice = gr.HTML(RUN_NOTICE, elem_id="ll-run-notice", min_height=30)
    note = gr.HTML(example_note(first["caption"], library.example_run(first["id"])), elem_id="ll-preset-caption")
    method = gr.Radio(
        [(METHODS[m].name, m.value) for m in RUN_METHODS],
        value=Method.LOOKAHEAD.value,
        label="Method to run against greedy",
        elem_id="ll-method",
    )
    window = gr.Slider(1, MAX_WINDOW, value=first["window"], step=1, label="W · window size (columns)")
    ngram = gr.Slider(2, MAX_NGRAM, value=first["ngram"], step=1, label="N · n-gram size (N−1 levels)")
    guesses = gr.Slider(0, MAX_GUESSES, value=first["guesses"], step=1, label="G · guesses verified per step")
    feed = gr.HTML(feed_words(first["window"], first["ngram"], first["guesses"]))
    max_new_tokens = gr.Slider(1, CAP, value=first["max_new_tokens"], step=1, label="Max new tokens", elem_id="ll-max")
    with gr.Accordion("Prompt lookup, the draft model, suffix decoding", open=False, elem_id="ll-family"):
        lookup_tokens = gr.Slider(
            1, 32, value=LookupConfig.tokens, step=1, label="Prompt lookup: tokens copied after a match"
        )
        draft_tokens = gr.Slider(
            1, 16, value=DEFAULT_DRAFT_TOKENS, step=1, label="Speculative and EAGLE: tokens k the draft writes per step"
        )
        suffix_tree_size = gr.Slider(
            1, MAX_PROPOSED_TOKENS, value=SUFFIX.tree_size, step=1, label="Suffix decoding: nodes in its tree, at most"
        )
        suffix_alpha = gr.Slider(
            0.5, 16, value=SUFFIX.alpha, step=0.5, label="Suffix decoding: alpha, nodes per token of the match, at most"
        )
    sampling = build_sampling()
    return Controls(
        preset=preset,
        preset_note=note,
        prompt=prompt,
        chat=chat,
        method=method,
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


# ----------------------------------------------------------------------------------------------
# Handlers


def feed(page, window, ngram, guesses):
    return {page.controls.feed: feed_words(window, ngram, guesses)}


def own_prompt(page):
    """The visitor edited the prompt: no preset describes it any more."""
    return {page.controls.preset: gr.Dropdown(value=None), page.controls.preset_note: preset_note(OWN_PROMPT)}
