"""Lookahead Lab's engine: exact lookahead decoding (Fu et al., ICML 2024) on transformers models.

Decoders are step generators yielding JSON-ready records; nothing here formats for display.
"""

from .config import LookaheadConfig, SettingsError
from .decoding import DecodingError, greedy_steps, lookahead_steps
from .models import LoadedModel, ModelLoadError, encode_prompt, load_model
from .trace import decode_steps, load_trace, record_run, record_trace, save_trace, summarize

__all__ = [
    "DecodingError",
    "LoadedModel",
    "LookaheadConfig",
    "ModelLoadError",
    "SettingsError",
    "decode_steps",
    "encode_prompt",
    "greedy_steps",
    "load_model",
    "load_trace",
    "lookahead_steps",
    "record_run",
    "record_trace",
    "save_trace",
    "summarize",
]
