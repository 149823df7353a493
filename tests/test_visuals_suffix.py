"""Suffix decoding's panel (in the pool's place) and what the other panels say of a suffix run: the match as tokens,
where it occurred in words and marks (this prompt, this output, an earlier run by its name, escaped), the tree with
each node's count and probability, and the accepted nodes read from verification (greedy and sampled runs of the
engine on a tiny random Llama with a store of an earlier output); old run files still read and show."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import re
from html import escape, unescape

import pytest

from lookahead_core.config import SuffixConfig
from lookahead_core.methods.suffix import SuffixStore
from lookahead_core.records import Branch, GuessSource, Method, Run, SchemaError, StepKind, SuffixRecord
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.sampling import SamplingConfig
from lookahead_core.trace import record_run
from tests.visual_checks import PRESETS, example, tiny_lm
from visuals import caption, export, library, replay, summary
from visuals.lesson import shown_text
from visuals.suffix import FIRST_STEP, accepted_nodes, suffix_html

PROMPT = [5, 6, 7, 5, 6, 8, 5, 6, 7, 9]
EARLIER = "your run 1: <b>a & b</b>"  # a visitor's own words name their runs: shown as text, never as markup


def suffix_run(sampling: SamplingConfig | None = None) -> Run:
    """A suffix run on the tiny Llama whose store holds its own greedy output as an earlier run's."""
    lm = tiny_lm()
    greedy = record_run(lm, PROMPT, DecodeRequest(method=Method.GREEDY, max_new_tokens=30))
    store = SuffixStore()
    store.add(EARLIER, greedy.trace.summary.new_token_ids)
    # the settings before the trust table: a random model's shares are low, and these trees grow anyway
    settings = SuffixConfig(tree_size=24, alpha=2.0, min_probability=0.1)
    request = DecodeRequest(method=Method.SUFFIX, max_new_tokens=30, suffix=settings)
    if sampling is not None:
        request = dataclasses.replace(request, sampling=sampling)
    return record_run(lm, PROMPT, request, Runtime(store=store))


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    return {"greedy": suffix_run(), "sampled": suffix_run(SamplingConfig(temperature=0.8, seed=3))}


def decode_indices(run: Run) -> list[int]:
    return [i for i, r in enumerate(run.trace.steps) if r.kind == StepKind.DECODE]


@pytest.mark.parametrize("kind", ["sampled", "greedy"])  # sampled first: verification reads its positions
def test_every_panel_of_a_suffix_run_draws_and_the_pool_panel_is_the_suffix_panel(runs, kind):
    run = runs[kind]
    assert (run.trace.meta.sampling is not None) == (kind == "sampled")
    for index in range(replay.last_step(run) + 1):
        shown = replay.panels(run, index)
        assert replay.UNDRAWABLE not in "".join(shown.values()), f"step {index}"
        assert shown["pool"] == suffix_html(run.trace.steps[index], run.trace.vocab)
    assert escape(FIRST_STEP) in replay.panels(run, 0)["pool"]
    assert "a tree ≤24 nodes (alpha 2, p ≥ 0.1), a store of 1 earlier output" in summary.summary_html(run)


@pytest.mark.parametrize("kind", ["sampled", "greedy"])
def test_the_accepted_nodes_are_the_winners_matched_rows_and_marked_in_words(runs, kind):
    run = runs[kind]
    accepted_somewhere = False
    for index in decode_indices(run):
        record = run.trace.steps[index]
        html = suffix_html(record, run.trace.vocab)
        verification = record.verification
        first = next((i for i, row in enumerate(record.rows) if row.branch == Branch.SUFFIX), None)
        if verification.winner is None:
            assert "✓ accepted" not in html and accepted_nodes(record) == ()  # the negative control
            continue
        winner = verification.candidates[verification.winner]
        nodes = accepted_nodes(record)
        assert nodes == tuple(r - first for r in winner.rows[: winner.matched])
        assert [record.report(SuffixRecord).nodes[n].token for n in nodes] == winner.tokens[: winner.matched]
        assert html.count("✓ accepted</span>") == len(nodes) == verification.accepted
        assert html.count('class="ll-tok ll-accepted"') == len(nodes)  # the chip's mark as well as the words
        accepted_somewhere = True
    assert accepted_somewhere, "no step accepted a path: nothing was tested"


def test_the_match_its_occurrences_and_every_node_are_shown(runs):
    run = runs["greedy"]
    vocab = run.trace.vocab
    index = max(decode_indices(run), key=lambda i: len(run.trace.steps[i].report(SuffixRecord).nodes))
    record = run.trace.steps[index]
    html = suffix_html(record, vocab)
    text = shown_text(html)
    suffix = record.report(SuffixRecord)
    assert f"the last {caption.plural(len(suffix.match), 'token')}" in text
    assert f"occurred {caption.plural(suffix.found, 'time')} before" in text
    match = re.search(r'<span class="ll-match">(.*?)</span> occurred', html).group(1)
    assert [unescape(t) for t in re.findall(r">([^<>]+)</span>", match)] == [vocab[str(t)] for t in suffix.match]
    for node in suffix.nodes:
        assert f"followed {node.count}× · probability {node.probability:.0%}" in unescape(html)
    assert html.count('<li class="ll-node') == len(suffix.nodes)
    depth = max(
        len(re.findall("<ul", html[: m.start()])) - len(re.findall("</ul>", html[: m.start()]))
        for m in re.finditer("ll-node", html)
    )
    assert depth > 1, "a tree with no child node: the nesting was not tested"
    assert "its store held 1 earlier output" in text


def test_each_occurrence_says_where_it_was_in_words_and_with_a_mark(runs):
    seen = set()
    for run in runs.values():  # the sampled run strays from the earlier output: its own text matches too
        for index in decode_indices(run):
            record = run.trace.steps[index]
            html = suffix_html(record, run.trace.vocab)
            items = re.findall(r'<ul class="ll-occurrences">(.*?)</ul>', html)
            listed = re.findall(r"<li>(.*?)</li>", items[0]) if items else []
            assert len(listed) == len(record.report(SuffixRecord).occurrences)
            for occurrence, item in zip(record.report(SuffixRecord).occurrences, listed, strict=True):
                mark, words = {
                    GuessSource.PROMPT: ("¶", "this prompt"),
                    GuessSource.OUTPUT: ("✎", "this output"),
                    GuessSource.EARLIER: ("↺", f"an earlier run: {escape(EARLIER)}"),
                }[occurrence.source]
                assert f'aria-hidden="true">{mark}</span>{words}</span>' in item
                assert f"token {occurrence.position} " in item
                seen.add(occurrence.source)
            assert "<b>" not in html  # the visitor's words are text
    assert seen == {GuessSource.EARLIER, GuessSource.PROMPT, GuessSource.OUTPUT}


def test_where_the_tokens_came_from_names_the_earlier_runs(runs):
    words = shown_text(summary.summary_html(runs["greedy"]))
    assert "what followed in earlier runs' outputs" in words
    index = next(
        i
        for i in decode_indices(runs["greedy"])
        if runs["greedy"].trace.steps[i].verification.winner is not None
        and runs["greedy"]
        .trace.steps[i]
        .verification.candidates[runs["greedy"].trace.steps[i].verification.winner]
        .source
        == GuessSource.EARLIER
    )
    shown = replay.panels(runs["greedy"], index)
    assert "matched what followed the match in an earlier run's output" in shown_text(shown["verification"])
    assert "occurred" in shown_text(shown["caption"]) and "path 1" in shown_text(shown["verification"])


def test_the_export_of_a_suffix_run_carries_the_panel_of_every_step(runs):
    run = runs["greedy"]
    page = export.standalone_html(run, 1)
    packed = re.search(r'<script type="application/octet-stream" id="ll-steps"[^>]*>([^<]+)</script>', page).group(1)
    pools = json.loads(gzip.decompress(base64.b64decode(packed)))["pool"]
    assert pools == [replay.panels(run, i)["pool"] for i in range(replay.last_step(run) + 1)]
    assert any("ll-tree" in pool for pool in pools) and replay.panels(run, 1)["pool"] in page


def test_a_run_file_of_schema_11_reads_and_shows_as_it_did():
    """An example re-written as a version 11 file (no suffix facts): it reads, and every panel shows as before."""
    item = next(p for p in PRESETS if p["id"] == "study-tips-medusa")
    data = json.loads(gzip.decompress(library.example_path(item).read_bytes()))
    for part in (data, data["trace"], data["greedy"]):
        part["schema_version"] = 11
    old = library.read_run(json.dumps(data).encode())
    assert old.trace.meta.settings.suffix is None and all(step.report(SuffixRecord) is None for step in old.trace.steps)
    for index in range(replay.last_step(old) + 1):
        assert replay.panels(old, index) == replay.panels(example("study-tips-medusa"), index)


def test_a_crafted_tree_is_refused_and_a_deep_one_draws_without_recursion(runs):
    run = runs["greedy"]
    index = next(i for i in decode_indices(run) if len(run.trace.steps[i].report(SuffixRecord).nodes) > 1)
    data = json.loads(run.to_json())
    nodes = data["trace"]["steps"][index]["method_report"]["nodes"]
    nodes[0]["parent"] = 1  # a node under one after it: the panel could not nest it
    with pytest.raises(SchemaError, match="a node of its suffix tree points at a node that is not before it"):
        library.read_run(json.dumps(data).encode())
    record = run.trace.steps[index]
    chain = [dataclasses.replace(record.report(SuffixRecord).nodes[0], parent=i - 1) for i in range(3000)]
    deep = dataclasses.replace(record, method_report=dataclasses.replace(record.report(SuffixRecord), nodes=chain))
    assert suffix_html(deep, run.trace.vocab).count('<li class="ll-node') == 3000
