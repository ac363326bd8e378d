"""One registry for agents, TTS and ASR: built-ins are entry points, one lookup order, and a
missing optional dependency names the exact extra to install."""

from __future__ import annotations

import json
import sys
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import pytest

import voice_audit.harness.registry as registry
from voice_audit.harness.registry import AGENT_GROUP, ASR_GROUP, TTS_GROUP, create, load_object, names
from voice_audit.scenarios.errors import ConfigError, MissingBackendError


def test_builtins_are_entry_points_of_their_groups() -> None:
    tts = {ep.name: ep for ep in entry_points(group=TTS_GROUP)}
    asr = {ep.name: ep for ep in entry_points(group=ASR_GROUP)}
    assert {"espeak", "piper", "coqui", "openai", "recorded"} <= set(tts)
    assert {"faster-whisper", "whisper", "pocketsphinx", "openai"} <= set(asr)
    assert (
        tts["piper"].extras == ["piper"] and asr["whisper"].extras == ["whisper"] and not tts["espeak"].extras
    )
    assert names(TTS_GROUP) == sorted(tts)


def test_a_name_and_its_module_reference_load_the_same_object() -> None:
    assert load_object("scripted", AGENT_GROUP) is load_object(
        "voice_audit.agents.testing:scripted", AGENT_GROUP
    )
    espeak = load_object("espeak", TTS_GROUP)
    assert espeak is load_object("voice_audit.harness.audio.espeak:EspeakBackend", TTS_GROUP)


def test_a_reference_from_an_older_run_folder_loads_the_installed_module() -> None:
    """Run folders written before the packages installed under `voice_audit` name their adapters by
    the bare package (`agents.testing`); resuming one loads our module, and never a second
    copy of it under the bare name (the repository root is on sys.path here)."""
    run = json.loads((Path(__file__).parents[2] / "fixtures/runs/golden/run.json").read_text())
    (ref,) = {a["adapter"] for a in run["campaign"]["agents"]}
    assert ref.startswith("agents.") and ref.endswith(":scripted")
    assert load_object(ref, AGENT_GROUP) is load_object("scripted", AGENT_GROUP)
    assert not [m for m in sys.modules if m == "agents" or m.startswith("agents.")]


def test_unknown_names_list_what_is_registered() -> None:
    with pytest.raises(ConfigError, match="unknown agent adapter 'nope'") as info:
        load_object("nope", AGENT_GROUP)
    assert "scripted" in str(info.value)
    with pytest.raises(ConfigError, match="unknown ASR backend 'nope'"):
        load_object("nope", ASR_GROUP)


def _with_entry_point(monkeypatch: pytest.MonkeyPatch, ep: EntryPoint) -> None:
    real = registry.entry_points

    def fake(*, group: str) -> list[EntryPoint]:
        return [*real(group=group), *([ep] if group == ep.group else [])]

    monkeypatch.setattr(registry, "entry_points", fake)


def test_a_missing_dependency_of_an_entry_point_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint(name="fancy", value="voice_audit_absent_vendor.tts:Backend [piper]", group=TTS_GROUP)
    _with_entry_point(monkeypatch, ep)
    with pytest.raises(MissingBackendError) as info:
        create("fancy", TTS_GROUP)
    assert "pip install 'voice-audit[piper]'" in str(info.value) and info.value.extra == "piper"
    assert "voice_audit_absent_vendor" in str(info.value)


def test_without_an_extra_a_broken_entry_point_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint(name="broken", value="voice_audit_absent_vendor.asr:Backend", group=ASR_GROUP)
    _with_entry_point(monkeypatch, ep)
    with pytest.raises(ConfigError, match=r"ASR backend 'broken'.*cannot be imported"):
        create("broken", ASR_GROUP)
