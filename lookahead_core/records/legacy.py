"""Older files as this schema version's data: an UPGRADABLE record re-labelled (each version since only
added facts with defaults), and a bench report from before bench reports were versioned rewritten under
today's names and fields. Nothing here decodes: codec checks every field of what comes back.
"""

from __future__ import annotations

from typing import Any

from .names import SCHEMA_VERSION, BenchMethod


def upgraded(data: dict) -> dict:
    """An UPGRADABLE record's data as this version's: the documents it nests are re-labelled too."""
    return {
        key: SCHEMA_VERSION if key == "schema_version" else upgraded(value) if isinstance(value, dict) else value
        for key, value in data.items()
    }


def unversioned_bench_report(data: Any) -> Any:
    """A bench report written before bench reports carried a schema version (docs/bench), as this version's data.

    Three generations of the bench wrote them, and against today's report: those from before this engine
    had its own prompt lookup have no `settings.prompt_lookup` nor `settings.draft`, and their
    `prompt-lookup` was transformers' (today's `hf-prompt-lookup`); those from before sampling have no
    `settings.sampling` (they are greedy); those from before acceptance was counted have no `acceptance`,
    `offered` or `accepted`; the sampled ones counted `draws` (kept) where today's count `offered`; an auto
    choice from before its regime was recorded gave its `why` in words (kept as `settings.auto_why`). No
    figure is dropped. Versioned data is returned as it is; unversioned data of another shape is only
    stamped with this version, so that decoding names what does not fit.
    """
    if not isinstance(data, dict) or "schema_version" in data:
        return data
    stamped = data | {"schema_version": SCHEMA_VERSION}
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
    """An unversioned report's settings as today's: absent settings None, methods by today's names, `why` kept."""
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
