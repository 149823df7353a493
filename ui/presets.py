"""Presets: each fills the controls with its prompt and settings and shows its recorded example run.

A run that is no preset (recorded here, or opened from a file) fills the same places: its prompt, a
note saying what it is, and the run itself; the other settings stay as they are.
"""

from __future__ import annotations

from lab.serve.requests import short
from lookahead_core.config import DEFAULT_DRAFT_TOKENS, LookupConfig
from lookahead_core.records import Method, Run
from visuals import library, replay
from visuals.summary import example_note, preset_note

from .controls import RUN_NOTICE, SAMPLING_DEFAULTS
from .player import loaded

PRESETS = library.load_presets()
PRESET_IDS = [p["id"] for p in PRESETS]
DEFAULT = PRESETS[0]


def preset_values(page, preset_id: str, step="0") -> dict:
    """A preset's settings, description and example run at `step` (a number, clamped to the run)."""
    c, item = page.controls, library.preset(PRESETS, preset_id)
    sampled = item.get("sampling")
    sampling = dict(
        zip(c.sampling.inputs(), [sampled is not None, *(sampled or SAMPLING_DEFAULTS).values()], strict=True)
    )
    run = library.example_run(preset_id)
    settings = {
        c.prompt: item["prompt"],
        c.chat: item["chat"],
        c.auto: item.get("auto", False),
        c.window: item["window"],
        c.ngram: item["ngram"],
        c.guesses: item["guesses"],
        c.max_new_tokens: item["max_new_tokens"],
        c.method: item.get("method", Method.LOOKAHEAD.value),
        c.lookup_tokens: item.get("lookup_tokens", LookupConfig.tokens),
        c.draft_tokens: item.get("draft_tokens", DEFAULT_DRAFT_TOKENS),
        c.preset_note: example_note(item["caption"], run),
        c.notice: RUN_NOTICE,
        page.exports.run_id: "",
    }
    return settings | sampling | loaded(page, run, replay.linked_step(run, step))


def run_values(page, run: Run, key: str, note: str, step="0") -> dict:
    """A run that is no preset, kept on the shelf under `key`, at `step`: its prompt, `note`, the run."""
    c, prompt_text = page.controls, run.trace.meta.prompt_text
    shown = {c.preset_note: preset_note(note), c.notice: RUN_NOTICE, page.exports.run_id: key}
    if prompt_text is not None:
        shown[c.prompt] = prompt_text
    return shown | loaded(page, run, replay.linked_step(run, step))


def unknown_preset(preset_id) -> str:
    return f"No preset is called {short(preset_id)}: choose one of {', '.join(PRESET_IDS)}."


def choose_preset(page, preset_id):
    """A preset picked: its settings and its example run from step 0 (the page is left as it is for an
    unknown preset, saying so)."""
    if preset_id not in PRESET_IDS:
        return {page.controls.preset_note: preset_note(unknown_preset(preset_id))}
    return preset_values(page, preset_id)
