"""The public lab under a visitor who means harm: fuzzed HTTP endpoints, fuzzed run files, crafted runs. Links that
carry a payload, opened in Chromium, are tests/browser/test_hostile_links.py.

Every corpus is generated from a fixed seed, so a failure reproduces. Each test prints its counts:
cases sent, messages, failures (pytest -s shows them). The app is served on tests.conftest.app_model.
"""

from __future__ import annotations

import copy
import gzip
import json
import logging
import random
import time

import httpx
import pytest

from lookahead_core.records import SchemaError
from scripts import serving
from tests.test_markup import PAYLOAD, payload_elements
from visuals import library, replay

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)")

PRESETS = library.load_presets()
SEED = 25
# The values a client may send, by endpoint (the session's state is not sent: the server holds it).
RUN = ["def add(a, b):\n", False, 4, 3, 4, 2, False, "lookahead", 10, 4, False, 0.8, 0, 0.95, 0]
RUN.append("SmolLM2-135M-Instruct")
ENDPOINTS = {
    "json": [],
    "html": [3],
    "slide": [3],
    "open": [None],
    "step_back": [3],
    "step_forward": [3],
    "scrub": [3],
    "play": [3, 2],
    "preset": ["pencils"],
    "run": [*RUN, "auto"],
    "race": [*RUN[:6], "the sliders' W, N, G", *RUN[8:], "auto"],
    "race_playback": [False],
}
JUNK = [
    None,
    True,
    -1,
    0,
    10**30,
    -1e308,
    2.5,
    "",
    "abc",
    "NaN",
    "x" * 100_000,
    "\u202e\u0000\ufeff😀" * 50,
    "\ud7ff\ue000",
    PAYLOAD,
    [],
    {},
    [1, 2, 3],
    {"path": "/etc/passwd"},
    {"path": "/etc/passwd", "meta": {"_type": "gradio.FileData"}},
    json.loads("[" * 60 + "]" * 60),
    {"a": {"b": {"c": {"d": [None]}}}},
]


def fuzz_cases(rng: random.Random, valid: list, count: int) -> list:
    """`count` bodies for one endpoint: its valid values with some replaced by junk, too few, too many, or junk."""
    cases = []
    for _ in range(count):
        kind = rng.random()
        data = list(valid)
        if kind < 0.6 and data:
            for index in rng.sample(range(len(data)), rng.randint(1, min(3, len(data)))):
                data[index] = copy.deepcopy(rng.choice(JUNK))
        elif kind < 0.75:
            data = data[: rng.randint(0, max(len(data) - 1, 0))]
        elif kind < 0.85:
            data = data + [copy.deepcopy(rng.choice(JUNK)) for _ in range(rng.randint(1, 3))]
        elif kind < 0.95:
            data = [copy.deepcopy(rng.choice(JUNK)) for _ in range(len(data))]
        else:
            data = copy.deepcopy(rng.choice(JUNK))  # not even a list
        cases.append(data)
    return cases


def outcome(client: httpx.Client, name: str, data) -> tuple[str, str]:
    """(what came back, its text): 'complete', 'message' (an error event with words), 'refused' (FastAPI's 422),
    or something else, which the test fails."""
    posted = client.post(f"gradio_api/call/{name}", json={"data": data})
    if posted.status_code == 422:
        return "refused", posted.text
    if posted.status_code != 200:
        return f"HTTP {posted.status_code}", posted.text[:300]
    streamed = client.get(f"gradio_api/call/{name}/{posted.json()['event_id']}")
    if streamed.status_code != 200:
        return f"HTTP {streamed.status_code}", streamed.text[:300]
    events = [line.removeprefix("event: ") for line in streamed.text.splitlines() if line.startswith("event: ")]
    payloads = [line.removeprefix("data: ") for line in streamed.text.splitlines() if line.startswith("data: ")]
    if events and events[-1] == "complete":
        return "complete", payloads[-1][:300]
    if events and events[-1] == "error" and (json.loads(payloads[-1]) or {}).get("error"):
        return "message", json.loads(payloads[-1])["error"]
    return f"event {events[-1:]}", streamed.text[:300]


@pytest.fixture(scope="module")
def url(app_model):
    with serving.running_app(app_model) as address:
        yield address


def test_every_endpoint_answers_fuzzed_requests_with_a_message(url, capfd, caplog):
    caplog.set_level(logging.INFO, logger="lookahead_lab")
    rng = random.Random(SEED)
    counts = {"cases": 0, "complete": 0, "message": 0, "refused": 0, "failures": 0}
    failures = []
    with httpx.Client(base_url=url, timeout=120) as client:
        for name, valid in ENDPOINTS.items():
            for data in fuzz_cases(rng, valid, 15 if name in ("run", "race") else 20):  # model work: 15 (79 s at 30)
                kind, text = outcome(client, name, data)
                counts["cases"] += 1
                if kind in counts:
                    counts[kind] += 1
                else:
                    counts["failures"] += 1
                    failures.append((name, str(data)[:200], kind, text))
        assert outcome(client, "scrub", [3])[0] == "complete"  # still serving
    log = capfd.readouterr().err
    print(f"\nHTTP fuzz: {counts}")
    assert not failures, failures[:5]
    assert "Traceback" not in log, log[log.index("Traceback") :][:2000]
    refusals = [r for r in caplog.records if r.name == "lookahead_lab" and r.getMessage().startswith("Not ")]
    assert counts["message"] and len(refusals) >= counts["message"]  # one line per refused request at least
    assert all("\n" not in r.getMessage() for r in refusals)


# ----------------------------------------------------------------------------------------------
# Run files


def example_data(preset_id: str) -> dict:
    return json.loads(gzip.decompress(library.example_path(library.preset(PRESETS, preset_id)).read_bytes()))


def places(data, path=()) -> list[tuple]:
    """Paths to every value in `data`, the first few items of each list only."""
    found = [path]
    if isinstance(data, dict):
        for key, value in data.items():
            found += places(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data[:4]):
            found += places(value, (*path, index))
    return found


def mutated(text: str, paths: list[tuple], rng: random.Random) -> dict:
    """The run file `text` (whose places are `paths`) with one to three values changed: a number nudged, junk put in,
    a field or item removed, a list repeated or reversed."""
    data = json.loads(text)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(paths)
        try:
            parent = data
            for key in path[:-1]:
                parent = parent[key]
            value, roll = parent[path[-1]], rng.random()
            if roll < 0.35 and isinstance(value, int) and not isinstance(value, bool):
                parent[path[-1]] = value + rng.choice([-1, 1, -2, 2, 7, -50, 50])
            elif roll < 0.6:
                parent[path[-1]] = copy.deepcopy(rng.choice(JUNK))
            elif roll < 0.75:
                del parent[path[-1]]
            elif isinstance(value, list):
                value.extend(value * rng.randint(1, 3)) if roll < 0.9 else value.reverse()
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the way there
    return data


@pytest.mark.heavy
def test_the_reader_refuses_or_draws_mutated_run_files(caplog):
    rng = random.Random(SEED)
    bases = [(json.dumps(data), places(data)[1:]) for data in (example_data(p["id"]) for p in PRESETS)]
    counts = {"cases": 0, "refused": 0, "drawn": 0, "panels that could not draw": 0}
    for _ in range(240):
        text = json.dumps(mutated(*rng.choice(bases), rng)).encode("utf-8", "surrogatepass")
        counts["cases"] += 1
        try:
            run = library.read_run(gzip.compress(text) if rng.random() < 0.5 else text)
        except SchemaError as error:
            counts["refused"] += 1
            assert len(str(error)) <= library.MAX_MESSAGE
            continue
        counts["drawn"] += 1
        # a mutation reaches the first 4 items of a list (places), so steps 0-3 show its own effect, the last step
        # what it did to everything after (a pool, a summary): drawing every step took 22 s of make test
        steps = len(run.trace.steps)
        for index in (i for i in range(steps) if i < 4 or i == steps - 1):
            shown = replay.panels(run, index)  # raises nothing: a panel a record breaks says so
            counts["panels that could not draw"] += sum(replay.UNDRAWABLE in html for html in shown.values())
    print(f"\nrun-file fuzz: {counts}")
    assert counts["refused"] and counts["drawn"]


def test_a_file_nested_deeper_than_the_limit_is_refused_before_parsing():
    for text in (b"[" * 2_000_000 + b"]" * 2_000_000, b'{"trace": ' * 40 + b"1" + b"}" * 40):
        with pytest.raises(SchemaError, match="nests arrays or objects .* deep; a recorded run nests at most 12"):
            library.read_run(text)
    data = example_data("python")
    data["trace"]["meta"]["prompt_text"] = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[["  # brackets inside a string do not count
    assert library.read_run(json.dumps(data).encode()).trace.meta.prompt_text.startswith("[[[")


def crafted(rows: int, dense: int) -> dict:
    """The python example with its last lookahead step made `rows` rows wide, as a visitor could write it: each
    of the first `dense` rows sees every other earlier row (the most rectangles a mask can take), the others
    only themselves."""
    data = example_data("python")
    step = data["trace"]["steps"][-1]
    template = step["rows"][1]
    step["rows"] = [
        {**template, "parent": i - 1, "sees": list(range(i % 2, i + 1, 2)) if i < dense else [i]} for i in range(rows)
    ]
    step["tokens_fed"] = rows
    return data


@pytest.mark.heavy  # seconds: kept out of make test-quick's minute
def test_the_crafted_1500_row_run_is_refused_with_the_limit_it_passed():
    data = crafted(1_500, 1_500)
    blob = gzip.compress(json.dumps(data).encode())
    with pytest.raises(SchemaError, match="rows fed in step .*: 1,500, over this lab's limit of 512"):
        library.read_run(blob)


def test_the_widest_run_the_limits_let_through_draws_under_2_mb_per_step():
    data = crafted(library.MAX_ROWS, 250)  # 250 dense rows: 15,750 mask cells of the 16,384 allowed
    run = library.read_run(json.dumps(data).encode())
    last = replay.last_step(run)
    started = time.perf_counter()
    shown = replay.panels(run, last)
    seconds = time.perf_counter() - started
    size = sum(map(len, shown.values()))
    print(f"\nthe widest step the limits allow: {size / 1e6:.2f} MB of HTML drawn in {seconds:.2f} s")
    assert size < 2_000_000 and replay.UNDRAWABLE not in shown["mask"]
    assert shown["mask"].count("<rect") > 15_000  # every other cell of the dense rows is a rectangle of its own
    assert seconds < 5  # the figure printed above is the measurement; this only catches a pathology


def test_payload_elements_catches_what_the_page_would_draw():
    assert payload_elements(f"<div>{PAYLOAD}</div>")
