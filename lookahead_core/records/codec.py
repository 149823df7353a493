"""Records to and from JSON: `to_data`/`to_json` write enums as their values; `from_json`/`from_data`
check the schema version, then decode every field by its type hint, and raise SchemaError naming the
field that does not fit. `Document`, the top-level records' base, reads and writes JSON through them.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from typing import Any

from .legacy import upgraded
from .names import SCHEMA_VERSION, UPGRADABLE, SchemaError


class Document:
    """A top-level record (a trace, a run, a race, a bench report): it carries `schema_version` and reads and
    writes JSON."""

    def to_json(self, indent: int | None = None) -> str:
        return to_json(self, indent)

    @classmethod
    def from_json(cls, text: str | bytes):
        return from_json(cls, text)


def to_data(record: Any) -> Any:
    """A record as plain JSON data (enums as their values)."""
    if dataclasses.is_dataclass(record):
        return {f.name: to_data(getattr(record, f.name)) for f in dataclasses.fields(record)}
    if isinstance(record, enum.Enum):
        return record.value
    if isinstance(record, list | tuple):
        return [to_data(item) for item in record]
    if isinstance(record, dict):
        return {to_data(key): to_data(value) for key, value in record.items()}
    return record


def to_json(record: Any, indent: int | None = None) -> str:
    """A record as JSON: compact, or indented for a file people read (a bench report)."""
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(to_data(record), indent=indent, separators=separators, ensure_ascii=False)


def from_json(cls: type, text: str | bytes) -> Any:
    """Parse `text` as a `cls` record of this schema version; SchemaError says what does not fit."""
    return from_data(cls, parse_json(text))


def parse_json(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as error:
        raise SchemaError(f"not JSON: {error}") from error


def from_data(cls: type, data: Any) -> Any:
    """Build a `cls` record from plain data, checking the schema version first, then every field."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(version, int) and version in UPGRADABLE:
        data = upgraded(data, cls.__name__)
    elif version != SCHEMA_VERSION:
        found = (
            "no schema version (a trace from before versioned records)" if version is None else f"version {version!r}"
        )
        raise SchemaError(
            f"this {cls.__name__.lower()} has {found}; this lab reads schema version {SCHEMA_VERSION}: record it again"
        )
    return decode(cls, data, cls.__name__.lower())


def decode(kind: Any, value: Any, where: str) -> Any:
    """`value` as type `kind`, or SchemaError naming `where` it failed."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return decode(inner, value, where)
    if origin is list:
        return [decode(args[0], item, f"{where}[{i}]") for i, item in enumerate(expect(value, list, where))]
    if origin is dict:
        items = expect(value, dict, where).items()
        return {decode(args[0], k, where): decode(args[1], v, f"{where}.{k}") for k, v in items}
    if dataclasses.is_dataclass(kind):
        return decode_dataclass(kind, expect(value, dict, where), where)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in kind)
            raise SchemaError(f"{where}: {value!r} is not one of {allowed}") from None
    if kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise SchemaError(f"{where}: expected a number, got {type(value).__name__}")
    return expect(value, kind, where)


def expect(value: Any, kind: type, where: str) -> Any:
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        raise SchemaError(f"{where}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def decode_dataclass(kind: type, value: dict, where: str) -> Any:
    # The annotations are strings, resolved in the module that defines `kind`: each module of the schema
    # imports every type its fields name (a test of tests/test_records.py resolves every record's).
    hints = typing.get_type_hints(kind)
    known = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise SchemaError(f"{where}: unknown field {unknown[0]!r}")
    fields = {}
    for f in dataclasses.fields(kind):
        if f.name not in value:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise SchemaError(f"{where}: missing field {f.name!r}")
            continue
        fields[f.name] = decode(hints[f.name], value[f.name], f"{where}.{f.name}")
    return kind(**fields)
