"""Suffix decoding in the app, end to end through gradio_client (on tests.conftest.app_model): whose outputs feed it
(each visitor's own store: the shipped examples' outputs and that visitor's Runs, never another visitor's), a Run
of it and its export (its race lane and settings: test_app's race test).

Two clients are two visitors (two Gradio sessions). Visitor A runs a distinctive prompt, then runs it again with
suffix decoding: A's second run matches A's first (the positive control). Visitor B's suffix Run of the same prompt
afterwards must not: no occurrence in B's records, no name in B's store, nothing in B's panels names A's run.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

import pytest
from gradio_client import Client

from lab.serve.stores import run_name
from lookahead_core.records import GuessSource, Method, Run, SuffixRecord
from scripts.serving import running_app
from visuals import export, replay

from .test_app import PANELS, run_form

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)"),
    pytest.mark.usefixtures("one_round"),  # what the runs keep and show, not their timing
]

PROMPT = "Repeat <i>zebra</i> quartz twice, exactly: the marmalade telescope sings at noon."
TOKENS = 16  # 32 took 48 s of make test for the same checks (2026-11-27)


@pytest.fixture(scope="module")
def url(app_model):
    with running_app(app_model) as address:
        yield address


def suffix_run(
    client: Client, prompt: str = PROMPT, method: str = "suffix", chat: bool = False, **settings
) -> tuple[tuple, Run]:
    """A Run of `prompt` by `client` (its visitor), and the run it recorded, read back from the JSON export."""
    form = run_form(prompt, method=method, max_new_tokens=TOKENS, chat=chat, **settings)
    shown = client.predict(**form, api_name="/run")
    exported, _ = client.predict(api_name="/json")
    return shown, Run.from_json(Path(exported).read_bytes())


def named(run: Run) -> set[str]:
    """Every earlier run a suffix run's records name: its store's texts and each step's occurrences."""
    steps = suffix_reports(run)
    return set(run.trace.meta.settings.suffix.store) | {o.text for s in steps for o in s.occurrences if o.text}


def all_panels(run: Run) -> str:
    return "".join(html for index in range(replay.last_step(run) + 1) for html in replay.panels(run, index).values())


def test_a_visitors_runs_feed_their_own_store_and_never_another_visitors(url):
    a, b = Client(url, verbose=False), Client(url, verbose=False)
    _, first = suffix_run(a, method="lookahead")
    mine = run_name(1, PROMPT)
    _, again = suffix_run(a)
    assert again.trace.meta.method == Method.SUFFIX
    assert mine in named(again), "A's second run did not match A's first: the isolation below would prove nothing"
    shipped = {name for name in again.trace.meta.settings.suffix.store if name.startswith("example: ")}
    assert shipped and set(again.trace.meta.settings.suffix.store) == shipped | {
        mine
    }  # the examples' outputs, and A's run
    earlier = [o for s in suffix_reports(again) for o in s.occurrences if o.text == mine]
    assert earlier and all(o.source == GuessSource.EARLIER for o in earlier)
    assert again.trace.summary.steps < first.greedy.summary.steps  # A's own output, followed many tokens a pass
    assert mine == "your run 1: Repeat <i>zebra</i> quartz twice,…"
    assert f"an earlier run: {escape(mine)}" in all_panels(again) and "<i>zebra" not in all_panels(again)

    shown, theirs = suffix_run(b)
    assert theirs.trace.summary.new_token_ids == again.trace.summary.new_token_ids  # exact: the same greedy output
    assert not any(name.startswith("your run") for name in named(theirs)), named(theirs)
    assert set(theirs.trace.meta.settings.suffix.store) == shipped
    assert "your run" not in all_panels(theirs) and "your run" not in "".join(map(str, shown))
    assert "zebra" not in "".join(f"{o.text}" for s in suffix_reports(theirs) for o in s.occurrences)


def test_a_suffix_run_and_its_export_show_the_panel(url):
    client = Client(url, verbose=False)
    # the study-tips example's prompt: a new visitor's store holds its output, so trees grow from step 1
    tips = "Give me three tips for staying focused while studying."
    shown, run = suffix_run(client, tips, chat=True, suffix_tree_size=6, suffix_alpha=2.5)
    assert list(shown[PANELS]) == replay.panel_values(run, 0)
    settings = run.trace.meta.settings.suffix  # the Run card's sliders reach the run and bound every tree
    assert (settings.tree_size, settings.alpha) == (6, 2.5)
    assert all(len(s.nodes) <= 6 for s in suffix_reports(run))
    index = next(i for i, s in enumerate(run.trace.steps) if (r := s.report(SuffixRecord)) is not None and r.nodes)
    stepped = client.predict(index, api_name="/scrub")
    pool = list(stepped[PANELS])[replay.PANELS.index("pool")]
    assert pool == replay.panels(run, index)["pool"] and "the tree of what followed the match" in pool
    page, _ = client.predict(index, api_name="/html")
    assert Path(page).read_text() == export.standalone_html(run, index)
    assert 'class="ll-tree ll-tree-root"' in Path(page).read_text()


def suffix_reports(run) -> list[SuffixRecord]:
    """Suffix decoding's report of each step of `run` that has one."""
    return [report for step in run.trace.steps if (report := step.report(SuffixRecord)) is not None]
