"""Older files as this schema version's data: an UPGRADABLE record re-labelled (each version until 13 only added
facts with defaults; 14 gathered each method's settings into one record keyed by method; 15 a step's method report
into one entry), and a bench report from
before bench reports were versioned rewritten under today's names and fields. Nothing here decodes: codec checks
every field of what comes back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .methods import entrant_settings
from .names import SCHEMA_VERSION, BenchMethod, Method

# The last version that gave each method's settings a field of its own (MethodSettings since).
FLAT_SETTINGS = 13
# The last version that gave each method's step report a field of its own (StepRecord.method_report since).
FLAT_REPORTS = 14


def upgraded(data: dict, kind: str) -> dict:
    """An UPGRADABLE record's data, a document of class `kind` ("Trace", "Run", "RaceRecord", "BenchReport"), as this
    version's: the documents it nests are re-labelled too."""
    version = data["schema_version"]
    data = relabelled(data)
    if version <= FLAT_SETTINGS:
        for path, gather in FLAT_SETTINGS_AT.get(kind, ()):
            data = within(data, path, gather)
    if version <= FLAT_REPORTS:
        for path in TRACES_AT.get(kind, ()):
            data = within(data, path, gathered_reports)
    return data


def relabelled(data: dict) -> dict:
    return {
        key: SCHEMA_VERSION if key == "schema_version" else relabelled(value) if isinstance(value, dict) else value
        for key, value in data.items()
    }


def within(data: dict, path: tuple[str, ...], change: Callable[[dict], dict]) -> dict:
    """`data` with the dict at `path` changed (unchanged where the path does not lead to one: decoding says so)."""
    if not path:
        return change(data)
    inner = data.get(path[0])
    return data | {path[0]: within(inner, path[1:], change)} if isinstance(inner, dict) else data


def gathered(data: dict, fields: dict[str, str], into: str) -> dict:
    """`data` with its `fields` (an old name: the method's field of MethodSettings) gathered into one record under
    `into`, the None ones left out."""
    kept = {key: value for key, value in data.items() if key not in fields}
    return kept | {into: {fields[key]: value for key, value in data.items() if key in fields and value is not None}}


def gathered_meta(meta: dict) -> dict:
    """A trace's meta: its `draft` was speculative decoding's, or an EAGLE trace's layer (schema 8 on)."""
    drafted = "eagle" if meta.get("method") == "eagle" else "speculative"
    fields = {"settings": "lookahead", "lookup": "prompt_lookup", "draft": drafted, "medusa": "medusa"}
    return gathered(meta, fields | {"suffix": "suffix"}, "settings")


def gathered_race(race: dict) -> dict:
    fields = {"settings": "lookahead", "lookup": "prompt_lookup", "draft": "speculative"}
    return gathered(race, fields | {"medusa": "medusa", "eagle": "eagle", "suffix": "suffix"}, "settings")


def gathered_bench(settings: dict) -> dict:
    """A bench's settings: with auto settings, lookahead ran the auto choice (kept in `auto`, its W, N, G also in
    `lookahead`), which lookahead's settings are now. Only the entrants' are kept: the bench wrote lookahead's and
    prompt lookup's whichever methods ran."""
    auto = settings.get("auto")
    settings = {key: value for key, value in settings.items() if key != "auto"}
    if auto is not None:
        settings["lookahead"] = auto
    ran = {entrant_settings(BenchMethod(m)) for m in settings.get("methods", []) if m in set(BenchMethod)}
    fields = {"lookahead": Method.LOOKAHEAD, "prompt_lookup": Method.PROMPT_LOOKUP, "draft": Method.SPECULATIVE}
    fields |= {"medusa": Method.MEDUSA, "eagle": Method.EAGLE, "suffix": Method.SUFFIX}
    kept = {old: method.name.lower() for old, method in fields.items() if method in ran}
    entrants_only = {key: value for key, value in settings.items() if key not in fields or key in kept}
    return gathered(entrants_only, kept, "by_method")


# Where each document kept its methods' settings, and how they are gathered.
FLAT_SETTINGS_AT: dict[str, tuple[tuple[tuple[str, ...], Callable[[dict], dict]], ...]] = {
    "Trace": ((("meta",), gathered_meta),),
    "Run": ((("trace", "meta"), gathered_meta), (("greedy", "meta"), gathered_meta)),
    "RaceRecord": (((), gathered_race),),
    "BenchReport": ((("settings",), gathered_bench),),
}


# Where each document keeps its traces, whose steps carry their method's report.
TRACES_AT: dict[str, tuple[tuple[str, ...], ...]] = {"Trace": ((),), "Run": (("trace",), ("greedy",))}
# A step's report's field before schema 15 (each its own; at most one held).
FLAT_REPORT_FIELDS = ("draft", "heads", "suffix")


def gathered_reports(trace: dict) -> dict:
    """A trace whose steps each gave a draft, Medusa's heads and suffix decoding's tree a field of its own, with
    the one that is not None as the step's `method_report` (unchanged where `steps` is not a list: decoding says
    so)."""
    steps = trace.get("steps")
    if not isinstance(steps, list):
        return trace
    return trace | {"steps": [gathered_report(step) if isinstance(step, dict) else step for step in steps]}


def gathered_report(step: dict) -> dict:
    """A step with its one report as `method_report` (unchanged where it held two: decoding names the field)."""
    reports = [step[key] for key in FLAT_REPORT_FIELDS if step.get(key) is not None]
    if len(reports) > 1:
        return step
    kept = {key: value for key, value in step.items() if key not in FLAT_REPORT_FIELDS}
    return kept | ({"method_report": reports[0]} if reports else {})


def unversioned_bench_report(data: Any) -> Any:
    """A bench report written before bench reports carried a schema version (docs/bench), as this version's data.

    Three generations of the bench wrote them, and against today's report: those from before this engine
    had its own prompt lookup have no `settings.prompt_lookup` nor `settings.draft`, and their
    `prompt-lookup` was transformers' (today's `hf-prompt-lookup`); those from before sampling have no
    `settings.sampling` (they are greedy); those from before acceptance was counted have no `acceptance`,
    `offered` or `accepted`; the sampled ones counted `draws` (kept) where today's count `offered`; an auto
    choice from before its regime was recorded gave its `why` in words (kept as `settings.auto_why`). No
    figure is dropped. Versioned data is returned as it is; unversioned data of another shape is only
    stamped with a version, so that decoding names what does not fit.
    """
    if not isinstance(data, dict) or "schema_version" in data:
        return data
    stamped = data | {"schema_version": FLAT_SETTINGS}  # read on as the last version of their settings' shape
    if not shaped_like_a_report(data):
        return stamped
    names = {} if "prompt_lookup" in data["settings"] else TRANSFORMERS_PROMPT_LOOKUP
    return stamped | {
        "summary": by_name(data["summary"], names, {"acceptance": None}),
        "prompts": [
            row | {"methods": by_name(row["methods"], names, {"offered": None, "accepted": None})}
            for row in data["prompts"]
        ],
        "settings": unversioned_settings(data["settings"], names),
    }


# Before this engine had prompt lookup, the bench's `prompt-lookup` was transformers'.
TRANSFORMERS_PROMPT_LOOKUP = {BenchMethod.PROMPT_LOOKUP.value: BenchMethod.HF_PROMPT_LOOKUP.value}


def by_name(table: dict, names: dict[str, str], missing: dict) -> dict:
    """A {method: figures} table under today's method names, with the `missing` figures as given (None)."""
    return {names.get(method, method): missing | figures for method, figures in table.items()}


def unversioned_settings(settings: dict, names: dict[str, str]) -> dict:
    """An unversioned report's settings as FLAT_SETTINGS's: absent settings None, methods by today's names, `why`
    kept."""
    settings = {"sampling": None, "prompt_lookup": None, "draft": None} | settings
    settings |= {
        "methods": [names.get(method, method) for method in settings["methods"]],
        "baseline": names.get(settings["baseline"], settings["baseline"]),
    }
    auto = settings.get("auto")
    if isinstance(auto, dict) and "why" in auto:
        settings |= {"auto": {k: v for k, v in auto.items() if k != "why"}, "auto_why": auto["why"]}
    return settings


def shaped_like_a_report(data: dict) -> bool:
    """Whether `unversioned_bench_report` can walk `data` (its fields are checked when it is decoded)."""
    summary, prompts, settings = data.get("summary"), data.get("prompts"), data.get("settings")
    if not (isinstance(summary, dict) and isinstance(prompts, list) and isinstance(settings, dict)):
        return False
    if not (isinstance(settings.get("methods"), list) and all(isinstance(m, str) for m in settings["methods"])):
        return False
    rows = [row.get("methods") for row in prompts if isinstance(row, dict)]
    tables = [
        *summary.values(),
        *(result for methods in rows if isinstance(methods, dict) for result in methods.values()),
    ]
    return (
        isinstance(settings.get("baseline"), str)
        and len(rows) == len(prompts)
        and all(isinstance(methods, dict) for methods in rows)
        and all(isinstance(table, dict) for table in tables)
    )
