"""Which models a server lets its visitors load: the operator decides, a visitor picks from that.

Closed (the default of a server that listens beyond this machine): the picker offers the embedded
default, Gemma 3 270M once installed, and the hub ids, folders or .gguf files the operator lists in
LOOKAHEAD_MODELS (comma-separated); any other name gets one answer, the same whether or not such a
folder exists. Open (LOOKAHEAD_OPEN_MODELS=1, or a server bound to 127.0.0.1 only): any hub id,
folder or .gguf file, up to LOOKAHEAD_MAX_PARAMETERS parameters read from its config before a
single weight is downloaded or held. docs/deploy.md says how to serve the lab to strangers.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from lookahead_core.models import DEFAULT_MODEL, GEMMA, ModelLoadError, check_hub_id, installed_models

LOG = logging.getLogger("lookahead_lab")
MAX_MODEL_NAME = 200  # characters of a model's name, hub id or folder path
# A visitor's free-form model may hold at most this many parameters: 8 GB in float32, what one
# 2-core, 24 GB machine can hold beside the default without swapping.
MAX_PARAMETERS = 2_000_000_000
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class AccessError(ValueError):
    """A model name this server does not load for its visitors; the message is the same for every refused name."""


@dataclass(frozen=True)
class ModelAccess:
    """What a server lets its visitors load: the operator's list, and whether other names are open."""

    listed: tuple[str, ...] = ()
    open: bool = False
    max_parameters: int = MAX_PARAMETERS

    def offered(self) -> list[str]:
        """The models the picker lists: what this machine has without a network, then the operator's."""
        return list(dict.fromkeys([*installed_models(), *self.listed]))

    def check(self, name: str) -> str:
        """`name` if a visitor may load it here; AccessError (the same words for every refused name) if not."""
        if name in self.offered():
            return name
        if not self.open:
            raise AccessError(
                f"This server offers {', '.join(self.offered())}; its operator has not opened it to other models "
                "(docs/deploy.md says how)."
            )
        parameters = parameter_count(name)
        if parameters is not None and parameters > self.max_parameters:
            raise AccessError(
                f"That model has {parameters / 1e6:,.0f} million parameters; this server loads at most "
                f"{self.max_parameters / 1e6:,.0f} million for a visitor."
            )
        return name


def access_from_environment(server_name: str, zero_gpu: bool) -> ModelAccess:
    """The operator's settings: LOOKAHEAD_MODELS, LOOKAHEAD_OPEN_MODELS (else open only on loopback) and
    LOOKAHEAD_MAX_PARAMETERS. A ZeroGPU Space holds the default on its GPU: nothing else, whatever is set."""
    if zero_gpu:
        return ModelAccess(listed=(), open=False)
    listed = tuple(name.strip() for name in os.environ.get("LOOKAHEAD_MODELS", "").split(",") if name.strip())
    setting = os.environ.get("LOOKAHEAD_OPEN_MODELS")
    opened = setting == "1" if setting is not None else server_name in LOOPBACK
    limit = int(os.environ.get("LOOKAHEAD_MAX_PARAMETERS", MAX_PARAMETERS))
    return ModelAccess(listed=listed, open=opened, max_parameters=limit)


def parameter_count(name: str) -> int | None:
    """The parameters of the model `name` counted from its config alone, on the meta device (no weight is read
    or downloaded); None when no config can be read (loading it then fails with the engine's one message)."""
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    if name in (DEFAULT_MODEL, GEMMA):
        return None
    if not Path(name).exists():
        try:
            check_hub_id(name)  # neither cached nor a reachable hub: no config to read, and no minute of retries
        except ModelLoadError:
            return None
    gguf = name.endswith(".gguf")
    source, extra = (str(Path(name).parent), {"gguf_file": Path(name).name}) if gguf else (name, {})
    try:
        config = AutoConfig.from_pretrained(source, **extra)
        with init_empty_weights():
            model = AutoModelForCausalLM.from_config(config)
    except Exception as error:  # noqa: BLE001 - any unreadable config: the load that follows refuses it
        LOG.info("no config read for a visitor's model: %s", type(error).__name__)
        return None
    return sum(p.numel() for p in model.parameters())
