"""Suffix decoding's earlier outputs in the app: one store per visitor and model, never shared between visitors.

A visitor is a Gradio session: the page keeps one `Visitor` in its session state, and nothing else holds it, so no
visitor's text reaches another's store. A visitor's store for a model holds the shipped example runs' outputs
recorded on that model (token ids are the tokenizer's: another model's would match nothing it writes) and the
outputs of that visitor's own Runs on it, each named by its number and its prompt's first words. The examples'
texts are indexed once and shared read-only by every store (SuffixStore.add_text); a store keeps at most
VISITOR_TOKENS tokens, the least recently used text out first, so memory stays bounded per session.

A race of a prompt, a measurement, matches the store without the outputs of that same prompt (its preset's
example, the visitor's earlier Runs of it): never its own output, as the bench's warm store. Otherwise suffix
decoding copies the answer it already holds: a race of a preset showed it 7.4x greedy with every guess accepted. A
Run, which shows how suffix decoding works, matches them all, and its panels name each earlier output it follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from lookahead_core.methods.suffix import SuffixStore, SuffixText
from lookahead_core.records import Run
from visuals.library import example_path, example_run, load_presets

VISITOR_TOKENS = 4_096  # a visitor's store: the examples' outputs (about 600 tokens) and their latest Runs'
NAME_CHARACTERS = 40  # of a Run's prompt, in its name


@cache
def shipped_texts(model: str) -> tuple[SuffixText, ...]:
    """The outputs of the shipped example runs recorded on `model` (a preset recorded for the first time has none
    yet), each indexed once, named by `example_name`."""
    texts = []
    for item in load_presets():
        if not example_path(item).exists():
            continue
        run = example_run(item["id"])
        if run.trace.meta.machine.model == model:
            texts.append(SuffixText.of(example_name(item), run.trace.summary.new_token_ids))
    return tuple(texts)


def example_name(item: dict) -> str:
    """A shipped example's output as a store names it: "example: <its preset's label>"."""
    return f"example: {item['label']}"


def examples_store(model: str, leaving_out: str | None = None) -> SuffixStore:
    """A store of the shipped examples' outputs recorded on `model`, but the one named `leaving_out`: what a new
    visitor's store holds, and what an example of suffix decoding is recorded with (not its own earlier output)."""
    store = SuffixStore(VISITOR_TOKENS)
    for text in shipped_texts(model):
        if text.name != leaving_out:
            store.add_text(text)
    return store


def run_name(number: int, prompt: str) -> str:
    """A visitor's Run as their store names it: "your run 3: Give me three tips for…" (the prompt's first
    characters, cut at a word, on one line). The name is the visitor's own text: whoever shows it escapes it."""
    words = " ".join(prompt.split())
    if len(words) > NAME_CHARACTERS:
        words = words[:NAME_CHARACTERS].rsplit(" ", 1)[0] + "…"
    return f"your run {number}: {words}"


@cache
def example_prompts() -> dict[str, str]:
    """Each shipped example's output name, and the prompt it answered (its preset's), as `same_prompt` compares."""
    return {example_name(item): same_prompt(item["prompt"]) for item in load_presets()}


def same_prompt(prompt: str) -> str:
    """A prompt as two are compared: its words, whatever the spacing between them."""
    return " ".join(prompt.split())


@dataclass
class Visitor:
    """One visitor's earlier outputs: a store per model (made on first use, the shipped examples in it), how many
    Runs they kept, and the prompt each of their outputs answered."""

    runs: int = 0
    stores: dict[str, SuffixStore] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)  # an output's name -> its prompt (same_prompt)

    def store(self, model: str) -> SuffixStore:
        """This visitor's store for `model`: the examples recorded on it, then their own Runs on it."""
        if model not in self.stores:
            self.stores[model] = examples_store(model)
        return self.stores[model]

    def race_store(self, model: str, prompt: str) -> SuffixStore:
        """What a race of `prompt` on `model` matches: this visitor's store without the outputs that answered the
        same prompt (never its own output). A store of its own, sharing the indexed texts; the texts it uses are
        marked recent there only."""
        held, asked = self.store(model), same_prompt(prompt)
        answered = example_prompts() | self.prompts
        kept = SuffixStore(held.budget)
        for text in reversed(held.texts()):  # least recently used first, as the store holds them
            if answered.get(text.name) != asked:
                kept.add_text(text)
        return kept

    def keep(self, run: Run, prompt: str) -> str:
        """Add a Run's output (the method's) to the store of the model it ran on; its name returned."""
        self.runs += 1
        name = run_name(self.runs, prompt)
        self.store(run.trace.meta.machine.model).add(name, run.trace.summary.new_token_ids)
        self.prompts[name] = same_prompt(prompt)
        return name
