"""Many visitors, one model: work stops when its visitor cancels, the queue is bounded, runs stay exact.

The app is served in this process, so the server's CPU time is this process's, read from /proc.
Figures the closing note reports (time to stop after a cancel, what 8 and 40 clients got) are
printed with -s.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from gradio_client import Client
from gradio_client.utils import QueueError, Status

from scripts.serving import running_app
from ui.page import MAX_WAITING
from visuals import replay

from .test_app import run_form

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*(copy keyword|no_silent_downcasting)")

OUTPUT = 3 + replay.PANELS.index("output")  # the output panel among a Run's or a step's outputs
QUEUED = (Status.IN_QUEUE, Status.PROCESSING, Status.ITERATING, Status.PROGRESS)
PROMPT = "Write a Python function that returns the n-th Fibonacci number."


@pytest.fixture(scope="module")
def url(default_model):
    with running_app(default_model) as address:
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
    deadline = time.monotonic() + timeout
    while job.status().code != Status.PROCESSING and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.status().code == Status.PROCESSING


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


def test_four_concurrent_clients_all_finish_with_the_single_client_output(url):
    """Four sessions queued at once on one model (the server runs one at a time): each gets the output one client
    alone gets. Four, not eight: one at a time, eight cost 73 s to catch what four catch."""

    def output_of(client: Client) -> str:
        result = client.predict(**run_request(8), api_name="/run")
        return client.predict(result[0]["maximum"], api_name="/scrub")[OUTPUT]

    alone = output_of(Client(url, verbose=False))
    clients = [Client(url, verbose=False) for _ in range(4)]
    started = time.perf_counter()
    with ThreadPoolExecutor(len(clients)) as pool:
        outputs = list(pool.map(output_of, clients))
    print(f"\n4 concurrent 8-token Runs: all finished in {time.perf_counter() - started:.1f} s")
    assert outputs == [alone] * 4


def test_past_the_queue_bound_a_client_is_told_the_lab_is_busy(url):
    clients = [Client(url, verbose=False) for _ in range(40)]
    jobs = [client.submit(**run_request(16), api_name="/run") for client in clients]
    deadline = time.monotonic() + 30
    while not all(job.done() or job.status().code in QUEUED for job in jobs) and time.monotonic() < deadline:
        time.sleep(0.1)
    refused = [job for job in jobs if job.done() and isinstance(job.exception(), QueueError)]
    busy = [str(job.exception()) for job in refused]
    accepted = [job for job in jobs if job not in refused]
    for job in accepted:
        job.cancel()
    print(
        f"\n40 clients at once: {len(accepted)} accepted (1 running + {MAX_WAITING} waiting), "
        f"{len(busy)} told: {busy[0] if busy else '-'}"
    )
    assert len(accepted) == 1 + MAX_WAITING and len(busy) == 40 - len(accepted)
    assert all("Queue is full" in message and "try again" in message for message in busy)
