"""A record's data as an older schema version wrote it, for the tests that read older files: each method's settings
in a field of its own (before version 14, when MethodSettings gathered them), the version relabelled, and the
facts that version did not have left out."""

from __future__ import annotations

# Before version 14, a trace's meta gave each method's settings a field of its own, an EAGLE trace's layer its `draft`.
FLAT_META = {"lookahead": "settings", "prompt_lookup": "lookup", "speculative": "draft", "eagle": "draft"}


def flat_meta(meta: dict) -> dict:
    """A trace's meta as version 13 wrote it."""
    keyed = meta["settings"]
    flat = {"settings": None, "lookup": None, "draft": None, "medusa": None, "suffix": None}
    flat |= {FLAT_META.get(method, method): settings for method, settings in keyed.items() if settings is not None}
    return {key: value for key, value in meta.items() if key != "settings"} | flat


def older_run(data: dict, version: int, without: tuple[str, ...] = ()) -> dict:
    """A Run's data (`to_data` of it) as schema `version` wrote it, with every field named in `without` left out,
    wherever it is."""
    flat = data | {part: data[part] | {"meta": flat_meta(data[part]["meta"])} for part in ("trace", "greedy")}
    return relabelled(flat, version, without)


def relabelled(node, version: int, without: tuple[str, ...]):
    if isinstance(node, dict):
        return {
            key: version if key == "schema_version" else relabelled(value, version, without)
            for key, value in node.items()
            if key not in without
        }
    return [relabelled(value, version, without) for value in node] if isinstance(node, list) else node
