"""A record's data as an older schema version wrote it, for the tests that read older files: each method's settings
in a field of its own (before version 14, when MethodSettings gathered them), each step's method report in a field
of its own (before version 15, when StepRecord.method_report took them), the version relabelled, and the facts that
version did not have left out."""

from __future__ import annotations

# Before version 14, a trace's meta gave each method's settings a field of its own, an EAGLE trace's layer its `draft`.
FLAT_META = {"lookahead": "settings", "prompt_lookup": "lookup", "speculative": "draft", "eagle": "draft"}


def flat_meta(meta: dict) -> dict:
    """A trace's meta as version 13 wrote it."""
    keyed = meta["settings"]
    flat = {"settings": None, "lookup": None, "draft": None, "medusa": None, "suffix": None}
    flat |= {FLAT_META.get(method, method): settings for method, settings in keyed.items() if settings is not None}
    return {key: value for key, value in meta.items() if key != "settings"} | flat


# Before version 15, a step gave its method's report the field of the report's kind.
FLAT_REPORT = {"speculative": "draft", "eagle": "draft", "medusa": "heads", "suffix": "suffix"}


def flat_step(step: dict) -> dict:
    """A step as version 14 wrote it."""
    report = step.get("method_report")
    kept = {key: value for key, value in step.items() if key != "method_report"}
    return kept if report is None else kept | {FLAT_REPORT[step["method"]]: report}


def flat_trace(trace: dict, version: int) -> dict:
    """A trace's data as schema `version` wrote it."""
    if version <= 14:
        trace = trace | {"steps": [flat_step(step) for step in trace["steps"]]}
    return trace | {"meta": flat_meta(trace["meta"])} if version <= 13 else trace


def older_run(data: dict, version: int, without: tuple[str, ...] = ()) -> dict:
    """A Run's data (`to_data` of it) as schema `version` wrote it, with every field named in `without` left out,
    wherever it is."""
    flat = data | {part: flat_trace(data[part], version) for part in ("trace", "greedy")}
    return relabelled(flat, version, without)


def relabelled(node, version: int, without: tuple[str, ...]):
    if isinstance(node, dict):
        return {
            key: version if key == "schema_version" else relabelled(value, version, without)
            for key, value in node.items()
            if key not in without
        }
    return [relabelled(value, version, without) for value in node] if isinstance(node, list) else node
