"""The one registry of plug points: agent adapters, TTS and ASR backends.

Each kind is an entry-point group; the built-ins are declared there too (pyproject.toml), so a
third party's backend is found exactly like ours. A name is looked up as an entry point of its
group first, then as a `package.module:attr` reference. Name lookups read entry-point metadata
only: nothing optional is imported until it is used. An entry point may name the voice-audit
extra that provides its dependencies (`module:attr [extra]`); a dependency that is missing when it
loads becomes a MissingBackendError carrying the exact pip command.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from voice_audit.scenarios.errors import ConfigError, MissingBackendError

AGENT_GROUP = "voice_audit.agents"
TTS_GROUP = "voice_audit.tts"
ASR_GROUP = "voice_audit.asr"

KINDS: dict[str, str] = {AGENT_GROUP: "agent adapter", TTS_GROUP: "TTS backend", ASR_GROUP: "ASR backend"}

_MODULE_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def is_module_ref(name: str) -> bool:
    return bool(_MODULE_REF.match(name))


def _entry_points(group: str) -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=group)}


def names(group: str) -> list[str]:
    """Every name registered in `group`, from metadata alone."""
    return sorted(_entry_points(group))


def agent_adapter_names() -> list[str]:
    return names(AGENT_GROUP)


def tts_backend_names() -> list[str]:
    return names(TTS_GROUP)


def asr_backend_names() -> list[str]:
    return names(ASR_GROUP)


def _found(module_name: str) -> bool:
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        return False


def require(backend: str, modules: tuple[str, ...], extra: str) -> None:
    """Raise MissingBackendError unless every module can be imported (checked without importing)."""
    for mod in modules:
        if not _found(mod):
            raise MissingBackendError(backend, extra, f"Python module '{mod}' not found")


# The packages installed under `voice_audit`; before they were, they installed at the top level, so
# a run folder written then names its adapters and backends `agents.testing:scripted`.
_OWN_PACKAGES = ("harness", "agents", "personas", "scenarios", "analysis")

# Modules that moved, by their old installed name: a run folder (or a campaign) written before names
# its adapters by the old module (`voice_audit.agents.testing:scripted`); resuming or re-running it
# loads the same factory from its new home. Never remove an entry: old run folders live on.
MOVED_MODULES: dict[str, str] = {
    "voice_audit.agents.testing": "voice_audit.agents.fakes.scripted",
    "voice_audit.agents.serve.demo": "voice_audit.agents.fakes.tone_agent",
    "voice_audit.agents.reference.chaos": "voice_audit.agents.fakes.chaos",
}
# Names a package's __init__ once re-exported from a module that moved.
MOVED_NAMES: dict[tuple[str, str], str] = {
    ("voice_audit.agents.serve", "ToneAgent"): "voice_audit.agents.fakes.tone_agent",
    ("voice_audit.agents.serve", "tone_agent"): "voice_audit.agents.fakes.tone_agent",
}


def _missing_dependency(exc: ModuleNotFoundError) -> bool:
    """A third-party module is missing (not one of ours, which would be a broken install or a typo)."""
    top = (exc.name or "").split(".")[0]
    return bool(top) and top != "voice_audit"


def _current_module(module_name: str, attr: str = "") -> str:
    """The module an older `module:attr` reference means. A bare package of ours (`agents.testing`) is
    `voice_audit.agents.testing` when that exists or once existed (another installed package may own the
    bare `agents`, and loading our files under a second name would make second copies of their
    classes); a module that moved (`MOVED_MODULES`, `MOVED_NAMES`) is its new home."""
    top, _, rest = module_name.partition(".")
    if top in _OWN_PACKAGES and rest:
        prefixed = f"voice_audit.{module_name}"
        if prefixed in MOVED_MODULES or _found(prefixed):
            module_name = prefixed
    first = attr.split(".")[0]
    return MOVED_NAMES.get((module_name, first)) or MOVED_MODULES.get(module_name, module_name)


def extra_of(ep: EntryPoint) -> str | None:
    return ep.extras[0] if ep.extras else None


def _import_ref(ref: str, kind: str) -> Any:
    module_name, attr = ref.split(":", 1)
    module_name = _current_module(module_name, attr)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"cannot import {kind} module '{module_name}' (from '{ref}'): {exc}",
            fix="install the package that provides it, or check the spelling",
        ) from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"'{module_name}' has no attribute '{attr}' (from '{ref}')") from None
    return obj


def load_object(ref: str, group: str) -> Any:
    """The object registered as `ref` in `group`, or the one `ref` names as `module:attr`."""
    kind = KINDS.get(group, group)
    eps = _entry_points(group)
    if ref in eps:
        ep = eps[ref]
        if ep.module in MOVED_MODULES:  # metadata of an install made before the module moved
            return _import_ref(f"{ep.module}:{ep.attr}", kind)
        try:
            return ep.load()
        except ModuleNotFoundError as exc:
            extra = extra_of(ep)
            if extra is None or not _missing_dependency(exc):
                raise ConfigError(f"{kind} '{ref}' ({ep.value}) cannot be imported: {exc}") from None
            raise MissingBackendError(ref, extra, f"Python module '{exc.name}' not found") from None
    if is_module_ref(ref):
        return _import_ref(ref, kind)
    raise ConfigError(
        f"unknown {kind} '{ref}'",
        fix=f"use one of {', '.join(sorted(eps)) or '(none installed)'}, or 'package.module:attr'",
    )


def create(ref: str, group: str, **options: Any) -> Any:
    """Load `ref` from `group` and call it with `options`. The packages a factory lists in its
    `requires` are checked first (without importing them), and any missing one names the entry
    point's extra."""
    factory = load_object(ref, group)
    ep = _entry_points(group).get(ref)
    extra = extra_of(ep) if ep is not None else None
    needs: tuple[str, ...] = getattr(factory, "requires", ())
    if extra is not None and needs:
        require(ref, needs, extra)  # before the call: a missing package beats a missing option
    try:
        return factory(**options)
    except ModuleNotFoundError as exc:
        if extra is None or not _missing_dependency(exc):
            raise
        raise MissingBackendError(ref, extra, f"Python module '{exc.name}' not found") from None
