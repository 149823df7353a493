"""Which attention a model's layers run, the masks a token tree needs for each, and what the engine refuses.

A layer either attends to every earlier key (full attention) or only to keys within a sliding
window: a query at position t sees keys at positions > t - window (transformers' sliding-window
overlay), besides the tree's own rule (its ancestors and itself). A lookahead row's t is its own
position id. Where all layers are of one type the model gets one 4D mask; where types mix, it
gets a mapping of one 4D mask per layer type, which transformers' hybrid models accept.

The KV cache keeps every position on every layer (a plain DynamicCache): the sliding mask hides
what a sliding layer must not see, so rejected rows can be dropped anywhere, as on full layers.

A model the engine cannot drive exactly is refused before decoding with UnsupportedModel, one
line naming the reason and what would work.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.cache_utils import get_layer_types_and_kwargs

FULL = "full_attention"
SLIDING = "sliding_attention"

# Position biases computed from the mask's running count of tokens, not from position ids: a token
# tree's rival rows would get the wrong distances.
ALIBI = {"bloom", "mpt", "jais", "baichuan"}
# Attention kernels that take no arbitrary 4D mask.
MASKLESS_KERNELS = ("flash_attention", "flex_attention", "paged")
WHAT_WORKS = (
    "models with rotary or learned positions and full or sliding-window attention work "
    "(Llama, Qwen, Gemma, Mistral, GPT-2, ...)"
)


class UnsupportedModel(ValueError):
    """A model the engine cannot run lookahead on exactly; the message names why and what would work.

    `reason` is the why alone (for a table of families).
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class AttentionPlan:
    """A model's attention as the engine drives it: each layer's type and the sliding window (None: none)."""

    layer_types: tuple[str, ...]
    window: int | None

    @property
    def sliding_layers(self) -> int:
        return self.layer_types.count(SLIDING)

    @property
    def mixed(self) -> bool:
        return len(set(self.layer_types)) > 1


def refuse(model_type: str, reason: str) -> UnsupportedModel:
    return UnsupportedModel(f"{model_type} cannot be run exactly by lookahead: {reason}; {WHAT_WORKS}", reason)


def attention_plan(config) -> AttentionPlan:
    """The plan for a model `config`, or UnsupportedModel when the engine cannot give it a token tree's masks."""
    text = config.get_text_config(decoder=True)
    model_type = getattr(text, "model_type", "") or getattr(config, "model_type", "this model")
    if getattr(text, "is_encoder_decoder", False):
        raise refuse(model_type, "it is an encoder-decoder model, not a causal LM")
    if model_type in ALIBI or getattr(text, "alibi", False) or getattr(getattr(text, "attn_config", None), "alibi", 0):
        raise refuse(model_type, "its ALiBi position biases are counted along the mask, not read from position ids")
    kernel = str(getattr(config, "_attn_implementation", None) or "")
    if kernel.startswith(MASKLESS_KERNELS):
        reason = f"the {kernel} attention kernel takes no custom 4D mask"
        raise UnsupportedModel(f"{reason}: load the model with attn_implementation='sdpa' or 'eager'", reason)
    layer_types, per_layer = get_layer_types_and_kwargs(text)
    others = sorted(set(layer_types) - {FULL, SLIDING})
    if others:
        raise refuse(
            model_type,
            f"its layers include {', '.join(others)}, whose state the engine cannot keep row by row "
            "(it knows full and sliding-window attention)",
        )
    windows = {kwargs["sliding_window"] for kind, kwargs in zip(layer_types, per_layer, strict=True) if kind == SLIDING}
    if len(windows) > 1:
        raise refuse(model_type, f"its sliding layers use different windows ({sorted(windows)})")
    window = windows.pop() if windows else None
    if window is not None and (not isinstance(window, int) or window < 1):
        raise refuse(model_type, f"its sliding window {window!r} is not a positive number of tokens")
    return AttentionPlan(tuple(layer_types), window)


def key_positions(depths: tuple[int, ...], past: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Position ids of the step's keys (the cached prefix, then the fed rows) and of its queries (the rows)."""
    queries = torch.tensor(depths, device=device) + past
    return torch.cat([torch.arange(past, device=device), queries]), queries


def beyond_window(depths: tuple[int, ...], past: int, window: int, device: torch.device) -> torch.Tensor:
    """(rows, past + rows) bool: True where a key sits at or before the query's position - window."""
    keys, queries = key_positions(depths, past, device)
    return keys[None, :] <= queries[:, None] - window


def step_masks(plan: AttentionPlan, tree: torch.Tensor, depths: tuple[int, ...], past: int):
    """The attention mask(s) of a step: `tree` is its (rows, past + rows) additive full-attention mask.

    Returns one 4D mask when every layer is of one type, else {layer type: 4D mask}.
    """
    masks = {FULL: tree}
    if plan.window is not None:
        hidden = beyond_window(depths, past, plan.window, tree.device)
        masks[SLIDING] = tree.masked_fill(hidden, torch.finfo(tree.dtype).min)
    if not plan.mixed:
        return masks[plan.layer_types[0]][None, None]
    return {kind: mask[None, None] for kind, mask in masks.items()}


def sliding_view(plan: AttentionPlan, seen: tuple[tuple[int, ...], ...], depths: tuple[int, ...], past: int):
    """What each row sees on a sliding layer: (first visible prefix position, visible rows of the step).

    None when the model has no sliding layer.
    """
    if plan.window is None:
        return None
    view = []
    for row_seen, depth in zip(seen, depths, strict=True):
        position = past + depth
        view.append((max(0, position - plan.window + 1), [r for r in row_seen if depth - depths[r] < plan.window]))
    return view
