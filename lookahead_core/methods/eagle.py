"""The EAGLE draft (Li et al., 2024): one small decoder layer on the model's own features, drafting
autoregressively through the model's shared, frozen output layer.

At position t the layer reads (h_t, embedding of the token at t + 1), h_t being the model's last hidden
state there, and predicts h_{t+1}; the model's output layer turns the prediction into a guess for the
token at t + 2. To draft past c it feeds its own predictions back: (predicted h, drafted token), one
row per drafted token, with its own KV cache over the positions whose true features the model has
computed. It is speculative decoding's draft: the chain goes to the one verifier like a draft model's,
greedy (argmax) or sampled (with its q, by speculative sampling's rule), so the output stays exact.

A trained layer drafts from a vocabulary of its own: the tokens the model chose most often on its training
text (FR-Spec's frequency-ranked draft vocabulary). Its guesses go through those rows of the output layer
only: on the 2-core CPU the full 49,152-row product cost 6.4 ms per drafted token, 8,192 rows 0.3 ms. A token
outside it cannot be drafted, and verification still commits it. The layer is saved as safetensors, its
matrices in 4 and 8 bits (lookahead_core.methods.stored), with a header naming the model it was trained for, and refuses
to load for another.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn
from transformers import DynamicCache, LlamaConfig, LlamaModel
from transformers.cache_utils import Cache

from ..device.forward import output_device
from ..method_spec import Guessing, MakeProposer, MethodSpec
from ..records import METHODS, Method
from ..sampling import SamplingConfig
from ..step.proposers import Outcome, Proposal, ProposerReport, StepContext
from . import eagle_on_device
from .draft import Draft, draft_chain, draft_token, drafted_record
from .medusa import HeadsTarget, MedusaError, logit_transform, read_checked, target_of
from .stored import packed, restored

HEADER_KEY = "lookahead-lab.eagle"
FORMAT = 2  # 1: every weight in float16; 2: its matrices in fewer bits (lookahead_core.methods.stored)
EAGLE = "eagle"  # the draft name that asks for an EAGLE layer (the shipped one, or --eagle PATH)


@dataclass(frozen=True, kw_only=True)
class EagleShape:
    """The layer's attention heads (query and key/value) and its MLP width; the hidden size is the model's."""

    heads: int
    kv_heads: int
    intermediate: int


def shape_for(model) -> EagleShape:
    """One of the model's own decoder layers' shape where it has one, else d/64 heads and a 4d MLP."""
    config = model.config.get_text_config(decoder=True)
    d = target_of(model, "").hidden_size
    heads = getattr(config, "num_attention_heads", None) or max(1, d // 64)
    heads = heads if d % heads == 0 else 1
    kv = getattr(config, "num_key_value_heads", None) or heads
    kv = kv if heads % kv == 0 else heads
    intermediate = getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None) or 4 * d
    return EagleShape(heads=heads, kv_heads=kv, intermediate=intermediate)


class EagleLayer(nn.Module):
    """fc: (h, embedding) -> d, then one Llama decoder layer (with its norm) over the positions in order.

    `vocabulary` (a buffer, saved with the layer) holds the ids it drafts from, most frequent first; None:
    every token. `accuracy`, when measured, is how often its first guess (from true features) was the model's
    own next-token choice on held-out text, top-1 and top-5. `label` names it in records (a file's name).
    """

    def __init__(self, *, target: HeadsTarget, shape: EagleShape, accuracy=None, label="untrained") -> None:
        super().__init__()
        d = target.hidden_size
        self.target, self.shape, self.accuracy, self.label = target, shape, accuracy, label
        config = LlamaConfig(
            vocab_size=1,  # the layer reads embeddings given to it: its own table is never used
            hidden_size=d,
            intermediate_size=shape.intermediate,
            num_hidden_layers=1,
            num_attention_heads=shape.heads,
            num_key_value_heads=shape.kv_heads,
            head_dim=d // shape.heads,
            max_position_embeddings=1 << 16,
            pad_token_id=None,
            bos_token_id=None,
            eos_token_id=None,
        )
        config._attn_implementation = "sdpa"
        self.fc = nn.Linear(2 * d, d)
        self.body = LlamaModel(config)
        self.vocabulary: torch.Tensor | None
        self.register_buffer("vocabulary", None)

    @property
    def dtype(self) -> torch.dtype:
        return self.fc.weight.dtype

    def features(
        self, hidden: torch.Tensor, embedded: torch.Tensor, cache: Cache | None = None, mask=None, positions=None
    ) -> torch.Tensor:
        """(B, T, d) features and (B, T, d) embeddings of the tokens after them -> (B, T, d) predicted next
        features, each position seeing the cache and the positions before it (`mask`: (B, T) padding, or a 4D
        additive mask over the cache's columns; `positions`: (B, T) position ids, by default the cache's length
        on)."""
        x = self.fc(torch.cat([hidden, embedded], dim=-1))
        out = self.body(
            inputs_embeds=x,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=cache is not None,
        )
        return out.last_hidden_state

    def header(self) -> dict:
        return {**asdict(self.target), **asdict(self.shape), "accuracy": self.accuracy, "format": FORMAT}

    def head_for(self, model) -> DraftHead:
        """The output layer's rows for this layer's vocabulary, taken from `model` once and kept (a layer serves
        one model; changing `vocabulary` takes them again)."""
        key = (id(model), id(self.vocabulary))
        if getattr(self, "_head", (None,))[0] != key:
            self._head = (key, draft_head(model, self.vocabulary))
        return self._head[1]


@dataclass
class DraftHead:
    """The output layer's rows for a draft vocabulary (all of them when `vocabulary` is None), taken once."""

    weight: torch.Tensor
    bias: torch.Tensor | None
    vocabulary: torch.Tensor | None

    def scores(self, model, features: torch.Tensor) -> torch.Tensor:
        """(rows x d) features -> (rows x n) logits over the draft vocabulary, with the model's logit transform."""
        scores = (self.weight @ features.T).T
        return logit_transform(model, scores if self.bias is None else scores + self.bias)

    def token(self, index: int) -> int:
        """The model's id of the draft vocabulary's `index`-th token."""
        return index if self.vocabulary is None else int(self.vocabulary[index])

    def spread(self, q: torch.Tensor, size: int) -> torch.Tensor:
        """q over the draft vocabulary as a distribution over all `size` ids (0 outside it)."""
        if self.vocabulary is None:
            return q
        return torch.zeros(size, dtype=q.dtype, device=q.device).index_copy_(0, self.vocabulary.to(q.device), q)


def draft_head(model, vocabulary: torch.Tensor | None) -> DraftHead:
    """The rows of `model`'s output layer (a plain linear layer) for `vocabulary`."""
    head = model.get_output_embeddings()
    if not isinstance(head, nn.Linear):
        raise MedusaError(f"an EAGLE layer needs a plain linear output layer, not {type(head).__name__}")
    if vocabulary is None:
        return DraftHead(head.weight, head.bias, None)
    index = vocabulary.to(head.weight.device)
    bias = None if head.bias is None else head.bias.index_select(0, index)
    return DraftHead(head.weight.index_select(0, index), bias, index)


def eagle_for(model, name: str) -> EagleLayer:
    """A fresh (untrained) layer for `model`, on its device and in its dtype."""
    weight = model.get_output_embeddings().weight
    layer = EagleLayer(target=target_of(model, name), shape=shape_for(model))
    return layer.to(device=weight.device, dtype=weight.dtype)


def stored_bits(name: str) -> int:
    """The bits a matrix of the layer is kept in on disk (lookahead_core.methods.stored): its MLP's 4, the rest 8."""
    return 4 if ".mlp." in name else 8


def save_eagle(layer: EagleLayer, path: str | Path) -> None:
    """Write the layer's matrices in fewer bits (stored_bits; its other weights in float16, far below what a guess
    can tell apart) and its vocabulary as safetensors, its header (model, sizes, shape, accuracy) as their
    metadata."""
    tensors = {
        k: (v if k == "vocabulary" else v.half()).detach().contiguous().cpu() for k, v in layer.state_dict().items()
    }
    save_file(packed(tensors, stored_bits), str(path), metadata={HEADER_KEY: json.dumps(layer.header())})


def load_eagle(path: str | Path, model, name: str, label: str | None = None) -> EagleLayer:
    """The layer at `path` for `model` (called `name`), in the model's dtype, labelled `label` (default: the
    file's name). Raises MedusaError, one line, for a layer trained for another model or a file that holds
    none."""
    header, tensors = read_checked(path, HEADER_KEY, "EAGLE layer", model, name)
    weight = model.get_output_embeddings().weight
    try:
        shape = EagleShape(**{k: header[k] for k in ("heads", "kv_heads", "intermediate")})
        layer = EagleLayer(target=target_of(model, name), shape=shape, accuracy=header["accuracy"])
        tensors = restored(tensors)
        vocabulary = tensors.pop("vocabulary", None)
        layer.load_state_dict(tensors)
    except (KeyError, RuntimeError) as error:
        message = str(error).splitlines()[0] if str(error) else ""
        raise MedusaError(f"{path} holds no usable EAGLE layer ({type(error).__name__}: {message})") from None
    layer.vocabulary, layer.label = vocabulary, label or Path(path).name
    return layer.to(device=weight.device, dtype=weight.dtype).eval()


class EagleProposer:
    """Speculative decoding's proposer with an EAGLE layer as the draft.

    The layer's cache holds `cached` positions, each fed with the model's true feature there. Each step it
    feeds the features the last pass made (the context's `fresh_hidden`), drafts up to k tokens on its own
    predictions, then drops the drafted positions from its cache: the next pass brings their true features.
    """

    def __init__(self, draft: Draft, model, sampling: SamplingConfig) -> None:
        self.draft, self.model, self.sampling = draft, model, sampling
        self.embed = model.get_input_embeddings()
        self.head = draft.model.head_for(model)
        self.size = model.get_output_embeddings().weight.shape[0]
        self.generator = None if sampling.is_greedy else sampling.generator(output_device(model), stream=1)
        self.cache, self.cached = DynamicCache(), 0
        self.drafted: tuple[list[int], float] = ([], 0.0)  # the last `propose`'s tokens and seconds

    @torch.inference_mode()
    def advance(self, features: torch.Tensor, tokens: list[int]) -> torch.Tensor:
        """Feed (feature, next token) rows after the cache; the predicted feature of the last row (1, d)."""
        layer = self.draft.model
        embedded = self.embed(torch.tensor([tokens], device=self.embed.weight.device))
        embedded = embedded.to(features.device, layer.dtype)
        return layer.features(features[None].to(layer.dtype), embedded, self.cache)[0, -1:]

    def propose(self, context: StepContext) -> Proposal:
        start, sequence = time.perf_counter(), context.sequence
        fresh = context.fresh_hidden  # the true features of positions cached .. len(sequence) - 2
        feature = self.advance(fresh, sequence[self.cached + 1 :])
        self.cached = len(sequence) - 1
        tokens, chances, rows = [], [], []
        while True:
            with torch.inference_mode():
                logits = self.head.scores(self.model, feature.to(self.model.dtype)).float()
            index, chance, q = draft_token(logits, self.sampling, self.generator)
            token = self.head.token(index)
            tokens.append(token)
            chances.append(chance)
            rows.append(None if q is None else self.head.spread(q, self.size))
            if len(tokens) == self.draft.tokens or chance < self.draft.confidence:
                break
            feature = self.advance(feature, [token])
        if surplus := self.cache.get_seq_length() - self.cached:
            self.cache.crop(-surplus)
        distributions = None if self.sampling.is_greedy else torch.stack(rows)
        self.drafted = (tokens, time.perf_counter() - start)
        return Proposal(None, [draft_chain(tokens, chances, distributions)], draft_seconds=self.drafted[1])

    def observe(self, outcome: Outcome) -> None:
        """Nothing to keep: the next pass's true features come with the next step's context."""

    def report(self, outcome: Outcome) -> ProposerReport:
        return ProposerReport(method_report=drafted_record(*self.drafted))


# ----------------------------------------------------------------------------------------------
# Its spec


def eagle_chain(model, prompt_ids: list[int], request, runtime) -> MakeProposer:
    """EAGLE: the layer's chain of k tokens, read off the model's own features (kept from each pass)."""
    return lambda sequence: EagleProposer(runtime.layer, model, request.sampling)


SPEC = MethodSpec(
    entry=METHODS[Method.EAGLE],
    guessing=Guessing(
        eagle_chain,
        lambda request, runtime: runtime.layer.tokens,
        lambda request, runtime: runtime.layer.settings(),
        lambda request, runtime: 1 + runtime.layer.tokens,
        keep_hidden=True,
    ),
    resident=eagle_on_device.RESIDENT,
)
