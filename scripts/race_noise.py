"""The default race (or Run), repeated on a quiet machine and beside CPU burners: do its verdicts hold, and its time?

Usage: python scripts/race_noise.py [--races 5] [--burners 2] [--kind race|run] [--json OUT.json]
Loads the default model as the server does, then runs the race the page opens with (the first
preset's prompt, chat flag and new tokens; lookahead on auto settings), or with `--kind run` its Run of
lookahead, `--races` times on the machine as it is, then `--races` times beside `--burners` processes that
spin on a core each (bounded: they stop when the script does). For every one it prints the verdict, each
method's median speedup with its interval, the rounds, the new tokens decoded (and asked for, where the
machine's pace made them fewer; lab.serve.budget.fitted_tokens), what other programs used of the CPU, and the
seconds it held the model against its budget (lab.serve.budget.RACE_SECONDS or RUN_SECONDS).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.serve import server  # noqa: E402
from lab.serve.budget import RACE_SECONDS, RUN_SECONDS, BudgetError  # noqa: E402
from lookahead_core.records import METHODS, Method, RaceRecord, Run  # noqa: E402
from ui.form import NO_DEFAULT, RACE_FORM, RUN_FORM, model_request_of  # noqa: E402
from visuals import library  # noqa: E402
from visuals.race import race_story  # noqa: E402
from visuals.summary import verdict_words  # noqa: E402


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def default_request(kind: str):
    """The race's (or a Run of lookahead's) request the page sends at its defaults, through the form's own checks."""
    preset = library.load_presets()[0]
    values = {name: preset[name] for name in ("prompt", "chat", "window", "ngram", "guesses", "max_new_tokens")}
    values |= dict(lookup_tokens=10, draft_tokens=4, sample=False, temperature=0.8, top_k=0, top_p=0.95, seed=0)
    form = RACE_FORM if kind == "race" else RUN_FORM
    values |= {field.name: field.default for field in form if field.default is not NO_DEFAULT}
    values |= {"method": Method.LOOKAHEAD.value}  # a Run's field; a race reads none
    return model_request_of(values, auto=True)


def one(kind: str, request) -> tuple[RaceRecord | Run, float]:
    *_, (result, seconds) = (server.timed_race if kind == "race" else server.record)(request)
    return result, seconds


def row(condition: str, result: RaceRecord | Run, seconds: float) -> dict:
    timing = result.timing
    race, greedy = isinstance(result, RaceRecord), timing.of(Method.GREEDY)
    return {
        "condition": condition,
        "kind": "race" if race else "run",
        "verdict": race_story(result) if race else verdict_words(result, result.trace.meta.machine.device_name),
        "new_tokens": result.max_new_tokens if race else result.trace.meta.max_new_tokens,
        "asked_tokens": timing.asked_tokens,
        "later_tokens": timing.later_tokens,
        "leaders": [m.value for m in timing.leaders],
        "rounds": timing.rounds,
        "speedups": {
            t.method.value: [t.speedup.median, t.speedup.low, t.speedup.high]
            for t in timing.methods
            if t.method != Method.GREEDY
        },
        "greedy_tok_s": [greedy.rate.median, greedy.rate.low, greedy.rate.high],
        "other_cores": timing.busy.other_cores,
        "partial": timing.partial,
        "held_seconds": seconds,
        "budget_seconds": RACE_SECONDS if race else RUN_SECONDS,
    }


def printed(entry: dict) -> str:
    speeds = ", ".join(
        f"{METHODS[Method(m)].short} {v[0]:.2f}× ({v[1]:.2f}–{v[2]:.2f})" for m, v in entry["speedups"].items()
    )
    others = entry["other_cores"]
    tokens = f"{entry['new_tokens']} tokens" + (f" of {entry['asked_tokens']} asked" if entry["asked_tokens"] else "")
    later = f" (later rounds {entry['later_tokens']})" if entry["later_tokens"] else ""
    return (
        f"{entry['condition']:>8}: {entry['rounds']} rounds, {tokens}{later}, {speeds}; "
        f"leaders {'/'.join(entry['leaders'])}; "
        f"others {'?' if others is None else f'{others * 100:.0f}%'} of a core; held {entry['held_seconds']:.1f} s "
        f"of {entry['budget_seconds']:.0f} s{' (partial)' if entry['partial'] else ''}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races", type=int, default=5)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write every race's figures here")
    parser.add_argument("--conditions", nargs="+", default=["quiet", "burners"], choices=["quiet", "burners"])
    parser.add_argument("--kind", default="race", choices=["race", "run"])
    args = parser.parse_args()
    request = default_request(args.kind)
    server.MODEL.get(request.model, request.dtype)  # loaded, warmed and priced, as the server does at start
    entries = []
    for condition, burners in (("quiet", 0), ("burners", args.burners)):
        if condition not in args.conditions:
            continue
        spinners = [multiprocessing.Process(target=spin, args=(3600,), daemon=True) for _ in range(burners)]
        for spinner in spinners:
            spinner.start()
        time.sleep(2.0 if spinners else 0.0)  # spinning before the first request, as on a machine already busy
        try:
            for _ in range(args.races):
                try:
                    entries.append(row(condition, *one(args.kind, request)))
                except BudgetError as refusal:
                    entries.append({"condition": condition, "refused": str(refusal)})
                    print(f"{condition:>8}: refused: {refusal}", flush=True)
                    continue
                print(printed(entries[-1]), flush=True)
        finally:
            for spinner in spinners:
                spinner.terminate()
    if args.json:
        args.json.write_text(json.dumps(entries, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
