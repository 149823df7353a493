"""A class on one machine: simulated visitors pressing Run and Race on the app served here, and what each got.

Usage: python scripts/load_test.py [--default 20] [--own 5] [--races 5] [--within 60] [--seed 0] [--json OUT]

Serves the app in this process on the embedded default model (loaded, warmed up and priced first, as a server
does at start, then one Run and one race of another prompt, as a server that has served a while), then, within
`--within` seconds at times drawn at random: `--default` visitors press Run on the page as it opens (the default
preset, its own settings), `--own` visitors press Run on prompts of their own (the first MT-Bench questions, one
each), and `--races` visitors press Race on the default preset. Each visitor's page is a gradio_client session
that polls its request as a page does. Prints, as Markdown:
- each kind's visitors: how each ended (answered, refused, still waiting), their waits from press to answer
  (median, 95th percentile, longest) and how many were answered from another visitor's measurement;
- how many measurements the default Runs took, and the waits of the default Runs pressed after the first
  measurement of the default question had ended;
- whether every visitor who waited was told a place or that the same question was being measured, with an
  estimate; the places and estimates seen;
- this process's memory before the visitors (after the warm-up) and after them (the server's: it is served here).
The issue's targets are printed beside the figures, met or not: no timed test holds them (a busy CI machine is
not a class's machine). Name the CPU beside the figures you report (`lscpu`).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradio_client import Client  # noqa: E402
from gradio_client.utils import Status  # noqa: E402

from lab.measure.datasets import load_prompts  # noqa: E402
from lookahead_core.models import load_model  # noqa: E402
from scripts.serving import running_app  # noqa: E402

SHARED = "for the first visitor who asked this question"  # in the note of an answer measured for another visitor
PLACE = re.compile(r"(\d+)(?:st|nd|rd|th) in line for the model, about (.+)$")
SAME = "The same question is being measured for another visitor"
TARGET_P95 = 10.0  # seconds: a default Run's wait once the default question was measured (issue 61)
TARGET_MEMORY_MB = 200
POLL = 0.2


@dataclass
class Visitor:
    """One simulated visitor: what they pressed and when, and what their page showed."""

    kind: str  # "default", "own" or "race"
    start: float  # seconds into the load
    end: str = "unanswered"  # "answered", "refused" or "unanswered"
    wait: float | None = None  # seconds from press to answer
    answered_at: float | None = None  # seconds into the load
    shared: bool = False
    told: list[str] = field(default_factory=list)  # what the progress bar said while it waited, each once
    note: str = ""


def line_words(status) -> str | None:
    """What a waiting request's page says of its place: the line's words, or Gradio's own queue rank."""
    if status.code == Status.IN_QUEUE and status.rank is not None:
        return f"queue rank {status.rank + 1}"
    for unit in status.progress_data or []:
        words = unit.desc or ""
        if PLACE.match(words) or words.startswith(SAME):
            return words
    return None


def press(url: str, visitor: Visitor, origin: float, request: dict, api: str, patience: float) -> None:
    """At its time, the visitor presses; their page polls the request until it is answered or `patience` runs out."""
    time.sleep(max(0.0, origin + visitor.start - time.monotonic()))
    client = Client(url, verbose=False, httpx_kwargs={"timeout": 60})
    pressed = time.monotonic()
    job = client.submit(**request, api_name=api)
    while not job.done() and time.monotonic() - pressed < patience:
        words = line_words(job.status())
        if words and (not visitor.told or visitor.told[-1] != words):
            visitor.told.append(words)
        time.sleep(POLL)
    if not job.done():
        job.cancel()
        return
    result = job.result()
    visitor.note = str(result[-1] if api == "/run" else result[0])
    visitor.wait, visitor.answered_at = time.monotonic() - pressed, time.monotonic() - origin
    visitor.end = "refused" if "ll-over" in visitor.note else "answered"
    visitor.shared = SHARED in visitor.note


def percentile(values: list[float], share: float) -> float:
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, int(share * (len(ranked) - 1) + 0.5))]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def report(visitors: list[Visitor], memory: tuple[float, float]) -> dict:
    """The figures, printed as Markdown and returned as a dict."""
    print("| visitors | answered | refused | still waiting | shared | wait median, s | p95, s | longest, s |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in ("default", "own", "race"):
        group = [v for v in visitors if v.kind == kind]
        if not group:
            continue
        waits = [v.wait for v in group if v.wait is not None]
        ends = {end: sum(v.end == end for v in group) for end in ("answered", "refused", "unanswered")}
        figures = (
            f"{statistics.median(waits):.1f} | {percentile(waits, 0.95):.1f} | {max(waits):.1f}"
            if waits
            else "- | - | -"
        )
        print(
            f"| {len(group)} {kind} | {ends['answered']} | {ends['refused']} | {ends['unanswered']} | "
            f"{sum(v.shared for v in group)} | {figures} |"
        )
    defaults = [v for v in visitors if v.kind == "default"]
    measured = [v for v in defaults if v.end == "answered" and not v.shared]
    first_done = min((v.answered_at for v in measured), default=None)
    after = [v.wait for v in defaults if first_done is not None and v.start >= first_done and v.wait is not None]
    p95_after = percentile(after, 0.95) if after else None
    measurers = [v for v in visitors if v.end == "answered" and not v.shared]
    # who waited for someone else's work: told something, or answered from a measurement after a moment, or never
    waited = [v for v in visitors if v.told or (v.shared and v.wait > 2 * POLL + 1) or v.end == "unanswered"]
    told = [v for v in waited if v.told and all("about" in words for words in v.told)]
    grown = memory[1] - memory[0]
    print()
    print(f"- default Runs: {len(measured)} measurement(s) of the default question (target: one or two)")
    if p95_after is not None:
        verdict = "met" if p95_after < TARGET_P95 else "NOT met"
        print(
            f"- default Runs pressed after its first measurement ended ({first_done:.0f} s in): {len(after)}, "
            f"95th percentile wait {p95_after:.2f} s (target under {TARGET_P95:.0f} s: {verdict})"
        )
    print(f"- measured on the model: {len(measurers)} request(s) (each shows its own progress while it measures)")
    print(
        f"- visitors who waited for another's work: {len(waited)}, told a place or the shared measurement, with an "
        f"estimate: {len(told)}"
    )
    for v in told[:6]:  # what the page said first and last while it waited
        said = v.told[0] if len(v.told) == 1 else f"{v.told[0]} … {v.told[-1]}"
        print(f"  - {v.kind} pressed at {v.start:.0f} s: {said}")
    print(
        f"- memory: {memory[0]:.0f} MB before, {memory[1]:.0f} MB after, grew {grown:.0f} MB "
        f"(target under {TARGET_MEMORY_MB} MB: {'met' if grown < TARGET_MEMORY_MB else 'NOT met'})"
    )
    return {
        "visitors": [asdict(v) | {"note": None} for v in visitors],
        "default_measurements": len(measured),
        "default_p95_after_measured": p95_after,
        "waited": len(waited),
        "told": len(told),
        "memory_mb": memory,
    }


def warm_up(url: str) -> None:
    """As a server that has served a while: one Run and one race of a prompt no visitor asks (the race makes the
    draft's bfloat16 copy and loads Medusa's heads and EAGLE's layer once, about 300 MB, before memory is read)."""
    client = Client(url, verbose=False, httpx_kwargs={"timeout": 300})
    prompt = "Count from one to ten in words."
    client.predict(prompt=prompt, max_new_tokens=16, api_name="/run")
    client.predict(prompt=prompt, max_new_tokens=16, api_name="/race")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--default", type=int, default=20, help="visitors pressing Run on the page as it opens")
    parser.add_argument("--own", type=int, default=5, help="visitors pressing Run on a prompt of their own")
    parser.add_argument("--races", type=int, default=5, help="visitors pressing Race on the default preset")
    parser.add_argument("--within", type=float, default=60.0, help="seconds within which every visitor presses")
    parser.add_argument("--patience", type=float, default=600.0, help="seconds a page waits before it gives up")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    draw = random.Random(args.seed)
    own = [item["prompt"] for item in load_prompts("mtbench", limit=args.own)]
    plan = [("default", "/run", {}) for _ in range(args.default)]
    plan += [("own", "/run", {"prompt": prompt, "chat": True}) for prompt in own]
    plan += [("race", "/race", {}) for _ in range(args.races)]
    visitors = [Visitor(kind, round(draw.uniform(0, args.within), 1)) for kind, _, _ in plan]
    with running_app(load_model()) as url:
        warm_up(url)
        before = rss_mb()
        origin = time.monotonic() + 2.0
        threads = [
            threading.Thread(target=press, args=(url, visitor, origin, request, api, args.patience), daemon=True)
            for visitor, (_, api, request) in zip(visitors, plan, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        figures = report(visitors, (before, rss_mb()))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
