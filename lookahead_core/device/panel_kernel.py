"""The engine's own kernel for a float32 product of a few rows (panel_rows.cpp), built on this machine for its CPU.

A BLAS's kernels for a few rows read each weight several times, and on a CPU a pass of a few rows is memory-bound:
panel_rows.cpp packs a weight once into panels of 16 output columns and holds every row in registers while a panel
streams past, so 16 rows cost little more than one. It is compiled the first time it is asked for, with the
machine's C++ compiler for its own CPU (-march=native) and torch's OpenMP runtime (its threads are torch's), and
the library is kept in the user cache folder by a digest of the source, the compiler, the flags and the CPU. It
is one way among others (product_ways.py): where no compiler builds it, the way is simply not offered, and where
it runs slower than the others it is not kept.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import torch

from ..cache import cache_root
from .cpu import cpu_flags, cpu_model

SOURCE = Path(__file__).with_name("panel_rows.cpp")
BUILD_SECONDS = 120  # a compile that takes longer than this is given up (the way is then not offered)
Pointer = ctypes.c_void_p
ROWS_ARGS = [Pointer, ctypes.c_int, ctypes.c_int, Pointer, ctypes.c_int, Pointer, Pointer]


def compiler() -> str | None:
    """The C++ compiler to build with: $CXX, else the system's c++, g++ or clang++ (None: none found)."""
    found = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    return found or None


def openmp_flags() -> list[str]:
    """The flags that link torch's own OpenMP runtime (Linux: its libgomp; macOS: its libomp)."""
    lib = Path(torch.__file__).parent / "lib"
    if sys.platform == "darwin":
        return ["-Xpreprocessor", "-fopenmp", f"-L{lib}", "-lomp", f"-Wl,-rpath,{lib}"]
    return ["-fopenmp", f"-L{lib}", f"-Wl,-rpath,{lib}"]


def build_flags(openmp: bool) -> list[str]:
    flags = ["-O3", "-march=native", "-std=c++17", "-shared", "-fPIC", "-Wno-unknown-pragmas"]
    return flags + (openmp_flags() if openmp else [])


def library_path(cxx: str, flags: list[str]) -> Path:
    """Where the library built by `cxx` with `flags` for this CPU is kept."""
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30).stdout
    identity = "\n".join([SOURCE.read_text(), cxx, version, *flags, cpu_model(), cpu_flags(), str(torch.__version__)])
    return cache_root() / "kernels" / f"panel_rows-{hashlib.sha256(identity.encode()).hexdigest()[:20]}.so"


def build(cxx: str, flags: list[str]) -> Path:
    """The library built with `flags` (from the cache when built before); CalledProcessError or TimeoutExpired
    where it does not build."""
    path = library_path(cxx, flags)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        made = path.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run(
            [cxx, *flags, str(SOURCE), "-o", str(made)], check=True, capture_output=True, timeout=BUILD_SECONDS
        )
        made.replace(path)  # whole or not at all: another process may load it
    return path


@cache
def panel_library() -> ctypes.CDLL | None:
    """The kernel, built and loaded (with OpenMP where it builds with it, else single-threaded); None where this
    machine cannot build it."""
    cxx = compiler()
    if cxx is None:
        return None
    for openmp in (True, False):
        try:
            library = ctypes.CDLL(str(build(cxx, build_flags(openmp))))
        except (OSError, subprocess.SubprocessError):
            continue
        library.pack_panels.argtypes = [Pointer, ctypes.c_int, ctypes.c_int, Pointer]
        for name in ("panel_rows_1", "panel_rows_2"):
            getattr(library, name).argtypes = ROWS_ARGS
        return library
    return None


def pack_panels(weight: torch.Tensor) -> torch.Tensor:
    """`weight` (N x K, float32) packed into panels of 16 output columns, the last padded with zeros."""
    library = panel_library()
    weight = weight.detach().contiguous()
    n, k = weight.shape
    columns = library.panel_columns()
    packed = torch.empty(-(-n // columns) * columns * k, dtype=torch.float32)
    library.pack_panels(weight.data_ptr(), n, k, packed.data_ptr())
    return packed


def bound_panel_rows(weight: torch.Tensor, bias: torch.Tensor | None, packed: torch.Tensor, wide: int):
    """x (rows x K) @ weight.T + bias from `weight`'s panels (`packed`), `wide` panels (1 or 2) streamed side by side,
    as a function of x alone: the entry, the sizes and the pointers worked out once (a pass calls it some 200 times;
    each call's Python is what a one-row product can spare)."""
    library = panel_library()
    entry = library.panel_rows_1 if wide == 1 else library.panel_rows_2
    n, k = weight.shape
    weights, biases = packed.data_ptr(), None if bias is None else bias.data_ptr()
    keep = (packed, bias)  # alive as long as the function: the pointers are theirs

    def take(x: torch.Tensor, keep=keep) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape[0], n, dtype=torch.float32)
        entry(x.data_ptr(), x.shape[0], k, weights, n, biases, y.data_ptr())
        return y

    return take
