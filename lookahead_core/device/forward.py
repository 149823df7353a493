"""One forward pass of the unmodified model over a token tree, and the KV cache bookkeeping after it.

The tree's attention mask is explicit (4D, float, 0 = may attend), its in-step part built once
per layout and reused, one per layer type where a model mixes full and sliding-window layers
(attention.py); position ids and the cache position are passed with it, so any transformers
causal LM whose attention honours a custom 4D mask runs lookahead with no patching. The cache
keeps every position on every layer; only the transformers Cache API (`crop`, and the layers'
key/value tensors) is used to keep the accepted rows.
Where the model's head is a plain linear layer the engine runs the model's own base and applies
that layer itself, on the rows it scores; on a CPU every linear layer, the head too, takes its
rows the way measured fastest on this machine, in the engine's own view of the model (products.py).
Each pass returns every row's argmax (greedy decoding, the Jacobi update) and logits (sampled
verification), and, when asked, each row's last hidden state (what Medusa's heads read), taken
from the same pass.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import torch
from torch import nn
from transformers import DynamicCache

from ..tree.attention import AttentionPlan, step_masks
from ..tree.layout import StepLayout
from .products import engine_model


def synchronize(device: torch.device) -> None:
    """Wait for queued device work, so wall times measure the work itself."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@lru_cache(maxsize=256)
def tree_mask(layout: StepLayout, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The (q, q) additive mask among a step's own rows: 0 where a row sees an ancestor or itself."""
    q = layout.size
    allowed = torch.zeros(q, q, dtype=torch.bool)
    for row, seen in enumerate(layout.seen):
        allowed[row, list(seen)] = True
    mask = torch.full((q, q), torch.finfo(dtype).min, dtype=dtype)
    return mask.masked_fill(allowed, 0.0).to(device)


# Config fields of models that rescale or soft-cap the output layer's product (Gemma 2/3, Cohere,
# Granite): their logits are not base(...) @ weight.T, so the model's own head computes them.
LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "logits_scaling", "output_multiplier_scale")


def plain_head(model) -> nn.Linear | None:
    """The model's output layer when logits are exactly base(...) @ weight.T (+ bias), else None."""
    head = model.get_output_embeddings()
    config = model.config.get_text_config(decoder=True)
    if any(getattr(config, name, None) not in (None, 1, 1.0) for name in LOGIT_TRANSFORMS):
        return None
    if isinstance(head, nn.Linear) and model.base_model is not model:
        return head
    return None


def output_device(model) -> torch.device:
    """Where a pass's logits come out: the output layer's device (it may differ from the input's)."""
    return model.get_output_embeddings().weight.device


@dataclass
class Pass:
    """One forward pass's output: each fed row's argmax (read back, so the work is done), its logits
    (rows x vocab, on the model's device), and the wall time."""

    argmax: list[int]
    logits: torch.Tensor
    seconds: float
    hidden: torch.Tensor | None = None  # (fed rows x d) the final layer's normed output, only when asked for


@torch.inference_mode()
def run_rows(
    model, last_only: bool = False, hidden: bool = False, **inputs
) -> tuple[list[int], torch.Tensor, torch.Tensor | None]:
    """The argmax and logits of each fed row (or of the last one), and, when `hidden`, the last hidden
    states of every fed row (even with `last_only`): one forward pass of the model."""
    head = plain_head(model)
    if head is None:
        out = model(**inputs, logits_to_keep=1 if last_only else 0, output_hidden_states=hidden)
        logits = out.logits[0]
        states = out.hidden_states[-1][0] if hidden else None
        return logits.argmax(dim=-1).tolist(), logits, states
    states = model.base_model(**inputs).last_hidden_state[0]
    scored = (states[-1:] if last_only else states).to(head.weight.device)
    logits = head(scored)  # in the engine's view, the product taken the way measured fastest here (products.py)
    return logits.argmax(dim=-1).tolist(), logits, states.to(head.weight.device) if hidden else None


def timed(model, last_only: bool = False, hidden: bool = False, **inputs) -> Pass:
    """One pass of `model`'s engine view, timed; the view is had first (a first pass at a thread count measures
    the products' choice: that is no pass's time)."""
    device, viewed = model.device, engine_model(model)
    synchronize(device)
    start = time.perf_counter()
    argmax, logits, states = run_rows(viewed, last_only, hidden, **inputs)
    return Pass(argmax, logits, time.perf_counter() - start, states)


def extend(model, cache: DynamicCache, tokens: list[int], hidden: bool = False) -> Pass:
    """Feed `tokens` after the cached prefix, in order; the pass holds the last row's argmax and logits
    (and every fed row's last hidden state when `hidden`)."""
    input_ids = torch.tensor([tokens], device=model.device)
    return timed(model, last_only=True, hidden=hidden, input_ids=input_ids, past_key_values=cache, use_cache=True)


def new_cache() -> DynamicCache:
    """An empty cache whose every layer keeps every position, sliding-window layers too.

    A sliding layer's own cache drops keys as it goes and cannot roll back past its window; the
    engine hides old keys with the sliding mask instead, so it can drop rejected rows anywhere.
    """
    return DynamicCache()


def prefill(model, prompt_ids: list[int], hidden: bool = False) -> tuple[DynamicCache, Pass]:
    """Run the prompt through the model; return the cache and the last row's pass (the first new token)."""
    cache = new_cache()
    return cache, extend(model, cache, prompt_ids, hidden)


def decode_one_token(model, cache: DynamicCache, token: int) -> Pass:
    """Plain autoregressive step: feed one token; the pass holds its argmax and logits."""
    return extend(model, cache, [token])


def forward_tree(
    model, cache: DynamicCache, input_ids: list[int], layout: StepLayout, plan: AttentionPlan, hidden: bool = False
) -> Pass:
    """Feed a token tree after the cached prefix, masked for each layer type of `plan`; the pass holds
    each row's argmax and logits (and last hidden states when `hidden`)."""
    device, dtype = model.device, model.dtype
    past = cache.get_seq_length()
    q = layout.size
    tree = torch.cat([torch.zeros(q, past, dtype=dtype, device=device), tree_mask(layout, dtype, device)], dim=1)
    position_ids = torch.tensor([layout.depths], device=device) + past
    return timed(
        model,
        hidden=hidden,
        input_ids=torch.tensor([input_ids], device=device),
        attention_mask=step_masks(plan, tree, layout.depths, past),
        position_ids=position_ids,
        cache_position=torch.arange(past, past + q, device=device),
        past_key_values=cache,
        use_cache=True,
    )


@torch.inference_mode()
def keep_rows(cache: DynamicCache, keep: int, rows: list[int]) -> None:
    """Keep the first `keep` cached positions followed by the positions `rows`; drop everything else.

    `rows` are absolute cache indices, ascending and >= keep; they move down to follow the kept prefix.
    """
    if rows != list(range(keep, keep + len(rows))):
        source = torch.tensor(rows)
        target = slice(keep, keep + len(rows))
        for layer in cache.layers:  # with device_map="auto", layers may sit on different devices
            index = source.to(layer.keys.device)
            layer.keys[:, :, target] = layer.keys.index_select(2, index)
            layer.values[:, :, target] = layer.values.index_select(2, index)
    surplus = cache.get_seq_length() - keep - len(rows)
    if surplus:
        cache.crop(-surplus)


class Passes(Protocol):
    """A decoding's forward passes after it is asked for them: the eager step's (EagerPasses) or the fixed-shape
    step's (fixed.FixedPasses). `keep` follows a `tree` and keeps c's row and the `accepted` step rows."""

    def prefill(self, prompt_ids: list[int], hidden: bool = False) -> Pass: ...

    def one(self, token: int) -> Pass: ...

    def tree(self, tokens: list[int], layout: StepLayout, plan: AttentionPlan, hidden: bool = False) -> Pass: ...

    def keep(self, accepted: tuple[int, ...]) -> None: ...

    def release(self) -> None: ...


class EagerPasses:
    """The eager step's passes over one decoding: a DynamicCache grown by each pass and cropped after it, as many
    rows fed as the step lays out. The decoders drive it, or the fixed-shape step (fixed.py), through the same
    calls: `prefill`, `one` (plain decoding's token), `tree` (a guessing step), `keep` (after a tree: c's row and
    the accepted rows stay, in order) and `release` (the decoding is over)."""

    def __init__(self, model) -> None:
        self.model = model

    def prefill(self, prompt_ids: list[int], hidden: bool = False) -> Pass:
        engine_model(self.model, checked=True)  # a view whose fused copies no longer hold the weights: made anew
        self.cache, result = prefill(self.model, prompt_ids, hidden)
        return result

    def one(self, token: int) -> Pass:
        return decode_one_token(self.model, self.cache, token)

    def tree(self, tokens: list[int], layout: StepLayout, plan: AttentionPlan, hidden: bool = False) -> Pass:
        self.past = self.cache.get_seq_length()
        return forward_tree(self.model, self.cache, tokens, layout, plan, hidden)

    def keep(self, accepted: tuple[int, ...]) -> None:
        """Keep c's row and the rows `accepted` (step rows, ascending) of the last tree; drop the others."""
        keep_rows(self.cache, self.past + 1, [self.past + r for r in accepted])

    def release(self) -> None:
        """Nothing is shared between decodings here."""
