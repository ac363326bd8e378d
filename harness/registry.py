"""Plug points: agent adapters and audio backends, found by entry point name or `module:attr`.

Name lookups read entry-point metadata only; nothing optional is imported until it is used.
"""

from __future__ import annotations

import importlib
import re
from importlib.metadata import entry_points
from typing import Any

from scenarios.errors import ConfigError

AGENT_GROUP = "voice_audit.agents"
TTS_GROUP = "voice_audit.tts"
ASR_GROUP = "voice_audit.asr"

_MODULE_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def is_module_ref(name: str) -> bool:
    return bool(_MODULE_REF.match(name))


def _group_names(group: str) -> list[str]:
    return sorted({ep.name for ep in entry_points(group=group)})


def agent_adapter_names() -> list[str]:
    return _group_names(AGENT_GROUP)


def tts_backend_names() -> list[str]:
    try:
        from harness.audio import tts_names  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return _group_names(TTS_GROUP)
    return sorted(set(tts_names()) | set(_group_names(TTS_GROUP)))


def asr_backend_names() -> list[str]:
    try:
        from harness.audio import asr_names  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return _group_names(ASR_GROUP)
    return sorted(set(asr_names()) | set(_group_names(ASR_GROUP)))


def load_object(ref: str, group: str) -> Any:
    """Load `module:attr`, or the entry point called `ref` in `group`."""
    if is_module_ref(ref):
        module_name, attr = ref.split(":", 1)
        try:
            obj: Any = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(f"cannot import '{module_name}' for '{ref}': {exc}") from None
        for part in attr.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise ConfigError(f"'{module_name}' has no attribute '{attr}' (from '{ref}')") from None
        return obj
    for ep in entry_points(group=group):
        if ep.name == ref:
            return ep.load()
    raise ConfigError(f"no '{ref}' registered in entry point group {group}")
