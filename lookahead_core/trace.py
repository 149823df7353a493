"""Recording: decode once and keep every step record as a Trace (see records/), or a Run of two.

A trace holds the meta facts (model, hardware, settings, prompt), one record per forward pass
(the prefill first), the text of every token id the steps mention, and the run's totals, so it
can be read and drawn with no model.
"""

from __future__ import annotations

import codecs
import os
import platform
import re
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace

import torch
import transformers

from .config import LookaheadConfig, LookupConfig
from .decoding import (
    DecodingError,
    check_request,
    greedy_steps,
    lookahead_steps,
    medusa_steps,
    prompt_lookup_steps,
    speculative_steps,
)
from .draft import Draft
from .medusa import Medusa
from .models import LoadedModel
from .planning import StepPlanner
from .records import (
    LookaheadSettings,
    LookupSettings,
    Machine,
    Method,
    Progress,
    Run,
    StepRecord,
    StopReason,
    Summary,
    Trace,
    TraceMeta,
)
from .request import DecodeRequest
from .tuning import AutoSettings


def lookahead_reach(config: LookaheadConfig) -> int:
    """How many positions past the current token a lookahead step's rows can reach.

    The window's deepest row sits W + N - 3 past it (during warm-up and after), a guess's N - 1.
    """
    return max(config.window + config.ngram - 3, config.ngram - 1)


def method_reach(
    method: Method, config: LookaheadConfig, lookup: LookupConfig, draft: Draft | None, medusa: Medusa | None = None
) -> int:
    """How far past the current token a step of `method` may feed rows."""
    if method == Method.LOOKAHEAD:
        return lookahead_reach(config)
    if method == Method.PROMPT_LOOKUP:
        return lookup.tokens
    if method == Method.MEDUSA and medusa is not None:
        return medusa.reach
    return draft.tokens if method == Method.SPECULATIVE and draft is not None else 0


def decode_steps(
    lm: LoadedModel,
    prompt_ids: list[int],
    request: DecodeRequest,
    planner: StepPlanner | None = None,
    draft: Draft | None = None,
    medusa: Medusa | None = None,
) -> Iterator[StepRecord]:
    """Validate the request, then yield the records of its method (greedy: plain autoregressive decoding).

    The request carries the method, lookahead's W, N, G, prompt lookup's settings, the sampling settings
    (a temperature above 0 makes every method sample) and the budget of new tokens. `planner` (lookahead
    only) picks what each step feeds, None being the paper's full plan; `draft` is the draft model
    speculative decoding needs, `medusa` the heads (and their tree) Medusa decoding needs.
    """
    method, config, lookup, sampling = request.method, request.lookahead, request.lookup, request.sampling
    if method == Method.SPECULATIVE and draft is None:
        raise DecodingError("speculative decoding needs a draft model: give one (for instance bf16-self)")
    if method == Method.MEDUSA and medusa is None:
        raise DecodingError("Medusa decoding needs heads trained for this model: give them (python -m lab.medusa)")
    reach = method_reach(method, config, lookup, draft, medusa)
    check_request(prompt_ids, request.max_new_tokens, lm.context_length, reach)
    model, eos, tokens = lm.model, lm.eos_ids, request.max_new_tokens
    if method == Method.GREEDY:
        return greedy_steps(model, prompt_ids, tokens, eos, sampling)
    if method == Method.PROMPT_LOOKUP:
        return prompt_lookup_steps(model, prompt_ids, lookup, tokens, eos, sampling)
    if method == Method.SPECULATIVE:
        return speculative_steps(model, prompt_ids, draft, tokens, eos, sampling)
    if method == Method.MEDUSA:
        return medusa_steps(model, prompt_ids, medusa, tokens, eos, sampling)
    return lookahead_steps(model, prompt_ids, config, tokens, eos, planner=planner, sampling=sampling)


WARM_UP_TOKENS = 8


def reported(steps: Iterator[StepRecord], part: int, parts: int, method: Method, max_new_tokens: int, warming_up=False):
    """Yield a Progress after each record `steps` yields; return what `steps` returns."""
    count = tokens = 0
    while True:
        try:
            record = next(steps)
        except StopIteration as done:
            return done.value
        count, tokens = count + 1, tokens + len(record.committed)
        yield Progress(
            part=part,
            parts=parts,
            method=method,
            warming_up=warming_up,
            steps=count,
            tokens=tokens,
            max_new_tokens=max_new_tokens,
        )


def warming_up(
    lm: LoadedModel,
    prompt_ids: list[int],
    request: DecodeRequest,
    methods,
    first_part: int,
    parts: int,
    until: Callable[[float], bool] | None = None,
    **runtime,
):
    """`warm_up`, one forward pass at a time: a Progress after each pass, the first numbered `first_part`.

    `until` (a deadline for all the warm-ups) is asked before every pass after a method's first, with the
    seconds the last one took: True ends the warm-ups there (a warm-up is untimed, so one cut short only
    warms less)."""
    for part, method in enumerate(methods, first_part):
        steps = decode_steps(lm, prompt_ids, replace(request, method=method, max_new_tokens=WARM_UP_TOKENS), **runtime)
        if until is not None:
            steps = stopping(steps, until)
        yield from reported(steps, part, parts, method, WARM_UP_TOKENS, warming_up=True)
        if until is not None and until(0.0):
            return


def stopping(steps: Iterator[StepRecord], until: Callable[[float], bool]) -> Iterator[StepRecord]:
    """`steps` until `until(the last step's seconds)` says True after a step."""
    for record in steps:
        yield record
        if until(record.step_seconds):
            return


def warm_up(lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, methods, **runtime) -> None:
    """Decode a few tokens of each of `methods` with the request's settings, untimed, so that no timed run pays
    for another's cold start.

    The first passes of a method allocate, load kernels and fill caches (a draft's too); a run
    timed right after another would be charged for what the other left undone. `runtime` are
    `decode_steps`' planner and draft.
    """
    for _ in warming_up(lm, prompt_ids, request, methods, 1, len(methods), **runtime):
        pass


def summarize(steps: list[StepRecord], text: str = "") -> Summary:
    """Totals of a run: committed ids, forward passes (prefill included), tokens per step, seconds."""
    new_ids = [t for record in steps for t in record.committed]
    seconds = sum(record.step_seconds for record in steps)
    return Summary(
        new_token_ids=new_ids,
        tokens=len(new_ids),
        steps=len(steps),
        tokens_per_step=len(new_ids) / len(steps) if steps else 0.0,
        seconds=seconds,
        tokens_per_second=len(new_ids) / seconds if seconds else 0.0,
        stop=steps[-1].stop if steps else None,
        text=text,
    )


def text_pieces(tokenizer, groups: list[list[int]]) -> list[str]:
    """The text each group of tokens adds to the output, decoded from the whole output so far.

    A token decoded alone can be a fragment of a character (a Chinese character or an emoji is
    often split across tokens) and reads as U+FFFD; decoded with all before it, the character is
    whole. So a group that ends inside a character adds the text before it (possibly nothing),
    and the group that completes the character adds it. Should decoding more tokens ever rewrite
    earlier text, the group adds what follows the part that stayed the same.
    """
    pieces, ids, shown = [], [], ""
    for group in groups:
        ids += group
        text = tokenizer.decode(ids, skip_special_tokens=True).rstrip("\ufffd")
        pieces.append(text[len(os.path.commonprefix([shown, text])) :])
        shown = text
    return pieces


def candidate_tokens(steps: list[StepRecord]) -> tuple[int, int]:
    """The candidate tokens a run verified and those accepted, over all its steps ((0, 0) for plain decoding)."""
    verified = [record.verification for record in steps if record.verification is not None]
    return sum(len(c.tokens) for v in verified for c in v.candidates), sum(v.accepted for v in verified)


def byte_level_alphabet() -> dict[str, int]:
    """Byte-level BPE's printable stand-in for each byte (GPT-2's table): printable Latin-1 bytes stand for
    themselves, the other bytes for the characters from U+0100 on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + n): b for n, b in enumerate(others)}


BYTE_LEVEL = byte_level_alphabet()
BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")  # sentencepiece's byte tokens


def token_bytes(tokenizer, token_id: int) -> bytes | None:
    """The bytes a token stands for, read from its vocabulary entry (byte-level BPE or sentencepiece's byte
    fallback); None for a tokenizer of another kind."""
    piece = tokenizer.convert_ids_to_tokens(token_id)
    if not isinstance(piece, str):
        return None
    if (fallback := BYTE_FALLBACK.fullmatch(piece)) is not None:
        return bytes([int(fallback.group(1), 16)])
    if piece and all(ch in BYTE_LEVEL for ch in piece):
        return bytes(BYTE_LEVEL[ch] for ch in piece)
    return None


def marked_bytes(error: UnicodeDecodeError) -> tuple[str, int]:
    """A codecs error handler: bytes that are not a whole character, as ‹e4 b8›."""
    return "‹" + " ".join(f"{b:02x}" for b in error.object[error.start : error.end]) + "›", error.end


codecs.register_error("lookahead-lab-marked-bytes", marked_bytes)


def token_text(tokenizer, token_id: int) -> str:
    """What a token reads as alone. A token that holds part of a character (a Chinese character or an emoji
    is often split across tokens) reads as U+FFFD when decoded alone; where the tokenizer says which bytes
    it stands for, those bytes are shown instead, marked as ‹f0 9f 98›."""
    text = tokenizer.decode([token_id])
    if "\ufffd" not in text or (raw := token_bytes(tokenizer, token_id)) is None:
        return text
    return raw.decode("utf-8", errors="lookahead-lab-marked-bytes")


def vocab_for(tokenizer, ids: set[int]) -> dict[str, str]:
    """Text of each token id (token_text), keyed by str(id) so the dict survives JSON unchanged."""
    return {str(i): token_text(tokenizer, i) for i in sorted(ids)}


def machine_facts(lm: LoadedModel) -> Machine:
    facts = lm.describe()
    return Machine(
        **facts,
        torch=str(torch.__version__),  # a plain str: torch gives a str subclass of its own
        transformers=transformers.__version__,
        python=platform.python_version(),
        platform=platform.platform(terse=True),
    )


def trace_settings(method: Method, config: LookaheadConfig, auto: AutoSettings | None) -> LookaheadSettings | None:
    """Lookahead's settings as a trace records them: the auto choice with its figures, or W, N, G."""
    if method != Method.LOOKAHEAD:
        return None
    return (
        auto.settings()
        if auto is not None
        else LookaheadSettings(window=config.window, ngram=config.ngram, guesses=config.guesses)
    )


def tracing(
    lm: LoadedModel,
    prompt_ids: list[int],
    request: DecodeRequest,
    prompt_text: str | None = None,
    auto: AutoSettings | None = None,
    draft: Draft | None = None,
    until: Callable[[float], bool] | None = None,
    medusa: Medusa | None = None,
) -> Generator[StepRecord, None, Trace]:
    """Decode once, yielding each step record as it is produced, and return the Trace that keeps them all.

    With `auto` (the lab's resolution of the request's auto flag), lookahead runs its settings and a fresh
    planner of its kind, and the trace keeps the measured step costs that planner weighed. `until` (a
    deadline) is asked before every step after the prefill, with the seconds the last step took (what the
    next is expected to take; after the prefill, the prefill's): once it says True, decoding stops there
    and the trace is partial, its stop reason DEADLINE.
    """
    method, sampling, lookup = request.method, request.sampling, request.lookup
    config = auto.config if auto is not None else request.lookahead
    planner = auto.make_planner() if auto is not None else None
    steps, cut = [], False
    started = time.time()
    for record in decode_steps(lm, prompt_ids, replace(request, lookahead=config), planner, draft, medusa):
        steps.append(record)
        yield record
        upcoming = record.step_seconds  # the next step, as this one (the first, as the prefill)
        if record.stop is None and until is not None and until(upcoming):
            cut = True
            break
    # the end-of-sequence ids are in the record (meta.eos_ids) even when neither the prompt nor the output holds one
    ids = set(prompt_ids).union(lm.eos_ids, *(record.token_ids() for record in steps))
    summary = summarize(steps)
    if cut:
        summary.stop = StopReason.DEADLINE
    summary.text = lm.tokenizer.decode(summary.new_token_ids, skip_special_tokens=True)
    meta = TraceMeta(
        method=method,
        settings=trace_settings(method, config, auto),
        max_new_tokens=request.max_new_tokens,
        prompt_text=prompt_text,
        prompt_token_ids=list(prompt_ids),
        eos_ids=sorted(lm.eos_ids),
        machine=machine_facts(lm),
        recorded_at=time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        sampling=sampling.record(),
        lookup=LookupSettings(ngram=lookup.ngram, tokens=lookup.tokens, candidates=lookup.candidates)
        if method == Method.PROMPT_LOOKUP
        else None,
        draft=draft.settings() if method == Method.SPECULATIVE else None,
        medusa=medusa.settings() if method == Method.MEDUSA and medusa is not None else None,
        prompt_shown=lm.tokenizer.decode(prompt_ids),
    )
    pieces = text_pieces(lm.tokenizer, [[token] for token in summary.new_token_ids])
    return Trace(meta=meta, steps=steps, vocab=vocab_for(lm.tokenizer, ids), summary=summary, pieces=pieces)


def finished(work: Generator):
    """Run a generator to its end and give what it returns."""
    while True:
        try:
            next(work)
        except StopIteration as done:
            return done.value


def record_trace(lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, **kwargs) -> Trace:
    """`tracing` run to its end: the whole Trace at once (same arguments)."""
    return finished(tracing(lm, prompt_ids, request, **kwargs))


RUN_PARTS = 4  # a Run decodes four times: the two warm-ups, the method, plain decoding


def recording_run(
    lm: LoadedModel,
    prompt_ids: list[int],
    request: DecodeRequest,
    prompt_text: str | None = None,
    auto: AutoSettings | None = None,
    draft: Draft | None = None,
    until: Callable[[Method, float], bool] | None = None,
    parts: int = RUN_PARTS,
    medusa: Medusa | None = None,
    warm_until: Callable[[float], bool] | None = None,
) -> Iterator[Progress | Run]:
    """Both traces for one prompt, the request's method then plain decoding: a Progress after every forward
    pass (numbered out of `parts`, for a caller that decodes more afterwards), the Run last.

    Both methods are warmed up first, so neither is timed cold. A consumer that stops iterating
    stops the work between two forward passes. `until(method, upcoming)` (a deadline) is asked before
    every step after a prefill: True stops that method's trace there, partial (see `tracing`). Sampled,
    both use the same settings and seed; their outputs differ draw by draw, not in distribution.
    """
    method = request.method
    warming = replace(request, lookahead=auto.config) if auto is not None else request
    methods = (method, Method.GREEDY)
    yield from warming_up(lm, prompt_ids, warming, methods, 1, parts, warm_until, draft=draft, medusa=medusa)

    def deadline(of: Method) -> Callable[[float], bool] | None:
        return None if until is None else lambda upcoming: until(of, upcoming)

    traced = tracing(lm, prompt_ids, request, prompt_text, auto, draft, deadline(method), medusa)
    trace = yield from reported(traced, 3, parts, method, request.max_new_tokens)
    plain = tracing(lm, prompt_ids, replace(request, method=Method.GREEDY), prompt_text, until=deadline(Method.GREEDY))
    greedy = yield from reported(plain, 4, parts, Method.GREEDY, request.max_new_tokens)
    yield Run(trace=trace, greedy=greedy)


def record_run(lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, **kwargs) -> Run:
    """`recording_run` run to its end: the Run alone (same arguments)."""
    *_, run = recording_run(lm, prompt_ids, request, **kwargs)
    return run
