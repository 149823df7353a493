"""The whole GPU check in one run: step costs, auto settings, and the bench per dtype and prompt set.

Usage: python scripts/gpu_check.py [--dtypes float32 bfloat16] [--sets humaneval mtbench] [--limit 10]
                                   [--max-new-tokens 128] [--out DIR] [--device cuda|cpu]
                                   [--modes eager fixed cuda-graph compiled] [--methods greedy,lookahead,...]
                                   [--gemms] [--profile] [--half-sets humaneval] [--quick] [--autotune]
TF32 is off, so float32 is true float32 and lookahead's `exact` must equal the prompt count; in
half precision `exact` is the match rate against greedy `generate` in the same dtype. Every figure
is measured in this run; the table is printed as Markdown, and each bench report is written to
DIR as JSON when --out is given (`visuals.bench` draws them; the GPU image lacks plotly). `--modes` benches this
engine's methods in each step mode given (docs/engine.md; default on CUDA: eager and cuda-graph, the comparison
behind the CUDA graph as the engine's default there; on a CPU: the engine's default), the peers beside each; the
table's mode column says which ran (a captured mode on a CPU runs fixed, and says so). `--methods` narrows the
entrants (default: every one), so that a lease's minutes go where they are owed. A bench that fails (a capture
that cannot run, say) prints its error and a FAILED row, and the check goes on with the next one.

`--quick` is the check one 15-minute lease fits (issue 45: about 8 minutes on an H200, estimated from the fifth
lease's timings): float32 captured on HumanEval, GSM8K and MT-Bench, 4 prompts each, with greedy, lookahead,
prompt lookup, Medusa, EAGLE, suffix decoding and hf-static; bfloat16 captured on HumanEval alone (`--half-sets`:
the sets a half precision runs, default all of --sets); the app's Run and race at 64 tokens; the GEMM table.
Options given beside it are overridden.

Then, per dtype, a Run and a race of the first prompt of the first set, recorded by the app's own server functions
(lab.serve.server.record and timed_race: the model held, the budget, the deadlines, the default step mode) and written
to DIR as run-DTYPE.json (a file the app opens and replays, beside the CPU recordings) and race-DTYPE.json;
`--app-tokens 0` leaves them out.

Last, issue 45's targets as a table: each target, what this run measured for it, and whether it is met (float32
in a captured mode; the app's Run and the default dtype's capture per dtype); "-" where this run measured nothing
for it.

After each bench, each engine method decodes the first prompt once more and its step is split in two: the pass
(the forward, from the host's view: launch or replay, the device's work, the read back) and the rest (proposing,
verifying, committing, recording: the host's alone), medians over the steps; `--profile` adds torch.profiler's
table of that lookahead decoding's ops. Where a step's time goes is what the next speedup needs.

`--autotune` lets inductor choose each of the compiled mode's linear products by timing its own Triton kernels
against cuBLAS's (`max_autotune_gemm`): in float32 without TF32, cuBLAS's kernels for 2 to 128 rows cost 2.5x a
row's (the GEMM table), and what a wide pass costs is what lookahead's float32 speedup waits on. An experiment:
compiling then takes longer.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab.measure.bench import ENTRANTS, REPEATS, check_methods, engine_methods, run_bench
from lab.measure.datasets import load_prompts
from lab.train.heads import runtime_for
from lookahead_core.costs import SettledMode, settled_mode
from lookahead_core.device import fixed
from lookahead_core.device import products as engine_products
from lookahead_core.device.capture import graphed
from lookahead_core.device.forward import synchronize
from lookahead_core.methods.suffix import SuffixStore
from lookahead_core.models import encode_prompt, load_model
from lookahead_core.records import METHODS, Method, StepMode
from lookahead_core.request import DecodeRequest
from lookahead_core.trace import lean_steps, machine_facts
from lookahead_core.tuning import regime_settings
from lookahead_core.working_state import RESIDENT
from visuals.timing import speedup_words, times, verdict

COST_POINTS = (1, 16, 64, 128, 256)
QUICK = {
    "dtypes": ["float32", "bfloat16"],
    "sets": ["humaneval", "gsm8k", "mtbench"],
    "half_sets": ["humaneval"],
    "limit": 4,
    "max_new_tokens": 128,
    "repeats": REPEATS,
    "modes": ["cuda-graph"],
    "methods": "greedy,lookahead,prompt-lookup,medusa,eagle,suffix,hf-static",
    "app_tokens": 64,
    "gemms": True,
}


def main(argv: list[str] | None = None) -> None:
    """The check as `argv` asks (default: the command line)."""
    args, methods = arguments(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("error: no CUDA device: this script checks the GPU path")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if args.autotune:
        from torch._inductor import config as inductor

        inductor.max_autotune_gemm = True
        print("# the compiled mode's linear products autotuned (inductor's max_autotune_gemm)")
    rows, found = [], Findings()
    for dtype in args.dtypes:
        lm = load_model(device=args.device, dtype=dtype)
        facts = machine_facts(lm)
        print(
            f"# {facts.model} on {facts.device_name}, {dtype}, torch {facts.torch}, transformers {facts.transformers}"
        )
        refresh = args.device == "cuda"
        modes = {asked: settled_mode(lm, asked and StepMode(asked), refresh) for asked in args.modes}
        autos = {asked: measured_auto(settled) for asked, settled in modes.items()}
        for asked, auto in autos.items():
            found.curves[dtype, modes[asked].mode] = {n: auto.costs.relative(n) for n in COST_POINTS}
        sets = args.sets if dtype == "float32" or args.half_sets is None else args.half_sets
        for name, asked in [(name, mode) for name in sets for mode in args.modes]:
            try:
                where = (name, dtype, asked)
                bench_set(lm, args, methods, where, (modes[asked], autos[asked]), name == sets[0], found, rows)
            except Exception:  # one bench's failure (a capture, say) is a finding: print it, go on with the next
                traceback.print_exc()
                print(f"  FAILED: {name} {dtype} {asked or 'default mode'}", flush=True)
                rows.append((name, dtype, asked or "default mode", "FAILED", *([None] * 7)))
        if args.gemms:  # after the benches: on 2026-11-28 the bfloat16 benches after these tables failed to capture
            print_gemms(lm)
            print_attention(lm)
        del lm
        if args.device == "cuda":
            torch.cuda.empty_cache()
        if args.app_tokens != 0:
            found.runs[dtype] = app_recordings(args, dtype, load_prompts(sets[0], 1)[0])
    print_table(rows, args)
    print_targets(rows, found, args.device)


def bench_set(lm, args, methods, where: tuple, settings: tuple, first_set: bool, found: Findings, rows: list) -> None:
    """One prompt set in one mode (`where`: the set's name, the dtype, the mode asked; `settings`: that mode settled
    and its auto settings): its bench, written under --out and its rows added to `rows`, then each method's step
    split on its first prompt (with the levers on the first set in float32), the host's share of each kept in
    `found`."""
    name, dtype, asked = where
    settled, auto = settings
    prompts = load_prompts(name, args.limit)
    runtime = runtime_for(lm, engine_methods(methods), auto=auto, settled=settled)  # the draft, heads, layer asked
    runtime = replace(runtime, store=SuffixStore())  # suffix decoding's store warm, as the CLI's default
    request = DecodeRequest(max_new_tokens=args.max_new_tokens)
    report = run_bench(lm, prompts, methods, request, runtime, dataset=name, repeats=args.repeats)
    if report.settings.mode_note:
        print(f"  note: {report.settings.mode_note}", flush=True)
        found.notes[dtype] = report.settings.mode_note
    for method, why in report.settings.state_on_host.items():
        print(f"  note: {method}'s device step failed ({why}): its steps kept their state on the host")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        stem = args.out / (f"{name}-{dtype}" + (f"-{asked}" if len(args.modes) > 1 else ""))
        stem.with_suffix(".json").write_text(report.to_json(indent=1))
    rows += report_rows(report, name, dtype)
    ids = encode_prompt(lm.tokenizer, prompts[0]["prompt"], prompts[0]["chat"])
    for method in [m.method for m in methods if m.method is not None]:
        split = print_split(
            lm, ids, replace(request, method=method), runtime, args.profile, dtype == "float32" and first_set
        )
        key = (dtype, runtime.mode, method)
        found.host[key] = max(found.host.get(key, 0.0), split)


def arguments(argv: list[str] | None = None) -> tuple[argparse.Namespace, list]:
    """The command line read (`--quick` putting QUICK in place of what it names), and the entrants it names."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--sets", nargs="+", default=["humaneval", "mtbench"])
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=REPEATS, help="interleaved rounds per prompt")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: a smoke test of this script")
    parser.add_argument("--modes", nargs="+", default=None, choices=[mode.value for mode in StepMode])
    parser.add_argument("--methods", default=",".join(ENTRANTS), help="comma-separated entrants (default: all)")
    parser.add_argument("--app-tokens", type=int, default=None, help="the app's Run and race (default 128; 0: none)")
    parser.add_argument("--profile", action="store_true", help="torch.profiler's table of one lookahead decoding")
    parser.add_argument("--gemms", action="store_true", help="the body's linear products alone at M rows, per dtype")
    parser.add_argument("--half-sets", nargs="+", default=None, help="the sets half precision runs (default: --sets)")
    parser.add_argument("--quick", action="store_true", help="what one lease fits (the docstring says what)")
    parser.add_argument("--autotune", action="store_true", help="the compiled mode's GEMMs autotuned (docstring)")
    args = parser.parse_args(argv)
    if args.quick:
        vars(args).update(QUICK)
    try:
        methods = check_methods([name.strip() for name in args.methods.split(",") if name.strip()])
    except ValueError as refused:
        parser.error(str(refused))
    args.modes = args.modes or (["eager", "cuda-graph"] if args.device == "cuda" else [None])
    return args, methods


def app_recordings(args: argparse.Namespace, dtype: str, item: dict) -> tuple[float, bool] | None:
    """A Run (auto lookahead beside greedy) and a race of `item`, through the app's server functions on this
    device, their figures printed and, with --out, the records written. The server's model holder loads the
    model again (the one this check held is let go first): what a visitor's request meets. Returns the Run's
    lookahead speedup over greedy (median) and whether its verdict names lookahead the winner; None if it failed."""
    tokens = args.app_tokens or args.max_new_tokens
    decode = DecodeRequest(max_new_tokens=tokens, auto=True)
    try:
        from lab.serve import server  # imported here, where its failure is a finding like any other
        from lab.serve.requests import ModelRequest
        from lookahead_core.models import DEFAULT_MODEL

        prompt, chat = item["prompt"], item["chat"]
        request = ModelRequest(prompt=prompt, chat=chat, decode=decode, model=DEFAULT_MODEL, dtype=dtype)
        server.MODEL.put(load_model(device=args.device, dtype=dtype))
        *_, (run, run_seconds) = server.record(request)
        *_, (race, race_seconds) = server.timed_race(request)
    except Exception:  # a finding like a bench's failure: printed, and the check goes on
        traceback.print_exc()
        print(f"  FAILED: the app's Run and race, {dtype}", flush=True)
        return None
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"run-{dtype}.json").write_text(run.to_json())
        (args.out / f"race-{dtype}.json").write_text(race.to_json())
    meta, timing = run.trace.meta, run.timing
    print(
        f"  app Run {dtype} {meta.mode}: lookahead {speedup_words(timing, Method.LOOKAHEAD)} over greedy, "
        f"{timing.rounds} rounds in {run_seconds:.1f} s; {verdict(timing, 'this prompt')}",
        flush=True,
    )
    print(
        f"  app race {dtype} {race.mode}: "
        + ", ".join(f"{m.method} {times(m.speedup)}" for m in race.timing.methods)
        + f" over greedy, {race.timing.rounds} rounds in {race_seconds:.1f} s",
        flush=True,
    )
    try:  # after the records are written, so a drawing that fails leaves them to read
        drawn(run, race)
    except Exception:
        traceback.print_exc()
        print(f"  FAILED: drawing the app's Run and race, {dtype}", flush=True)
    said = verdict(timing, "this prompt")
    return timing.of(Method.LOOKAHEAD).speedup.median, said.startswith(METHODS[Method.LOOKAHEAD].short.capitalize())


def drawn(run, race) -> None:
    """Draw the Run's and the race's summaries as the page does: a GPU's records (its lanes, its step mode) must
    draw too (a GPU race's EAGLE lane once failed to draw; tests/test_rounds.py now races a GPU's lanes on the CPU,
    this draws what a GPU recorded)."""
    from visuals.race import cost_figure, playback_html, race_figure, race_html
    from visuals.summary import summary_html

    summary_html(run)
    for draw in (race_html, race_figure, cost_figure, playback_html):
        draw(race)


def measured_auto(settled: SettledMode):
    """The auto settings from the step-cost curve of a `settled` mode (measured again on CUDA; a smoke test on a CPU
    reuses the cached curve), said as they are chosen."""
    auto = regime_settings(settled)
    costs, mode = auto.costs, settled.mode
    curve = ", ".join(f"{n}: {costs.relative(n):.2f}x" for n in COST_POINTS)
    print(f"# {mode}: one step of n tokens, in 1-token steps ({costs.seconds[0] * 1e3:.1f} ms): {curve}")
    print(
        f"# {mode}: auto W={auto.config.window} N={auto.config.ngram} G={auto.config.guesses}, {auto.planner} plan "
        f"({auto.regime}: the line fitted through the curve puts a 64-token step at {auto.ratio:.2f}x)",
        flush=True,
    )
    return auto


GEMM_ROWS = (1, 2, 4, 8, 16, 24, 32, 64, 128)


def print_gemms(lm) -> None:
    """What the model's body's linear products cost alone at M rows (random rows, every layer's weights in order,
    captured as one CUDA graph on CUDA), as x @ W.T (nn.Linear's) and as (W @ x.T).T: where a wide pass's cost
    is the GEMMs' own (on the H200 in float32, 8-16 rows took 2.4x what 32 did as x @ W.T). Two experiments beside
    them, for the float32 wide pass: the products that read one input fused (fused_weights), and on CUDA nn.Linear's
    product with cuBLASLt as torch's preferred BLAS."""
    weights = [m.weight for m in lm.model.model.layers.modules() if isinstance(m, torch.nn.Linear)]
    fused = fused_weights(lm)
    for rows in GEMM_ROWS:
        xs = {w.shape[1]: torch.randn(rows, w.shape[1], device=lm.device, dtype=w.dtype) for w in weights}
        plain = replayed_ms(lambda xs=xs: products(xs, weights), lm.device)
        turned = replayed_ms(lambda xs=xs: [(w @ xs[w.shape[1]].T).T for w in weights], lm.device)
        line = f"# body GEMMs ({len(weights)}), {rows} rows: x @ W.T {plain:.3f} ms, (W @ x.T).T {turned:.3f} ms"
        if fused:
            ms = replayed_ms(lambda xs=xs: products(xs, fused), lm.device)
            line += f", fused ({len(fused)}) {ms:.3f} ms"
        if lm.device.type == "cuda":
            before = torch.backends.cuda.preferred_blas_library()
            torch.backends.cuda.preferred_blas_library("cublaslt")
            try:
                ms = replayed_ms(lambda xs=xs: products(xs, weights), lm.device)
                line += f", cuBLASLt {ms:.3f} ms"
            finally:
                torch.backends.cuda.preferred_blas_library(before)
        print(line, flush=True)


def products(xs: dict[int, torch.Tensor], weights: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each weight's nn.Linear product with the rows `xs` holds for its input width."""
    return [torch.nn.functional.linear(xs[w.shape[1]], w) for w in weights]


def fused_weights(lm) -> list[torch.Tensor]:
    """The body's weights in order, with the products that read one input (the engine's `products.SIBLINGS`: query,
    key and value; gate and up) taken as one matrix each, as the engine's view runs them on CUDA: 4 GEMMs a Llama
    layer where it runs 7. Empty where no layer has such siblings."""
    fused, grouped = [], set()
    for module in lm.model.model.layers.modules():
        for names in engine_products.SIBLINGS:
            layers = [module._modules.get(name) for name in names]
            if all(isinstance(layer, torch.nn.Linear) for layer in layers):
                fused.append(torch.cat([layer.weight for layer in layers]))
                grouped |= {id(layer) for layer in layers}
        if isinstance(module, torch.nn.Linear) and id(module) not in grouped:
            fused.append(module.weight)
    return fused if grouped else []


ATTENTION_ROWS = (1, 16, 64, 128)


def print_attention(lm, keys: int = 512) -> None:
    """What the body's attention costs alone at M query rows over `keys` cached positions, once a layer (random
    queries, keys and values, an additive mask of zeros, captured as one CUDA graph on CUDA), by each SDPA kernel:
    the memory-efficient one (what a float32 wide pass runs on the H200: ~40 us a layer call in the profile, a
    fifth of the device's time), the flash one (a CPU's; on CUDA it takes no mask, so "-") and the math one (a
    product, a softmax and a product). Where a kernel does not run here, "-"."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    config = lm.model.config.get_text_config(decoder=True)
    heads, layers = config.num_attention_heads, config.num_hidden_layers
    dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    dtype = lm.model.dtype
    for rows in ATTENTION_ROWS:
        q = torch.randn(1, heads, rows, dim, device=lm.device, dtype=dtype)
        k, v = (torch.randn(1, heads, keys, dim, device=lm.device, dtype=dtype) for _ in range(2))
        mask = torch.zeros(1, 1, rows, keys, device=lm.device, dtype=dtype)
        line = f"# attention ({layers} layers), {rows} rows over {keys} keys:"
        kernels = ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)
        for name, backend in (*kernels, ("math", SDPBackend.MATH)):
            if name == "flash" and lm.device.type == "cuda":  # it refuses a mask here; not tried inside a capture
                line += " flash -,"
                continue

            def work(backend=backend, q=q, k=k, v=v, mask=mask):
                with sdpa_kernel(backend):
                    return [torch.nn.functional.scaled_dot_product_attention(q, k, v, mask) for _ in range(layers)]

            try:
                line += f" {name} {replayed_ms(work, lm.device):.3f} ms,"
            except RuntimeError:  # no such kernel here (the efficient one on a CPU)
                line += f" {name} -,"
        print(line.rstrip(","), flush=True)


def replayed_ms(work, device: torch.device) -> float:
    """`work`'s milliseconds, the mean of several calls after a first: on CUDA recorded once as a CUDA graph and
    replayed (capture.graphed, as the engine's captured step), elsewhere run as it is."""
    run = graphed(work) if device.type == "cuda" else work
    repeats = 50 if device.type == "cuda" else 3
    run()  # records the graph (after its warm-up runs), or warms the CPU's caches
    synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        run()
    synchronize(device)
    return (time.perf_counter() - start) / repeats * 1e3


def print_split(lm, ids: list[int], request: DecodeRequest, runtime, profile: bool, levers: bool = False) -> float:
    """One decoding of `request`'s method as a timed lane runs it (the lean path: steps tallied, not recorded), its
    steps split into the pass and the rest (medians, ms); with `profile`, lookahead's decoding under torch.profiler,
    its ops' table printed. A method whose timed steps keep their state on the device (working_state: greedy, and
    RESIDENT's lookahead, prompt lookup, Medusa, EAGLE) is split twice in a fixed-shape mode: its state on the
    device (the timed lanes' step: the "pass" is the whole device step, its state's work included) and on the host
    (the step before issue 45's item 2: the pass alone, then the host's work). Greedy and lookahead are split once
    more there with every pass reading the whole cache (`Runtime.spans` False: the step before item 3's spans), and
    with `levers` on CUDA once with each of the engine's CUDA levers off (lookahead_core.device.products.LEVERS: what
    each gives; the check asks it on its first float32 set, a lease's seconds being few). Each
    split also says what its decoding took whole, its prefill step, and what lay outside its steps (settling the
    plan, the buffers, the working state, the end): a bench's ms/step holds them, the pass's median does not.
    Returns the host's rest of the step as timed lanes run it (the first split: its state on the device where it
    has one), ms."""
    variants = [("", runtime, None)]
    if (request.method in RESIDENT or request.method == Method.GREEDY) and runtime.mode != StepMode.EAGER:
        variants = [
            (" (state on the device)", runtime, None),
            (" (state on the host)", replace(runtime, device_state=False), None),
        ]
    if request.method in (Method.GREEDY, Method.LOOKAHEAD) and runtime.mode != StepMode.EAGER:
        variants.append((" (every pass over the whole cache)", replace(runtime, spans=False), None))
        if levers and lm.device.type == "cuda":
            variants += [(f" ({lever} off)", runtime, lever) for lever in engine_products.LEVERS]
    rests = []
    for index, (label, chosen, lever) in enumerate(variants):
        with lever_off(lm, lever, warm=lambda chosen=chosen: list(lean_steps(lm, ids, request, chosen))):
            start = time.perf_counter()
            if profile and request.method == Method.LOOKAHEAD and index == 0:
                records = profiled_steps(lm, ids, request, chosen)
            else:
                records = list(lean_steps(lm, ids, request, chosen))
            synchronize(lm.device)
            wall = 1e3 * (time.perf_counter() - start)
        steps = records[1:]  # after the prefill
        if not steps:
            continue
        forward = 1e3 * statistics.median(r.forward_seconds for r in steps)
        whole = 1e3 * statistics.median(r.step_seconds for r in steps)
        rests.append(whole - forward)
        outside = wall - 1e3 * sum(r.step_seconds for r in records)
        print(
            f"  split {request.method}{label}: pass {forward:.2f} ms, the rest of the step {whole - forward:.2f} ms "
            f"(medians of {len(steps)} steps); the decoding {wall:.1f} ms, its prefill step "
            f"{1e3 * records[0].step_seconds:.1f} ms, outside its steps {outside:.1f} ms",
            flush=True,
        )
    return rests[0] if rests else 0.0


@contextmanager
def lever_off(lm, lever: str | None, warm):
    """The engine with CUDA lever `lever` (lookahead_core.device.products.LEVERS) off, its view and fixed steps made
    anew for it and again after it (so that nothing recorded with it off is kept), each time warmed by `warm` (a
    decoding, untimed: the buffers made, the spans recorded, so the timed one meets what the others met); None: as
    it is."""
    if lever is None:
        yield
        return
    engine_products.LEVERS[lever] = False
    try:
        fresh_steps(lm)
        warm()
        yield
    finally:
        engine_products.LEVERS[lever] = True
        fresh_steps(lm)
        warm()


def fresh_steps(lm) -> None:
    """Drop the engine's view of the model and its fixed steps (their buffers and recordings)."""
    engine_products.VIEWS.pop(lm.model, None)
    fixed.STEPS.pop(lm.model, None)
    if lm.device.type == "cuda":
        torch.cuda.empty_cache()


def profiled_steps(lm, ids: list[int], request: DecodeRequest, runtime) -> list:
    """The lean steps of one decoding under torch.profiler, its ops' tables printed (host time, then device time)."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if lm.device.type == "cuda" else [])
    with torch.profiler.profile(activities=activities) as profiled:
        records = list(lean_steps(lm, ids, request, runtime))
    sort = "self_cuda_time_total" if lm.device.type == "cuda" else "self_cpu_time_total"
    print(profiled.key_averages().table(sort_by="self_cpu_time_total", row_limit=15), flush=True)
    print(profiled.key_averages().table(sort_by=sort, row_limit=10), flush=True)
    return records


def report_rows(report, name: str, dtype: str) -> list[tuple]:
    """Each method's figures in a bench report, printed as a line as they come, and returned as table rows."""
    rows, mode, baseline = [], report.settings.mode, report.settings.baseline
    for method, s in report.summary.items():
        step_ms = 1e3 * s.seconds / s.steps
        static = s.over_static.median if s.over_static is not None else None
        exact = f"{s.exact}/{s.prompts}"
        first = first_round(s.round_seconds)
        figures = (s.tokens_per_second, s.speedup, static, s.tokens_per_step, step_ms, exact, first)
        rows.append((name, dtype, mode, method, *figures))
        interval = s.speedup_interval
        spread = f" ({interval.low:.2f}-{interval.high:.2f})" if interval is not None else ""
        print(
            f"  {name} {dtype} {mode} {method}: {s.tokens_per_second:.1f} tok/s, {s.speedup:.2f}x{spread} over "
            f"{baseline}, {times(s.over_static) if s.over_static is not None else '-'} over hf-static, "
            f"{s.tokens_per_step:.2f} tok/step, {step_ms:.1f} ms/step, exact {exact}, "
            f"first round {f'{first:.2f}x' if first is not None else '-'} the later ones' median",
            flush=True,
        )
    return rows


def first_round(round_seconds: list[float] | None) -> float | None:
    """The first round's seconds over the later rounds' median (a warm-up that covered every shape: about 1);
    None after fewer than two rounds."""
    if not round_seconds or len(round_seconds) < 2:
        return None
    return round_seconds[0] / statistics.median(round_seconds[1:])


def print_table(rows: list[tuple], args: argparse.Namespace) -> None:
    """Every row measured, as one Markdown table, after a line saying how it was measured."""
    print(
        f"\n{args.limit} prompts per set, {args.max_new_tokens} new tokens, {args.repeats} interleaved rounds; "
        "median tok/s, speedups ratios of medians over the baseline (hf-greedy where it ran, else greedy) and over "
        "hf-static, same run; first round: its seconds over the later rounds' median"
    )
    columns = ["set", "dtype", "mode", "method", "tokens/s", "over baseline", "over hf-static"]
    columns += ["tokens/step", "ms/step", "exact", "first round"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for name, dtype, mode, method, rate, speedup, static, per_step, step_ms, exact, first in rows:
        if method == "FAILED":
            print(f"| {name} | {dtype} | {mode} | FAILED (see its error above) |" + " |" * (len(columns) - 4))
            continue
        over_static = f"{static:.2f}x" if static is not None else "-"
        cold = f"{first:.2f}x" if first is not None else "-"
        print(
            f"| {name} | {dtype} | {mode} | {method} | {rate:.1f} | {speedup:.2f}x | {over_static} | {per_step:.2f} "
            f"| {step_ms:.1f} | {exact} | {cold} |"
        )


@dataclass
class Findings:
    """What issue 45's targets read, gathered as the check runs: each dtype and mode's step-cost curve (rows ->
    times a 1-row step), the host's rest of each method's timed step (ms, the most over the sets), the app's Run
    (lookahead over greedy, and whether the verdict named lookahead) and any fallback note, per dtype."""

    curves: dict[tuple[str, StepMode], dict[int, float]] = field(default_factory=dict)
    host: dict[tuple[str, StepMode, Method], float] = field(default_factory=dict)
    runs: dict[str, tuple[float, bool] | None] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)


CAPTURED = (StepMode.CUDA_GRAPH, StepMode.COMPILED)
LOOKAHEAD_TARGETS = {"humaneval": 2.0, "gsm8k": 1.3, "mtbench": 1.15}  # over hf-static, float32, captured
CURVE_TARGET, HOST_TARGET = 1.3, 0.25  # a 16-, 64-, 128-row pass over a 1-row one; ms of the host's rest


def print_targets(rows: list[tuple], found: Findings, device: str) -> None:
    """Issue 45's targets as a Markdown table: each target, what this run measured for it, and whether it is met
    ("-": nothing measured for it here)."""
    static = {  # each captured bench's figure over hf-static, by (set, dtype, mode, method)
        (r[0], r[1], r[2], r[3]): r[6] for r in rows if r[3] != "FAILED" and r[6] is not None and r[2] in CAPTURED
    }
    lines = []

    def target(what: str, figures: list[tuple[str, float]], met) -> None:
        shown = ", ".join(f"{name} {value:.2f}" for name, value in figures) or "-"
        verdict = "-" if not figures else ("met" if all(met(value) for _, value in figures) else "NOT met")
        lines.append(f"| {what} | {shown} | {verdict} |")

    for name, least in LOOKAHEAD_TARGETS.items():
        figures = [(m, v) for (n, d, m, e), v in static.items() if (n, d, e) == (name, "float32", "lookahead")]
        target(f"lookahead >= {least}x hf-static, {name}, float32 captured", figures, lambda v, t=least: v >= t)
    plain = [(f"{n} {m}", v) for (n, d, m, e), v in static.items() if d == "float32" and e == "greedy"]
    target("our plain step >= 1.0x hf-static, float32 captured", plain, lambda v: v >= 1.0)
    for (dtype, mode), curve in found.curves.items():
        if mode in CAPTURED:
            figures = [(f"{n} rows", curve[n]) for n in (16, 64, 128)]
            target(f"a wide pass <= {CURVE_TARGET}x a 1-row pass, {dtype} {mode}", figures, lambda v: v <= CURVE_TARGET)
    for (dtype, mode, method), rest in found.host.items():
        if method in (Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.MEDUSA) and mode in CAPTURED:
            target(
                f"host's share of a {method} step <= {HOST_TARGET} ms, {dtype} {mode}",
                [("ms", rest)],
                lambda v: v <= HOST_TARGET,
            )
    for dtype, run in found.runs.items():
        figures = [] if run is None else [("lookahead over greedy", run[0])]
        target(
            f"the app's Run: lookahead faster than greedy, its verdict saying so, {dtype}",
            figures,
            lambda v, r=run: v > 1 and r[1],
        )
    for dtype in dict.fromkeys(d for d, _ in found.curves):
        modes = [str(mode) for d, mode in found.curves if d == dtype]
        note = found.notes.get(dtype, "")
        ran = f"{', '.join(modes)}; {note or 'no fallback note'}"
        met = "met" if not note and any(mode in CAPTURED for mode in modes) else "NOT met"
        lines.append(f"| {dtype} runs captured with no fallback note | {ran} | {met} |")
    print(f"\nIssue 45's targets (on CUDA), as this run measured them on {device}:")
    print("| target | measured | |")
    print("|---|---|---|")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
