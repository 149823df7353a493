"""One decoding request: the method, its settings, sampling, and the budget of new tokens.

A frozen record that travels from a visitor's HTTP request through the lab to the engine's entry,
so that no function passes a method's settings as a run of positional arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import DEFAULT_DRAFT_TOKENS, PROMPT_LOOKUP, SUFFIX, LookaheadConfig, LookupConfig, SuffixConfig
from .records import Method
from .sampling import GREEDY, SamplingConfig


@dataclass(frozen=True, kw_only=True)
class DecodeRequest:
    """What to decode with: `method` and every method's settings (each method reads its own), the sampling
    settings, at most `max_new_tokens` new tokens, and whether lookahead takes this hardware's auto settings."""

    max_new_tokens: int
    method: Method = Method.LOOKAHEAD
    lookahead: LookaheadConfig = field(default_factory=LookaheadConfig)
    sampling: SamplingConfig = GREEDY
    lookup: LookupConfig = PROMPT_LOOKUP
    suffix: SuffixConfig = SUFFIX
    draft_tokens: int = DEFAULT_DRAFT_TOKENS
    auto: bool = False  # the lab resolves it to this hardware's AutoSettings, which the engine is then given

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", Method(self.method))  # "lookahead" as well as Method.LOOKAHEAD
