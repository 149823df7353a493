"""The capture layer: a fixed-shape step's device function (fixed.py) recorded once and replayed.

A function given here takes no arguments and reads and writes only its shape's static buffers; it makes no host
reads (.item(), nonzero, Python ints from tensors). `graphed` records it as a torch.cuda.CUDAGraph on its first
call (after warm-up runs on a side stream, which only redo what the call does) and replays it after; its outputs
are the graph's own tensors, overwritten by the next replay, so a caller clones what it keeps. `compiled` is the
function through torch.compile(fullgraph=True, dynamic=False), inductor's fused kernels, recorded as `graphed`
records it. Both need CUDA; on a CPU the fixed-shape step runs as it is (`as_it_is`), and its tests trace it with
other compilers.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..records import StepMode

WARM_UP_RUNS = 3  # before a capture: lazy initialisations (cuBLAS handles, workspace) must not be recorded


def as_it_is(function: Callable) -> Callable:
    return function


class Graphed:
    """`function` recorded as a CUDA graph on its first call, replayed on every call; returns its outputs."""

    def __init__(self, function: Callable) -> None:
        self.function, self.graph, self.outputs = function, None, None

    def __call__(self):
        if self.graph is None:
            self.record()
        self.graph.replay()
        return self.outputs

    def record(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARM_UP_RUNS):
                self.function()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        own_cublas_workspace()
        with torch.cuda.graph(graph):
            self.outputs = self.function()
        own_cublas_workspace()
        self.graph = graph


def own_cublas_workspace() -> None:
    """Drop cuBLAS's cached workspaces, around a capture: the capture's matmuls then take a workspace in the graph's
    own memory pool, which lives as long as the graph, and nothing after the capture shares it. Without this, a
    graph replays matmuls into the workspace cached when it was recorded, which is freed when anything clears
    the cache: transformers' compiled `generate` does (inductor's CUDA graph trees clear it around each recording),
    and on an H200 lookahead's captured step then failed with an illegal memory access (2026-11-26; plain decoding's
    survived, its 1-row matmuls most likely never touching the workspace). scripts/gpu_check.py meets that order:
    the engine's captures, hf-static's compile, then the timed rounds."""
    torch._C._cuda_clearCublasWorkspaces()


def graphed(function: Callable) -> Graphed:
    return Graphed(function)


class Compiled:
    """`function` through torch.compile, whole and at its shapes. Every fixed shape runs the same code (fixed.py's
    FixedStep methods), and dynamo compiles a code at most `recompile_limit` times (8; past it, with fullgraph, the
    call fails): a step's first call, where its shape compiles, may go up to RECOMPILE_LIMIT."""

    def __init__(self, function: Callable, **options) -> None:
        self.compiled = torch.compile(function, fullgraph=True, dynamic=False, **options)
        self.compiling = True

    def __call__(self):
        if not self.compiling:
            return self.compiled()
        with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT):
            outputs = self.compiled()
        self.compiling = False
        return outputs


RECOMPILE_LIMIT = 64  # shapes compiled per process: one per method, its settings and a cache bucket


def compiled(function: Callable, backend: str = "inductor", graph: bool = True) -> Graphed | Compiled:
    """The `compiled` mode's wrapper: inductor's fusion, recorded as this layer's own CUDA graph (`graph`; the CPU's
    tests take other backends and no graph). Not inductor's own graphs (mode="reduce-overhead"): its graph trees
    refuse a function that writes tensors it did not make ("skipping cudagraphs due to mutated inputs"), as every
    function here writes its shape's static buffers, and the step then launched each kernel apart: on an H200
    (2026-11-27) plain decoding took 10.4 ms a step compiled, 3.8 ms captured."""
    fused = Compiled(function, backend=backend)
    return Graphed(fused) if graph else fused


CAPTURES: dict[StepMode, Callable[[Callable], Callable]] = {
    StepMode.FIXED: as_it_is,
    StepMode.CUDA_GRAPH: graphed,
    StepMode.COMPILED: compiled,
}


def capture_for(mode: StepMode) -> Callable[[Callable], Callable]:
    """How a fixed-shape step's functions are wrapped in `mode` (not eager: that runs no fixed-shape step)."""
    return CAPTURES[mode]
