"""One forward pass of the unmodified model over a token tree, and the KV cache bookkeeping after it.

The tree's attention mask is explicit (4D, float, 0 = may attend), built once per layout and
reused; position ids and the cache position are passed with it, so any transformers causal LM
whose attention honours a custom 4D mask runs lookahead with no patching. Only the transformers
Cache API (`crop`, and the layers' key/value tensors) is used to keep the accepted rows.
Decoding needs only each row's argmax, so where the model's head is a plain linear layer the
engine runs the model's own base and applies that layer's weights itself, as weight @ hidden:
on a CPU that product costs a fraction of the batched linear for a few rows.
"""

from __future__ import annotations

import time
from functools import lru_cache

import torch
from torch import nn
from transformers import DynamicCache

from .layout import StepLayout, visible_rows


def synchronize(device: torch.device) -> None:
    """Wait for queued device work, so wall times measure the work itself."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@lru_cache(maxsize=256)
def tree_mask(layout: StepLayout, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The (q, q) additive mask among a step's own rows: 0 where a row sees an ancestor or itself."""
    q = layout.size
    allowed = torch.zeros(q, q, dtype=torch.bool)
    for row, seen in enumerate(visible_rows(layout.parents)):
        allowed[row, seen] = True
    mask = torch.full((q, q), torch.finfo(dtype).min, dtype=dtype)
    return mask.masked_fill(allowed, 0.0).to(device)


def plain_head(model) -> nn.Linear | None:
    """The model's output layer when logits are exactly base(...) @ weight.T (+ bias), else None."""
    head = model.get_output_embeddings()
    if isinstance(head, nn.Linear) and model.base_model is not model:
        return head
    return None


@torch.inference_mode()
def argmax_rows(model, last_only: bool = False, **inputs) -> torch.Tensor:
    """The argmax token of each fed row (or of the last one): one forward pass of the model."""
    head = plain_head(model)
    if head is None:
        logits = model(**inputs, logits_to_keep=1 if last_only else 0).logits[0]
        return logits.argmax(dim=-1)
    hidden = model.base_model(**inputs).last_hidden_state[0]
    hidden = (hidden[-1:] if last_only else hidden).to(head.weight.device)
    scores = head.weight @ hidden.T  # (vocab, rows): the matrix-vector shape CPU kernels run fastest
    if head.bias is not None:
        scores += head.bias[:, None]
    return scores.argmax(dim=0)


def prefill(model, prompt_ids: list[int]) -> tuple[DynamicCache, int, float]:
    """Run the prompt through the model; return the cache, the first new token and the wall time."""
    device = model.device
    cache = DynamicCache(config=model.config)
    input_ids = torch.tensor([prompt_ids], device=device)
    synchronize(device)
    start = time.perf_counter()
    token = int(argmax_rows(model, last_only=True, input_ids=input_ids, past_key_values=cache, use_cache=True)[-1])
    return cache, token, time.perf_counter() - start


def decode_one_token(model, cache: DynamicCache, token: int) -> tuple[int, float]:
    """Plain autoregressive step: feed one token, return the argmax of its logits and the wall time."""
    device = model.device
    input_ids = torch.tensor([[token]], device=device)
    synchronize(device)
    start = time.perf_counter()
    next_token = int(argmax_rows(model, input_ids=input_ids, past_key_values=cache, use_cache=True)[-1])
    return next_token, time.perf_counter() - start


def forward_tree(model, cache: DynamicCache, input_ids: list[int], layout: StepLayout) -> tuple[list[int], float]:
    """Feed a token tree after the cached prefix; return each row's argmax token and the wall time."""
    device, dtype = model.device, model.dtype
    past = cache.get_seq_length()
    q = layout.size
    mask = torch.cat([torch.zeros(q, past, dtype=dtype, device=device), tree_mask(layout, dtype, device)], dim=1)
    position_ids = torch.tensor([layout.depths], device=device) + past
    synchronize(device)
    start = time.perf_counter()
    argmax = argmax_rows(
        model,
        input_ids=torch.tensor([input_ids], device=device),
        attention_mask=mask[None, None],
        position_ids=position_ids,
        cache_position=torch.arange(past, past + q, device=device),
        past_key_values=cache,
        use_cache=True,
    ).tolist()
    return argmax, time.perf_counter() - start


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
