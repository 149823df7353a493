"""Records to and from JSON: `to_data`/`to_json` write enums (and open names) as their values; `from_json`/`from_data`
check the schema version, then decode every field by its type hint, and raise SchemaError naming the
field that does not fit. `Document`, the top-level records' base, reads and writes JSON through them.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from collections.abc import Callable
from typing import Any

from .legacy import upgraded
from .names import SCHEMA_VERSION, UPGRADABLE, OpenName, OpenNames, SchemaError


class Document:
    """A top-level record (a trace, a run, a race, a bench report): it carries `schema_version` and reads and
    writes JSON."""

    def to_json(self, indent: int | None = None) -> str:
        return to_json(self, indent)

    @classmethod
    def from_json(cls, text: str | bytes):
        return from_json(cls, text)


def to_data(record: Any) -> Any:
    """A record as plain JSON data (enums as their values; a record with a `plain` of its own: that)."""
    if hasattr(type(record), "plain"):
        return record.plain()
    if dataclasses.is_dataclass(record):
        return {f.name: to_data(getattr(record, f.name)) for f in dataclasses.fields(record)}
    if isinstance(record, enum.Enum | OpenName):
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
    return decoder(kind)(value, where)


@functools.cache
def decoder(kind: Any) -> Callable[[Any, str], Any]:
    """The function that decodes a value of type `kind`, built once per type: a run file holds some 8,000 values,
    and reading each type's hints anew per value took 0.37 s a file on the 2-core AMD CPU. A list of plain ints,
    strings or floats passes whole where every item fits; else item by item, so a SchemaError names the item."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        return optional(inner) if type(None) in args else decoder(inner)
    if origin is list:
        return listed(args[0])
    if origin is dict:
        return mapped(*args)
    if isinstance(kind, type) and hasattr(kind, "decoded"):  # a record that reads itself (run.MethodSettings)
        return kind.decoded
    if dataclasses.is_dataclass(kind):
        return record(kind)
    if isinstance(kind, OpenNames) or isinstance(kind, type) and issubclass(kind, enum.Enum):
        return member(kind)
    if kind is float:
        return number
    return lambda value, where: expect(value, kind, where)


def optional(inner: Any) -> Callable[[Any, str], Any]:
    decode_inner = decoder(inner)

    def decode_optional(value: Any, where: str) -> Any:
        return None if value is None else decode_inner(value, where)

    return decode_optional


def listed(item: Any) -> Callable[[Any, str], Any]:
    decode_item, plain = decoder(item), item in (int, str, float)

    def decode_list(value: Any, where: str) -> list:
        expect(value, list, where)
        if plain and all(type(v) is item for v in value):
            return list(value)
        return [decode_item(v, f"{where}[{i}]") for i, v in enumerate(value)]

    return decode_list


def mapped(key: Any, item: Any) -> Callable[[Any, str], Any]:
    decode_key, decode_item = decoder(key), decoder(item)

    def decode_dict(value: Any, where: str) -> dict:
        return {decode_key(k, where): decode_item(v, f"{where}.{k}") for k, v in expect(value, dict, where).items()}

    return decode_dict


def member(kind: type) -> Callable[[Any, str], Any]:
    """An enum's decoder, or an open set of names' (a Method, a BenchMethod)."""

    def decode_member(value: Any, where: str) -> Any:
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in kind)
            raise SchemaError(f"{where}: {value!r} is not one of {allowed}") from None

    return decode_member


def number(value: Any, where: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise SchemaError(f"{where}: expected a number, got {type(value).__name__}")


def expect(value: Any, kind: type, where: str) -> Any:
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        raise SchemaError(f"{where}: expected {kind.__name__}, got {type(value).__name__}")
    return value


@functools.cache
def record(kind: type) -> Callable[[Any, str], Any]:
    """A dataclass's decoder, built once per type (a record that reads itself, StepRecord, asks for it per step).
    Its annotations are strings, resolved in the module that defines `kind` (each module of
    the schema imports every type its fields name: a test of tests/test_records.py resolves every record's), on
    first use, so a record that holds its own kind is no endless recursion."""

    @functools.cache
    def plan() -> tuple[frozenset[str], list[tuple[str, Callable[[Any, str], Any], bool]]]:
        hints = typing.get_type_hints(kind)
        fields = dataclasses.fields(kind)
        missing = dataclasses.MISSING
        required = [f.default is missing and f.default_factory is missing for f in fields]
        plans = [(f.name, decoder(hints[f.name]), r) for f, r in zip(fields, required, strict=True)]
        return frozenset(f.name for f in fields), plans

    def decode_record(value: Any, where: str) -> Any:
        known, fields = plan()
        value = expect(value, dict, where)
        unknown = sorted(set(value) - known)
        if unknown:
            raise SchemaError(f"{where}: unknown field {unknown[0]!r}")
        decoded = {}
        for name, decode_field, required in fields:
            if name not in value:
                if required:
                    raise SchemaError(f"{where}: missing field {name!r}")
                continue
            decoded[name] = decode_field(value[name], f"{where}.{name}")
        return kind(**decoded)

    return decode_record
