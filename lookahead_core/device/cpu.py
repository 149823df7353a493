"""What this CPU is, in the words of /proc/cpuinfo: what a measurement made on it holds for (product_ways'
fingerprint, the panel kernel built for it)."""

from __future__ import annotations

import platform
from functools import cache


def cpuinfo(fields: tuple[str, ...]) -> str | None:
    """The first of `fields` that /proc/cpuinfo lists, its value (None: no such line, or no such file)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as lines:
            return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(fields)), None)
    except OSError:
        return None


@cache
def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo, else the platform's words: on macOS and Windows only an architecture)."""
    return cpuinfo(("model name", "Model")) or platform.processor() or platform.machine()


@cache
def cpu_flags() -> str:
    """The CPU's feature flags, space-separated and sorted ("" where the system does not list them)."""
    return " ".join(sorted((cpuinfo(("flags", "Features")) or "").split()))
