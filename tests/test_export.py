"""Runs leaving the server and coming back: the standalone HTML replay, the CLI, and reading a run file.

The browser half (the export opened offline in Chromium, stepped and compared with the app) is in
tests/browser/test_classroom.py.
"""

from __future__ import annotations

import base64
import gzip
import json
import re

import pytest

from lookahead_core.records import SCHEMA_VERSION, Run, SchemaError, to_data
from visuals import export, library, replay
from visuals.__main__ import main as visuals_main

PRESETS = library.load_presets()
# Any URL an exported page would fetch or link to: an absolute or protocol-relative src/href (the PNG
# button draws from a data: URL and saves through a blob: URL, both made in the page)
EXTERNAL = re.compile(r"""\b(?:src|href)\s*=\s*["']?\s*(?!data:|blob:)(?:[a-z][a-z0-9+.-]*:|//)""", re.IGNORECASE)


@pytest.fixture(scope="module")
def run() -> Run:
    return library.load_run(library.example_path(library.preset(PRESETS, "python")))


def unpacked(page: str) -> dict[str, list[str]]:
    data = re.search(r'<script type="application/octet-stream" id="ll-steps"[^>]*>([^<]*)</script>', page)
    return json.loads(gzip.decompress(base64.b64decode(data.group(1))))


def test_the_standalone_page_carries_every_step_of_every_panel_as_the_app_draws_it(run):
    page = export.standalone_html(run, 3)
    columns = unpacked(page)
    assert list(columns) == list(replay.PANELS)
    for index in range(replay.last_step(run) + 1):
        shown = replay.panels(run, index)
        assert [columns[name][index] for name in replay.PANELS] == [shown[name] for name in replay.PANELS]
    assert 'data-step="3"' in page and replay.panels(run, 3)["window"] in page  # readable before any script runs


@pytest.mark.parametrize("preset_id", [p["id"] for p in PRESETS])
def test_an_exported_page_names_no_external_url_and_stays_small(preset_id):
    page = export.standalone_html(library.load_run(library.example_path(library.preset(PRESETS, preset_id))))
    assert EXTERNAL.findall('<img src="https://cdn.example/x.png"><a href=//cdn.example><script src="file:///x">')
    assert EXTERNAL.findall(page) == []
    assert "<link" not in page and "@import" not in page
    assert re.findall(r"url\((?!#ll-fill-)", page) == []  # the chart's fills name its own patterns, nothing fetched
    assert len(page.encode()) < 300_000  # every shipped preset (up to 64 new tokens)


def test_a_visitors_text_is_escaped_in_the_page_around_the_panels(run):
    hostile = Run.from_json(run.to_json().replace("SmolLM2-135M-Instruct", "<script>alert(1)</script>"))
    page = export.standalone_html(hostile)
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


# ----------------------------------------------------------------------------------------------
# Reading a run file


def test_a_run_survives_save_and_read_in_either_form(run, tmp_path):
    for name in ("run.json", "run.json.gz"):
        library.save_run(run, tmp_path / name)
        again = library.read_run((tmp_path / name).read_bytes())
        assert again.to_json() == run.to_json()


def refusal(data: bytes) -> str:
    with pytest.raises(SchemaError) as error:
        library.read_run(data)
    return str(error.value)


def test_files_that_are_not_a_run_get_a_message_that_says_what_they_are(run):
    data = to_data(run)
    assert "not JSON" in refusal(b"\x89PNG\r\n\x1a\n not a trace")
    assert "not JSON" in refusal(b"{ 'half': ")
    assert "not a run saved by Lookahead Lab" in refusal(b"[1, 2, 3]")
    assert "one trace, not a run" in refusal(json.dumps(data["trace"]).encode())
    assert "a race, not a run" in refusal(json.dumps({"lanes": [], "schema_version": SCHEMA_VERSION}).encode())
    assert f"version 2; this lab reads schema version {SCHEMA_VERSION}" in refusal(
        json.dumps({**data, "schema_version": 2}).encode()
    )
    assert "no schema version" in refusal(json.dumps({k: v for k, v in data.items() if k != "schema_version"}).encode())
    broken = json.loads(json.dumps(data))
    del broken["trace"]["meta"]["machine"]
    assert "missing field 'machine'" in refusal(json.dumps(broken).encode())
    empty = json.loads(json.dumps(data))
    empty["trace"]["steps"] = []
    assert "no steps" in refusal(json.dumps(empty).encode())


def test_too_large_files_and_zip_bombs_are_refused_before_parsing():
    assert "at most" in refusal(b" " * (library.MAX_RUN_BYTES + 1))
    bomb = gzip.compress(b" " * (library.MAX_RUN_JSON_BYTES + 10))
    assert len(bomb) < library.MAX_RUN_BYTES
    assert "unzips to more than" in refusal(bomb)
    assert "does not unzip" in refusal(b"\x1f\x8b\x08\x00garbage")


# ----------------------------------------------------------------------------------------------
# The CLI: python -m visuals export


def test_the_cli_writes_a_page_opened_at_the_step_asked(run, tmp_path, capsys):
    library.save_run(run, tmp_path / "run.json")
    out = tmp_path / "replay.html"
    assert visuals_main(["export", str(tmp_path / "run.json"), "--html", str(out), "--step", "4"]) == 0
    assert out.read_text() == export.standalone_html(run, 4)
    assert "step 4 of" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (b"not json", [], "not JSON"),
        (None, ["--step", "999"], "outside this run's steps"),
        (None, [], None),  # no output asked
    ],
)
def test_the_cli_refuses_bad_input_with_one_line_and_status_2(run, tmp_path, capsys, content, extra, message):
    source = tmp_path / "run.json"
    source.write_bytes(content if content is not None else run.to_json().encode())
    outputs = ["--html", str(tmp_path / "out.html")] if message else []
    assert visuals_main(["export", str(source), *outputs, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert (message or "say what to write") in err


def test_the_cli_says_when_the_file_is_missing(tmp_path, capsys):
    assert visuals_main(["export", str(tmp_path / "nothing.json"), "--html", str(tmp_path / "o.html")]) == 2
    assert "No such file" in capsys.readouterr().err
