"""Many visitors, one model: work stops when its visitor cancels, the queue is bounded, runs stay exact.

The app is served in this process (on tests.conftest.app_model), so the server's CPU time is this process's, read
from /proc.
Figures the closing note reports (time to stop after a cancel, what 8 and 40 clients got) are
printed with -s.
"""

from __future__ import annotations

import os
import random
import re
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from gradio_client import Client
from gradio_client.utils import Status

from lab.serve import server
from lookahead_core.models import DEFAULT_MODEL
from scripts.serving import running_app
from ui.race import RACE_AUTO
from visuals import library, replay

from .test_app import DECODING, race_form, run_form, step_value

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)")

OUTPUT = 3 + replay.PANELS.index("output")  # the output panel among a Run's or a step's outputs
NOTICE = -1  # the note under a Run's button: the last output the API returns (a session's state is not returned)
QUEUED = (Status.IN_QUEUE, *DECODING)
PROMPT = "Write a Python function that returns the n-th Fibonacci number."


@pytest.fixture(scope="module")
def url(app_model):
    with running_app(app_model) as address:
        Client(address, verbose=False).predict(**run_request(2), api_name="/run")
        yield address  # the model is warmed up and priced: no test below pays for that


def cpu_seconds() -> float:
    """This process's CPU time so far, user and system (fields 14 and 15 of /proc/self/stat)."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_rate(seconds: float) -> float:
    """CPU seconds per second over the next `seconds`."""
    before = cpu_seconds()
    time.sleep(seconds)
    return (cpu_seconds() - before) / seconds


def run_request(tokens: int) -> dict:
    """A lookahead Run of PROMPT at W = N = G = 3 for `tokens` new tokens, by the API's parameter names."""
    return run_form(PROMPT, window=3, ngram=3, guesses=3, max_new_tokens=tokens)


def wait_until_processing(job, timeout: float = 60) -> None:
    """Until the job's function runs: a Run yields as it goes, so by the next look its status may already say
    ITERATING or PROGRESS (a busy machine's poll once saw only those, then FINISHED)."""
    deadline = time.monotonic() + timeout
    while job.status().code not in DECODING and not job.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.status().code in DECODING, f"the run was {job.status().code.value}, not decoding: nothing was tested"


def test_a_cancelled_run_stops_within_a_step(url):
    """Counted in this server's CPU seconds, not in wall time: beside other work a step takes longer on the clock,
    but not more of this process's CPU. Uncancelled, the 120-token run would go on spending for seconds."""
    client = Client(url, verbose=False)
    job = client.submit(**run_request(120), api_name="/run")
    wait_until_processing(job)
    working = cpu_rate(1.0)
    assert working > 0.1, f"the run was not using the CPU ({working:.2f} CPU s/s): nothing was tested"
    before = cpu_seconds()
    job.cancel()
    cancelled = time.monotonic()
    while cpu_rate(0.25) > 0.2 and time.monotonic() - cancelled < 30:
        pass
    spent, stopped = cpu_seconds() - before, time.monotonic() - cancelled
    print(f"\nrun cancelled while decoding ({working:.2f} CPU s/s): {spent:.2f} CPU s more, idle in {stopped:.2f} s")
    assert spent < 1.0, f"the server spent {spent:.2f} CPU s after the cancel: the run went on"
    result = Client(url, verbose=False).predict(**run_request(4), api_name="/run")
    assert "<b>4</b><span>new tokens" in result[1]  # the slot is free again


# A class at once: 30 visitors for 16 seconds, most replaying and stepping, a few pressing Run, two racing, one
# sweeping (the counts of issue 44). Model work is small (16 tokens) so that most of it is served within the time.
# (120 s until 2026-11-27, then 90, 60, 45 on 2026-11-28, 30 and then 16 on 2026-12-06, for make test's minutes on the
# 2-core CPU; every Run, race and sweep is pressed within the first 10 s, each while others wait in line for the model.
# scripts/load_test.py is the longer load.)
VISITORS = 30
LOAD_SECONDS = 16.0
RUN_STARTS = (1.0, 3.25, 5.5, 7.75, 10.0)  # seconds into the load: when each of the 5 Runs is pressed
RACE_STARTS = (2.25, 6.75)
SWEEP_STARTS = (4.5,)
REPLAYERS = VISITORS - len(RUN_STARTS) - len(RACE_STARTS) - len(SWEEP_STARTS)
GRACE_SECONDS = 10.0  # after the load, model work still running may finish; what is still queued is cancelled
# Seconds: the replay steps' 95th percentile a class should get, printed beside the one measured; a figure, not a
# bound the test holds (a speed target on a shared machine is a benchmark's, not a test's). The 2-core Intel CPU gave
# under 1 s; the 2-core AMD EPYC (Zen 3) 0.42 s alone, and beside the rest of `make test` 1.56 s here and 4.65 s on CI's
# machine (2026-11-28). That replays never wait behind model work is
# test_replays_are_answered_while_a_run_holds_the_model's, on no clock.
REPLAY_P95 = 1.0
MEMORY_GROWTH_MB = 200


def rss_mb() -> float:
    """This process's resident memory (the server is served in it), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def sweep_request() -> dict:
    """The smallest sweep of a shipped set: one HumanEval prompt, 16 tokens, lookahead at W=2 and prompt lookup."""
    return {
        "source": "humaneval",
        "text": "",
        "count": 1,
        "max_new_tokens": 16,
        "methods": ["lookahead", "prompt-lookup"],
        "windows": "2",
        "ngrams": "3",
        "choice": DEFAULT_MODEL,
        "dtype": "auto",
    }


class Load:
    """What the visitors saw: each replay call's seconds, each model request's queue places and end, any error."""

    def __init__(self) -> None:
        self.replays: list[float] = []
        self.places: dict[str, list[int]] = {}
        self.ends: dict[str, str] = {}
        self.errors: list[str] = []
        self.outputs: list[str] = []
        self.notices: list[str] = []  # under each Run's button: where its figures came from
        self._lock = threading.Lock()

    def timed(self, call):
        start = time.perf_counter()
        try:
            return call()
        except Exception as error:  # noqa: BLE001 (every failure a visitor would see is counted; none stops the load)
            with self._lock:
                self.errors.append(f"replay: {error!r}")
        finally:
            with self._lock:
                self.replays.append(time.perf_counter() - start)


@contextmanager
def replay_session(url: str) -> Iterator[Callable[..., list]]:
    """A page's session: yields `replay_event(name, *data)`, which sends a replay event as the page does (queue=False),
    posted straight to /gradio_api/run/<name> with the session's hash, never through the queue (gradio_client would
    join the queue with every event), and returns what it answered."""
    session = uuid.uuid4().hex
    with httpx.Client(base_url=f"{url}gradio_api/run/", timeout=60) as http:

        def replay_event(name: str, *data) -> list:
            answer = http.post(name, json={"data": list(data), "session_hash": session})
            answer.raise_for_status()
            return answer.json()["data"]

        yield replay_event


REPLAY_EVENTS = ("preset", "step_forward", "step_back", "scrub", "play")


def test_replays_are_answered_while_a_run_holds_the_model(url):
    """Replays never wait behind model work: the page posts them outside the queue (its config says so), and while a
    120-token Run holds the one model slot, a student opens a preset, steps and scrubs, and every answer comes while
    the Run is still decoding. A replay queued or locked behind the Run would be answered only after it: on no clock,
    however busy the machine."""
    events = httpx.get(f"{url}config", timeout=60).json()["dependencies"]
    queued = {event["api_name"]: event["queue"] for event in events if event["api_name"] in REPLAY_EVENTS}
    assert queued == dict.fromkeys(REPLAY_EVENTS, False)
    job = Client(url, verbose=False).submit(**run_request(120), api_name="/run")
    wait_until_processing(job)
    try:
        with replay_session(url) as replay_event:
            shown = [replay_event("preset", library.load_presets()[0]["id"])]
            shown += [replay_event("step_forward", None, step) for step in range(3)]
            shown.append(replay_event("scrub", None, 1))
        decoding = job.status().code in DECODING
    finally:
        job.cancel()
    asked = [1, 2, 3, 1]  # the steps each answer moves to: three steps forward from 0, then a scrub to 1
    assert [step_value(answer[1], at) for answer, at in zip(shown[1:], asked, strict=True)] == asked
    assert shown[-1][1] == {"__type__": "update"}  # a scrub's step is the slider's own: not written back
    assert decoding, "the replays were answered only once the Run had ended"


def replaying(url: str, load: Load, seed: int, stop: float) -> None:
    """A student: opens a preset, steps through it, scrubs, now and then opens another, reading between clicks."""
    rng = random.Random(seed)
    presets = [item["id"] for item in library.load_presets()]
    with replay_session(url) as replay_event:
        while time.monotonic() < stop:
            load.timed(lambda: replay_event("preset", rng.choice(presets)))
            step = 0
            for _ in range(rng.randint(4, 10)):
                if time.monotonic() >= stop:
                    return
                at = step if rng.random() < 0.8 else rng.randint(0, 12)
                name = "step_forward" if at == step else "scrub"
                shown = load.timed(lambda at=at, name=name: replay_event(name, None, at))  # None: the run's state
                step = step_value(shown[1], at) if shown else step
                time.sleep(rng.uniform(0.5, 2.0))  # the student reads the step: a visitor's pace, not a page wait


def model_work(url: str, load: Load, name: str, start: float, api: str, request: dict, stop: float) -> None:
    """A visitor who presses Run, Race or Sweep at `start`: their queue places while waiting, and how it ended."""
    time.sleep(max(start - time.monotonic(), 0.0))
    # gradio_client gives a request 5 s by default (its cancel too); beside make test's other worker, a cancel posted
    # while a step of model work runs took longer once (2026-11-27). A page waits as long as it takes.
    client = Client(url, verbose=False, httpx_kwargs={"timeout": 30})
    job = client.submit(**request, api_name=api)
    places = load.places.setdefault(name, [])
    progressed = False  # its own work's progress shown (a race beside two burners still racing when the load ends)
    while not job.done() and time.monotonic() < stop + GRACE_SECONDS:
        status = job.status()
        place = line_place(status)
        if place is not None:
            places.append(place)
        progressed |= place is None and any(unit.desc for unit in status.progress_data or [])
        time.sleep(0.2)
    if not job.done():
        load.ends[name] = "queued" if places else "running" if progressed else "unanswered"
        job.cancel()
        return
    try:
        result = job.result()
    except Exception as error:  # noqa: BLE001 (counted as the visitor would see it)
        load.errors.append(f"{name}: {error!r}")
        load.ends[name] = "error"
        return
    load.ends[name] = "answered"
    if api == "/run":
        load.outputs.append(client.predict(result[0]["maximum"], api_name="/scrub")[OUTPUT])
        load.notices.append(result[NOTICE])


def line_place(status) -> int | None:
    """A waiting request's place as its page shows it: in Gradio's queue (its rank), in the line for the model
    (the progress bar's "3rd in line for the model"), or 0 where it waits on another visitor's measurement of the
    same question; None while it measures or is done."""
    if status.code == Status.IN_QUEUE and status.rank is not None:
        return status.rank + 1
    for unit in status.progress_data or []:
        words = unit.desc or ""
        if found := re.match(r"(\d+)(st|nd|rd|th) in line for the model, about ", words):
            return int(found[1])
        if words.startswith("The same question is being measured for another visitor"):
            return 0
    return None


@pytest.mark.alone
def test_a_class_at_once_is_answered_queues_model_work_with_its_place_and_keeps_its_memory(url):
    """30 visitors for 16 seconds on the one model: every replay answered, every Run, race and sweep answered,
    queued with its place or running with its progress shown (beside two burners a race was still racing 10 s after
    the load), no error, memory bounded; the Runs each write what one client alone gets (its start, where
    the deadline stopped one on a machine busy with other work). The replay steps' times are printed, against
    REPLAY_P95."""
    alone = Client(url, verbose=False)
    last_step = alone.predict(**run_request(16), api_name="/run")[0]["maximum"]
    reference = token_ids(alone.predict(last_step, api_name="/scrub")[OUTPUT])  # the same session's run, at its end
    load = Load()
    before = rss_mb()
    started = time.monotonic()
    stop = started + LOAD_SECONDS
    work = [(f"run {i + 1}", t, "/run", run_request(16)) for i, t in enumerate(RUN_STARTS)]
    work += [
        (f"race {i + 1}", t, "/race", race_form(PROMPT, RACE_AUTO, max_new_tokens=16))
        for i, t in enumerate(RACE_STARTS)
    ]
    work += [(f"sweep {i + 1}", t, "/tune", sweep_request()) for i, t in enumerate(SWEEP_STARTS)]
    with ThreadPoolExecutor(VISITORS) as pool:
        futures = [pool.submit(replaying, url, load, seed, stop) for seed in range(REPLAYERS)]
        futures += [pool.submit(model_work, url, load, name, started + t, api, req, stop) for name, t, api, req in work]
        for future in futures:
            future.result()
    grown = rss_mb() - before
    replays = sorted(load.replays)
    p95 = replays[int(0.95 * (len(replays) - 1))]
    print(
        f"\n{VISITORS} visitors for {LOAD_SECONDS:.0f} s: {len(replays)} replay calls, median "
        f"{statistics.median(replays):.3f} s, 95th percentile {p95:.3f} s (a class should get under {REPLAY_P95} s), "
        f"slowest {replays[-1]:.2f} s; "
        f"model work: {dict(sorted(load.ends.items()))}; places seen: "
        f"{ {name: max(places) for name, places in load.places.items() if places} }; memory grew {grown:.0f} MB"
    )
    assert not load.errors, load.errors
    assert set(load.ends) == {name for name, *_ in work}
    assert all(end in ("answered", "queued", "running") for end in load.ends.values()), load.ends
    assert all(load.places[name] for name, end in load.ends.items() if end == "queued")
    assert grown < MEMORY_GROWTH_MB, f"memory grew {grown:.0f} MB"
    assert load.outputs and all(reference[: len(ids)] == ids for ids in map(token_ids, load.outputs))
    # the question the lone visitor measured before the load: every Run of it is answered from that measurement
    assert all("for the first visitor who asked this question" in notice for notice in load.notices), load.notices


def token_ids(output: str) -> list[int]:
    """The token ids an output panel shows, in order (a Run the deadline stopped under load shows a prefix)."""
    return [int(found) for found in re.findall(r'title="id (\d+) ', output)]


def test_past_the_lines_bound_a_client_is_told_the_lab_is_busy_and_each_waiting_one_its_place(url, monkeypatch):
    """Eight different questions at once (a shared answer would take none of the line) on a line that holds three:
    one measures, three wait each told its place and an estimate, four are refused with the lab's message. The
    line's real bound (lab.serve.line.CAPACITY, a class) works the same; three keep the test short."""
    monkeypatch.setattr(server.LINE, "capacity", 3)
    # The first Run holds the model until the line has been seen full: by its tokens alone it did not. On the app's
    # model a Run of 64 tokens ended before the eighth client asked, and the eighth took the freed place (places seen
    # {1: {1}, 3: {3}, 7: {1}}); with 256 tokens, beside two burners, the seventh did ({..., 6: {1}}; fresh clones'
    # make test on the 2-core Xeon, 2026-12-06). The clients connect before the first asks.
    released, record = threading.Event(), server.record

    def held_until_released(*args, **kwargs):
        released.wait(90)
        yield from record(*args, **kwargs)

    monkeypatch.setattr(server, "record", held_until_released)
    requests = [
        run_form(f"{PROMPT} Call it fib_{i}.", window=3, ngram=3, guesses=3, max_new_tokens=64) for i in range(8)
    ]
    clients = [Client(url, verbose=False) for _ in requests]
    jobs = []
    for client, request in zip(clients, requests, strict=True):  # in order: the first takes the model first
        jobs.append(client.submit(**request, api_name="/run"))
        time.sleep(0.3)
    places: dict[int, set[int]] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum(job.done() for job in jobs) + len(places) < len(jobs) - 1:
        for i, job in enumerate(jobs):
            place = None if job.done() else line_place(job.status())
            if place:
                places.setdefault(i, set()).add(place)
        time.sleep(0.2)
    refused = [str(job.result()[NOTICE]) for job in jobs if job.done()]
    released.set()
    for job in jobs:
        job.cancel()
    print(f"\n8 questions on a line of 3: places seen {places}; refused: {len(refused)}, {refused[:1]}")
    assert sorted(min(seen) for seen in places.values()) == [1, 2, 3], places
    assert len(refused) == 4 and all("The lab is busy: 3 requests are waiting" in notice for notice in refused)
