"""The schema's names: its version, the error raised by a record that does not fit, and every enum.

An enum's values are what the JSON holds. They live together, so that a new method, source or reason
is added in one place, beside the schema version it may need.
"""

from __future__ import annotations

import enum

SCHEMA_VERSION = 15
# Older versions whose records read as this one: each only added facts with defaults. Version 4 added
# the sliding-window masks (a version 3 record is one of a model with no sliding layer); version 5 the
# repeated timings of a Run and a race (a version 4 record timed each method once, and says so); version 6
# Medusa's heads; version 7 the bench's EAGLE entrant and its layer (a version 6 bench ran none); version 8 EAGLE
# as a method of its own (a version 7 trace of an EAGLE layer's drafts says speculative, and reads so) and the
# bench's hf-static peer (a version 7 report ran none); version 9 the step mode a trace, a race and a bench ran in
# (a version 8 record ran the eager step, the only one there was), a Run's and a bench result's divergence from
# plain decoding (a version 8 record kept none), and the engine's version in the machine's facts (0: not recorded);
# version 10 a race without speculative decoding's draft (on a GPU EAGLE races in its place; a version 9 race always
# raced the draft), and EAGLE's layer settings when it raced (a version 9 race kept none); version 11 the rows a
# trace's fixed-shape passes ran and the most its steps fed (a version 10 trace kept neither: 0, as the eager step's);
# version 12 suffix decoding: its settings, each step's match and tree (a version 11 record ran none); version 13
# the methods of a bench whose device step failed and kept their state on the host (a version 12 report kept none);
# version 14 each method's settings in one record keyed by method, in a trace, a race and a bench (a version 13
# record gave each its own field: legacy.py gathers them); version 15 a step's method report as one entry,
# `method_report`, read as its method's report type (a version 14 step gave a draft, Medusa's heads and suffix
# decoding's tree each its own field: legacy.py gathers them).
UPGRADABLE = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
# The engine's version, recorded with every trace: raised when a change makes the engine decode faster or slower
# on the same machine, so a shipped recording says which engine it timed (tests/test_records.py fails when a preset
# was recorded by an older engine than the one that would replay a Run of it). 1: the engine's own CPU products
# (products.py) and its own view of the model, 2026-11-26.
ENGINE_VERSION = 1


class SchemaError(ValueError):
    """A record does not fit this schema; the message names the field and what was wrong."""


class OpenNames(type):
    """The type of an open set of names: read as an enum is (`for m in Method`, `Method("lookahead")`,
    `Method.LOOKAHEAD`, `"lookahead" in Method`, `m.value`, `m.name`), over a set that grows when a method is
    registered (`Method.add`), so that a method's spec alone adds it to the records, the bench and the race.

    A name is a `str`: it is its value in JSON, in a dict's keys and in comparisons; each value has one member."""

    def __init__(cls, name, bases, namespace) -> None:
        super().__init__(name, bases, namespace)
        cls._members = {}
        for attribute, value in namespace.items():
            if attribute.isupper() and isinstance(value, str):
                setattr(cls, attribute, cls.add(value, attribute))

    def __iter__(cls):
        return iter(cls.listed())

    def __len__(cls) -> int:
        return len(cls.listed())

    def __contains__(cls, value) -> bool:
        return isinstance(value, str) and any(member == value for member in cls.listed())

    def __getattr__(cls, attribute: str):
        if attribute.isupper():
            for member in cls.listed():
                if member.name == attribute:
                    return member
        raise AttributeError(attribute)


class OpenName(str, metaclass=OpenNames):
    """A member of an open set of names (OpenNames): `value` its text, `name` its constant's name."""

    _name: str

    def __new__(cls, value):
        for member in cls.listed():
            if member == value:
                return member
        raise ValueError(f"{value!r} is not a valid {cls.__name__}")

    @classmethod
    def add(cls, value: str, name: str | None = None):
        """The member of `value`, made and listed last where it is new; `name` its constant's name (by default the
        value in capitals, "-" as "_")."""
        if value not in cls._members:
            cls._members[value] = cls.made(value, name)
        return cls._members[value]

    @classmethod
    def remove(cls, value: str) -> None:
        """Unlist `value`'s member (a method registered for a while: lookahead_core.spec.registered)."""
        cls._members.pop(value, None)

    @classmethod
    def made(cls, value: str, name: str | None = None):
        member = str.__new__(cls, value)
        member._name = name or value.upper().replace("-", "_")
        return member

    @classmethod
    def listed(cls) -> list:
        """Every member, in the order they were added."""
        return list(cls._members.values())

    @property
    def value(self) -> str:
        return str.__str__(self)

    @property
    def name(self) -> str:
        return self._name

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {self.value!r}>"

    def __reduce__(self):
        return type(self), (self.value,)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class Method(OpenName):
    """A decoding method. All but greedy guess tokens and verify them in one pass, each its own way. A method's spec
    (lookahead_core.spec) adds its name with `Method.add`."""

    LOOKAHEAD = "lookahead"  # Jacobi window + n-gram pool
    GREEDY = "greedy"  # plain autoregressive decoding (greedy or sampled)
    PROMPT_LOOKUP = "prompt-lookup"  # the tokens after an earlier occurrence of the last few tokens
    SPECULATIVE = "speculative"  # a draft model's chain of k tokens
    MEDUSA = "medusa"  # Medusa heads' sparse tree of guesses, read off the last accepted row's hidden state
    EAGLE = "eagle"  # a draft chain from an EAGLE layer on the model's own features (schema 8; before, speculative)
    SUFFIX = "suffix"  # a tree of what followed the longest match of the sequence's end, here and in earlier outputs


class BenchMethod(OpenName):
    """A bench entrant: this engine's methods (every Method, greedy first) and, prefixed hf-, transformers' own
    `generate` as a user would otherwise run it: the peers (listed last)."""

    HF_GREEDY = "hf-greedy"  # generate(do_sample=False), or sampled with the same P
    HF_STATIC = "hf-static"  # the same with cache_implementation="static": compiled by transformers on CUDA only
    HF_PROMPT_LOOKUP = "hf-prompt-lookup"  # generate(prompt_lookup_num_tokens=...)
    HF_ASSISTED = "hf-assisted"  # generate(assistant_model=...) with the speculative method's draft
    _engine: dict = {}  # the entrants of the engine's methods, by value, made as Method lists them

    @classmethod
    def listed(cls) -> list:
        methods = [Method.GREEDY, *(method for method in Method if method != Method.GREEDY)]
        return [cls.of_method(method) for method in methods] + list(cls._members.values())

    @classmethod
    def of_method(cls, method: Method) -> BenchMethod:
        """The entrant that runs `method` (made once per method)."""
        if method.value not in cls._engine:
            cls._engine[method.value] = cls.made(method.value, method.name)
        return cls._engine[method.value]

    @property
    def method(self) -> Method | None:
        """This engine's method that the entrant runs (the method of the same name); None for a peer."""
        return Method(self.value) if self.value in Method else None


class StepMode(enum.StrEnum):
    """How the engine ran its forward passes after the prefill (lookahead_core/device/fixed.py); the tokens and the
    step records are the same in every mode, only the time differs."""

    EAGER = "eager"  # the dynamic step: as many rows as fed, the cache cropped (the only mode before schema 9)
    FIXED = "fixed"  # the fixed-shape step (T rows, a static cache, the mask from L), run uncaptured
    CUDA_GRAPH = "cuda-graph"  # the fixed-shape step recorded once per shape as a CUDA graph and replayed
    COMPILED = "compiled"  # the fixed-shape step through torch.compile(fullgraph=True), recorded as a CUDA graph


class StepKind(enum.StrEnum):
    PREFILL = "prefill"  # the prompt in one pass; commits the first new token
    DECODE = "decode"


class TokenSource(enum.StrEnum):
    """How a committed token was produced."""

    GUARANTEED = "guaranteed"  # argmax of the current token's row: what greedy decoding emits
    ACCEPTED = "accepted"  # a candidate's token that verification accepted
    BONUS = "bonus"  # the prediction after the last accepted token (sampled: a draw from that row's P)
    SAMPLED = "sampled"  # sampling: drawn from P, or from what remained of it after every candidate was rejected


class StopReason(enum.StrEnum):
    EOS = "eos"  # an end-of-sequence token was committed
    MAX_NEW_TOKENS = "max_new_tokens"
    DEADLINE = "deadline"  # the request's time ran out first: a partial run (a run's summary only)


class Branch(enum.StrEnum):
    """Which part of a step's input a row belongs to."""

    CURRENT = "current"  # the current token c
    WINDOW = "window"  # the lookahead branch: the 2D Jacobi window
    GUESS = "guess"  # the verification branch: one candidate n-gram (lookahead) or match (prompt lookup)
    DRAFT = "draft"  # a draft model's chain
    HEADS = "heads"  # Medusa's sparse tree of the heads' guesses
    SUFFIX = "suffix"  # suffix decoding's tree of continuations, weighted by how often each followed


class GuessSource(enum.StrEnum):
    """Where a candidate's (or a pool n-gram's) tokens came from."""

    PROMPT = "prompt"  # an n-gram of the prompt
    WINDOW = "window"  # an n-gram harvested from a column of the Jacobi window
    OUTPUT = "output"  # an n-gram of the committed output
    TRAJECTORY = "trajectory"  # a Jacobi trajectory inside the window, verified as it stands
    DRAFT = "draft"  # proposed by a draft model, one token at a time
    HEADS = "heads"  # Medusa's heads: a path of their top choices through the sparse tree
    EARLIER = "earlier"  # suffix decoding: what followed the match in an earlier run's output (its store)


class GuessReason(OpenName):
    """Why a candidate was verified (open: a method's spec may add its own reason with `GuessReason.add`; the
    verification panel then says "picked by its <reason>")."""

    TWO_TOKEN_KEY = "two-token key"  # a pool n-gram whose key and preceding token both match
    ONE_TOKEN_KEY = "one-token key"  # a pool n-gram whose key matches the current token
    JACOBI_TRAJECTORY = "jacobi trajectory"  # the window computed this chain anyway: free to check
    SUFFIX_MATCH = "suffix match"  # prompt lookup: the last tokens occurred earlier; these followed them
    DRAFT_MODEL = "draft model"  # the draft model's own continuation
    TREE_PATH = "tree path"  # Medusa: a root-to-leaf path of the sparse tree, one head's choice per place
    FOLLOWED_MATCH = "followed match"  # suffix decoding: a root-to-leaf path of what followed the longest match


class Verdict(enum.StrEnum):
    """A candidate's outcome in verification."""

    WON = "won"  # the longest match (first on ties): its accepted tokens were committed
    SHORTER = "shorter"  # matched, but fewer tokens than the winner
    TIED_LATER = "tied-later"  # matched as many as the winner, but came later
    NO_MATCH = "no-match"  # its first token differs from the guaranteed next token


class PlanReason(enum.StrEnum):
    """Why a step fed what it fed."""

    PAPER = "paper"  # the paper's plan: the whole window and every guess, every step
    ALL_PROPOSED = "all-proposed"  # a method with no window: every candidate it proposed
    BEST_RATIO = "best-ratio"  # cost-aware: the most expected tokens per unit of measured step time
    PROBE_WINDOW = "probe-window"  # cost-aware: the window sat out too long and is fed to measure it again


class PlannerKind(enum.StrEnum):
    FULL = "full"
    COST_AWARE = "cost-aware"


class Regime(enum.StrEnum):
    """How a wide step's measured cost sorts the hardware (auto settings)."""

    FLAT = "flat"  # a wide step costs about what a 1-token step does: the paper's settings
    MODERATE = "moderate"  # a middle window, planned step by step
    STEEP = "steep"  # a small window, planned step by step
