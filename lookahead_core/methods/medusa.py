"""Medusa heads (Cai et al., 2024): K residual blocks on the model's last hidden state that guess the
tokens 2..K+1 places past it, the sparse tree their guesses fill, and the proposer that offers it.

Head k reads h, the last hidden state of the row whose prediction is c, and guesses the token k places
after c: logits_k = output_layer(h + SiLU(W_k h + b_k)). The output layer is the model's own, shared
and frozen (never copied), with any rescaling or soft-capping the model applies to its logits. The
guesses are a deterministic function of the committed prefix, so the one verifier checks them as
fixed guesses, greedy or sampled, and the output stays exact. Heads are saved as safetensors with a
header naming the model they were trained for, and refuse to load for another.
"""

from __future__ import annotations

import heapq
import itertools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import nn
from torch.nn import functional

from ..config import SettingsError
from ..method_spec import Guessing, MakeProposer, MethodSpec, Swept
from ..records import METHODS, Branch, GuessReason, GuessSource, HeadGuesses, HeadsRecord, MedusaSettings, Method
from ..step.proposers import Candidate, Outcome, Proposal, ProposedBranch, ProposerReport, StepContext
from ..tree.layout import CURRENT
from . import medusa_on_device

TreePath = tuple[int, ...]  # (i1, .., id): head 1's i1-th choice, then head 2's i2-th, ..., head d's id-th
HEADER_KEY = "lookahead-lab.medusa"
FORMAT = 1
DEFAULT_HEADS = 4
# Rows a step verifies beyond c, when no step costs are given (make_medusa); the lab fits the size to the
# measured costs instead (fitted_medusa).
DEFAULT_TREE_SIZE = 16
MAX_TREE_SIZE = 64  # the widest tree a fitted size may reach (Medusa's GPU trees have 63 nodes)


class MedusaError(ValueError):
    """Heads that cannot serve this model (made for another, or not a heads file at all)."""


@dataclass(frozen=True, kw_only=True)
class HeadsTarget:
    """The model a set of heads was trained for: its name, hidden size and vocabulary size."""

    model: str
    hidden_size: int
    vocab_size: int

    def describe(self) -> str:
        return f"{self.model!r} (hidden size {self.hidden_size}, vocabulary {self.vocab_size})"


def target_of(model, name: str) -> HeadsTarget:
    """`model` (called `name`) as heads identify it: the output layer's input and output sizes."""
    weight = model.get_output_embeddings().weight
    return HeadsTarget(model=name, hidden_size=weight.shape[1], vocab_size=weight.shape[0])


# ----------------------------------------------------------------------------------------------
# The model's own output layer, with its logit transform


def output_logits(model, states: torch.Tensor) -> torch.Tensor:
    """The model's logits for hidden states (..., d): its output layer, then its logit transform."""
    return logit_transform(model, model.get_output_embeddings()(states))


def output_scores(model, states: torch.Tensor) -> torch.Tensor:
    """The model's logits for a few hidden states (rows x d), as (vocab x rows): its own output layer, whose kernel
    a compiled device step traces whole (the engine's view is looked up on the host, outside any graph)."""
    return output_logits(model, states).T


def logit_transform(model, logits: torch.Tensor) -> torch.Tensor:
    """The rescaling or soft-capping the model's forward applies to its output layer's product (Cohere's
    logit_scale, Granite's logits_scaling, Gemma's final soft-cap); elementwise, so any layout."""
    config = model.config.get_text_config(decoder=True)
    if getattr(config, "output_multiplier_scale", None) not in (None, 1, 1.0):
        raise MedusaError(f"Medusa heads do not support {config.model_type}'s output_multiplier_scale yet")
    if getattr(config, "logit_scale", None) not in (None, 1, 1.0):
        logits = logits * config.logit_scale
    if getattr(config, "logits_scaling", None) not in (None, 1, 1.0):
        logits = logits / config.logits_scaling
    if cap := getattr(config, "final_logit_softcapping", None):
        logits = torch.tanh(logits / cap) * cap
    return logits


# ----------------------------------------------------------------------------------------------
# The heads


@dataclass(frozen=True)
class TopChoices:
    """The heads' top choices for one hidden state: `tokens[k]`, head k + 1's best first; `scores` (vocab x K) and
    the `top` scores (width x K) they were read from, so the probabilities are worked out only when asked."""

    tokens: list[list[int]]
    scores: torch.Tensor
    top: torch.Tensor

    def guesses(self) -> list[HeadGuesses]:
        """Each head's choices with the probabilities its softmax gave them (for a step's record)."""
        chances = (self.top - self.scores.logsumexp(dim=0)).exp().T.tolist()
        return [
            HeadGuesses(head=k + 1, tokens=tokens, probabilities=chances[k][: len(tokens)])
            for k, tokens in enumerate(self.tokens)
        ]


class MedusaHeads(nn.Module):
    """K heads for one model: head k's state is h + SiLU(W_k h + b_k), W_k square (d x d).

    W_k and b_k start at zero, so an untrained head's state is h itself and it guesses what the
    model's own next-token row guesses. The bias costs d numbers per head and lets a head shift
    every guess toward what tends to come k + 1 places on, whatever h says (Medusa's blocks have one
    too). `accuracy[k][i]`, when measured, is how often head k's i-th choice was right on held-out
    text; the sparse tree is built from it. `label` names the heads in records (a file's name, never
    its folder).
    """

    def __init__(self, *, target: HeadsTarget, heads: int = DEFAULT_HEADS, accuracy=None, label="untrained") -> None:
        super().__init__()
        if not isinstance(heads, int) or heads < 1:
            raise SettingsError(f"Medusa heads K must be an integer >= 1, got {heads!r}")
        d = target.hidden_size
        self.target, self.accuracy, self.label = target, accuracy, label
        self.weight = nn.Parameter(torch.zeros(heads, d, d))
        self.bias = nn.Parameter(torch.zeros(heads, d))

    @property
    def heads(self) -> int:
        return self.weight.shape[0]

    def states(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., d) last hidden states -> (..., K, d): each head's residual state, all heads in one product."""
        change = torch.einsum("kij,...j->...ki", self.weight, hidden) + self.bias
        return hidden.unsqueeze(-2) + functional.silu(change)

    def logits(self, model, hidden: torch.Tensor) -> torch.Tensor:
        """(..., d) -> (..., K, vocab): the K states stacked and put through the model's output layer once."""
        return output_logits(model, self.states(hidden))

    def top_scores(self, model, hidden: torch.Tensor, width: int):
        """Every head's scores over the vocabulary (vocab x K) for one hidden state (d,), and each head's `width`
        highest (topk over the vocabulary: values and indices, width x K), on the device."""
        scores = output_scores(model, self.states(hidden.to(self.weight.dtype)))
        return scores, scores.topk(width, dim=0)

    @torch.inference_mode()
    def top_choices(self, model, hidden: torch.Tensor, widths: Sequence[int]) -> TopChoices:
        """Head k's `widths[k]` most likely tokens, best first, for one hidden state (d,)."""
        scores, top = self.top_scores(model, hidden, max(widths))
        tokens = [row[:width] for row, width in zip(top.indices.T.tolist(), widths, strict=False)]
        return TopChoices(tokens=tokens, scores=scores, top=top.values)

    def header(self) -> dict:
        return {**asdict(self.target), "heads": self.heads, "accuracy": self.accuracy, "format": FORMAT}


def heads_for(model, name: str, heads: int = DEFAULT_HEADS) -> MedusaHeads:
    """Fresh (untrained) heads for `model`, on its device and in its dtype."""
    fresh = MedusaHeads(target=target_of(model, name), heads=heads)
    weight = model.get_output_embeddings().weight
    return fresh.to(device=weight.device, dtype=weight.dtype)


def save_heads(heads: MedusaHeads, path: str | Path, dtype: torch.dtype = torch.float16) -> None:
    """Write the heads' weights as safetensors (in `dtype`: half the bytes, far below what a guess can tell
    apart), their header (model, sizes, K, accuracy) as its metadata."""
    tensors = {name: getattr(heads, name).detach().to(dtype).contiguous().cpu() for name in ("weight", "bias")}
    save_file(tensors, str(path), metadata={HEADER_KEY: json.dumps(heads.header())})


def read_checked(path: str | Path, key: str, what: str, model, name: str) -> tuple[dict, dict[str, torch.Tensor]]:
    """The header (under metadata `key`) and the tensors of a safetensors file of trained `what` (for instance
    "Medusa heads") for `model` (called `name`). MedusaError, one line, for a file that holds none or holds
    them for another model."""
    try:
        with safe_open(str(path), framework="pt") as opened:
            header = json.loads((opened.metadata() or {})[key])
            tensors = {k: opened.get_tensor(k) for k in opened.keys()}  # noqa: SIM118 (not a dict)
        theirs = HeadsTarget(**{k: header[k] for k in ("model", "hidden_size", "vocab_size")})
    except (OSError, KeyError, TypeError, ValueError, SafetensorError) as error:
        raise MedusaError(f"{path} holds no {what} ({type(error).__name__}: {error})") from None
    ours = target_of(model, name)
    if theirs != ours:
        raise MedusaError(
            f"{path}: {what} trained for {theirs.describe()}, not for {ours.describe()}; "
            f"{what} work only on the model they were trained for"
        )
    return header, tensors


def load_heads(path: str | Path, model, name: str, label: str | None = None) -> MedusaHeads:
    """Heads from `path` for `model` (called `name`), labelled `label` (default: the file's name). Raises
    MedusaError, one line, for heads trained for another model or a file that holds no heads."""
    header, tensors = read_checked(path, HEADER_KEY, "Medusa heads", model, name)
    try:
        heads = heads_for(model, name, header["heads"])
        heads.accuracy, heads.label = header["accuracy"], label or Path(path).name
        with torch.no_grad():
            heads.weight.copy_(tensors["weight"])
            heads.bias.copy_(tensors["bias"])
    except (KeyError, RuntimeError, SettingsError) as error:
        raise MedusaError(f"{path} holds no usable Medusa heads ({type(error).__name__}: {error})") from None
    return heads


# ----------------------------------------------------------------------------------------------
# The sparse tree


def prior_accuracy(heads: int, width: int) -> list[list[float]]:
    """Until heads are measured: a guess shaped like Medusa's published curves, not a measurement.
    Head 1's first choice right half the time, each later head 0.7 times as often, the i-th choice
    1 / i^1.5 as often as the first."""
    return [[0.5 * 0.7**k / (i + 1) ** 1.5 for i in range(width)] for k in range(heads)]


def likeliest_paths(accuracy: Sequence[Sequence[float]], size: int) -> list[tuple[float, TreePath]]:
    """The `size` paths most likely to be accepted whole, likeliest first, each with its chance: head k's
    i-th choice taken as right with probability accuracy[k][i], independently. A path's chance is the
    product along it, so a child never beats its parent and the best-first search stays closed under
    prefixes."""
    frontier = [(-accuracy[0][i], (i,)) for i in range(len(accuracy[0]))]
    heapq.heapify(frontier)
    chosen: list[tuple[float, TreePath]] = []
    while frontier and len(chosen) < size:
        minus_chance, path = heapq.heappop(frontier)
        chosen.append((-minus_chance, path))
        if len(path) < len(accuracy):
            for i, right in enumerate(accuracy[len(path)]):
                heapq.heappush(frontier, (minus_chance * right, (*path, i)))
    return chosen


def sparse_tree(accuracy: Sequence[Sequence[float]], size: int) -> tuple[TreePath, ...]:
    """Medusa's sparse tree: the `size` likeliest paths (likeliest_paths), parents before children (shorter
    paths first), so rows can be laid out in this order."""
    return tuple(sorted((path for _, path in likeliest_paths(accuracy, size)), key=lambda p: (len(p), p)))


def fitted_tree_size(
    accuracy: Sequence[Sequence[float]], step_cost: Callable[[int], float], largest: int = MAX_TREE_SIZE
) -> int:
    """The tree size that commits the most tokens per unit of time: a step over a tree of s nodes commits
    on average 1 + (the sum of its nodes' chances) tokens (c, and each node whose whole path is right),
    and costs step_cost(1 + s), the measured cost of a step that feeds c and s nodes, in any unit."""
    paths = likeliest_paths(accuracy, largest)
    expected = list(itertools.accumulate((chance for chance, _ in paths), initial=1.0))
    return max(range(1, len(paths) + 1), key=lambda s: expected[s] / step_cost(1 + s))


def tree_widths(tree: Sequence[TreePath]) -> list[int]:
    """How many choices of each head the tree uses (a head the tree never reaches: 1)."""
    depth = max((len(p) for p in tree), default=1)
    return [max((p[k] + 1 for p in tree if len(p) > k), default=1) for k in range(depth)]


def tree_branch(tree: Sequence[TreePath], top: list[list[int]]) -> ProposedBranch:
    """The tree's nodes as rows after c, with every root-to-leaf path as a candidate.

    Node (i1, .., id) holds head d's id-th token and extends node (i1, .., id-1), or c at depth 1;
    its place is (i_d, d - 1): its rank among its head's choices, and the head. Every node sees only
    its ancestors, like any guess, and verification takes the longest path that matches.
    """
    row = {path: r for r, path in enumerate(tree)}
    tokens = tuple(top[len(p) - 1][p[-1]] for p in tree)
    parents = tuple(row[p[:-1]] if len(p) > 1 else CURRENT for p in tree)
    places = tuple((p[-1], len(p) - 1) for p in tree)
    inner = {p[:-1] for p in tree}
    leaves = [p for p in tree if p not in inner]
    candidates = tuple(
        Candidate(
            tuple(tokens[row[leaf[:j]]] for j in range(1, len(leaf) + 1)),
            tuple(row[leaf[:j]] for j in range(1, len(leaf) + 1)),
            GuessSource.HEADS,
            GuessReason.TREE_PATH,
            lane,
        )
        for lane, leaf in enumerate(leaves)
    )
    return ProposedBranch(Branch.HEADS, tokens, parents, places, candidates)


# ----------------------------------------------------------------------------------------------
# The proposer


@dataclass
class Medusa:
    """What a Medusa run is given, as a draft is given: the heads and the sparse tree they fill each step."""

    heads: MedusaHeads
    tree: tuple[TreePath, ...]

    @property
    def reach(self) -> int:
        """How far past c the tree's deepest node sits."""
        return max((len(p) for p in self.tree), default=0)

    @property
    def widths(self) -> list[int]:
        """How many choices of each head the tree uses."""
        return tree_widths(self.tree)

    def settings(self) -> MedusaSettings:
        return MedusaSettings(
            heads=self.heads.label,
            model=self.heads.target.model,
            count=self.heads.heads,
            tree_size=len(self.tree),
            tree_depth=self.reach,
        )


def make_medusa(heads: MedusaHeads, size: int = DEFAULT_TREE_SIZE) -> Medusa:
    """`heads` with a sparse tree of `size` nodes, from their measured accuracy (or the prior)."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise SettingsError(f"the Medusa tree size must be an integer >= 1, got {size!r}")
    accuracy = heads.accuracy or prior_accuracy(heads.heads, size)
    return Medusa(heads, sparse_tree(accuracy, size))


def fitted_medusa(heads: MedusaHeads, step_cost: Callable[[int], float]) -> Medusa:
    """`heads` with the sparse tree whose size pays best on this hardware (fitted_tree_size), `step_cost(n)`
    being the measured cost of a step that feeds n tokens."""
    accuracy = heads.accuracy or prior_accuracy(heads.heads, MAX_TREE_SIZE)
    return make_medusa(heads, fitted_tree_size(accuracy, step_cost))


class MedusaProposer:
    """Medusa's proposer: the heads read the hidden state behind c (the step's context holds it) and
    their top choices fill the sparse tree. It keeps no state between steps."""

    def __init__(self, medusa: Medusa, model) -> None:
        self.medusa, self.model = medusa, model
        self.widths = medusa.widths
        self.paths = [list(path) for path in medusa.tree]  # the tree as each step's record keeps it

    def propose(self, context: StepContext) -> Proposal:
        start = time.perf_counter()
        self.choices = self.medusa.heads.top_choices(self.model, context.hidden, self.widths)
        branch = tree_branch(self.medusa.tree, self.choices.tokens)
        self.seconds = time.perf_counter() - start
        return Proposal(None, [branch])

    def observe(self, outcome: Outcome) -> None:
        """Nothing to learn: the next hidden state comes with the next step's context."""

    def report(self, outcome: Outcome) -> ProposerReport:
        """The heads' guesses with their probabilities, and the tree they filled."""
        return ProposerReport(
            method_report=HeadsRecord(heads=self.choices.guesses(), tree=self.paths, seconds=self.seconds)
        )


# ----------------------------------------------------------------------------------------------
# Its spec


def heads_tree(model, prompt_ids: list[int], request, runtime) -> MakeProposer:
    """Medusa: the heads' sparse tree, read off the hidden state of the row behind the current token."""
    return lambda sequence: MedusaProposer(runtime.heads, model)


SPEC = MethodSpec(
    entry=METHODS[Method.MEDUSA],
    guessing=Guessing(
        heads_tree,
        lambda request, runtime: runtime.heads.reach,
        lambda request, runtime: runtime.heads.settings(),
        lambda request, runtime: 1 + len(runtime.heads.tree),
        keep_hidden=True,
    ),
    resident=medusa_on_device.RESIDENT,
    swept=Swept(
        lambda g: [{"tree_size": n} for n in g.tree_sizes],
        lambda r, s: replace(r, method=Method.MEDUSA),
        lambda rt, s: replace(rt, heads=make_medusa(rt.heads.heads, s["tree_size"])),
    ),
)
