"""One registry for agents, TTS and ASR: built-ins are entry points, one lookup order, and a
missing optional dependency names the exact extra to install."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import pytest

import voice_audit.harness.registry as registry
from tests.helpers.campaign_input import GOOD, write
from voice_audit.harness.planning import agent_problems, load_campaign
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
        "voice_audit.agents.fakes.scripted:scripted", AGENT_GROUP
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


@pytest.mark.parametrize("bare", [False, True])
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("voice_audit.agents.testing:scripted", "voice_audit.agents.fakes.scripted:scripted"),
        ("voice_audit.agents.testing:ScriptedAgent", "voice_audit.agents.fakes.scripted:ScriptedAgent"),
        ("voice_audit.agents.testing:Planted.parse", "voice_audit.agents.fakes.scripted:Planted.parse"),
        ("voice_audit.agents.serve.demo:tone_agent", "voice_audit.agents.fakes.tone_agent:tone_agent"),
        ("voice_audit.agents.serve:tone_agent", "voice_audit.agents.fakes.tone_agent:tone_agent"),
        ("voice_audit.agents.serve:ToneAgent", "voice_audit.agents.fakes.tone_agent:ToneAgent"),
        ("voice_audit.agents.reference.chaos:chaos", "voice_audit.agents.fakes.chaos:chaos"),
        ("voice_audit.agents.reference.chaos:ChaosAgent", "voice_audit.agents.fakes.chaos:ChaosAgent"),
    ],
)
def test_a_reference_to_a_moved_module_loads_its_new_home(old: str, new: str, bare: bool) -> None:
    """A run folder or campaign written before the fakes moved to `voice_audit.agents.fakes` names them by
    their old modules (which no longer exist), and one older still by the bare package (`agents.`)."""
    ref = old.removeprefix("voice_audit.") if bare else old
    assert load_object(ref, AGENT_GROUP) == load_object(new, AGENT_GROUP)
    assert not [m for m in sys.modules if m in registry.MOVED_MODULES or m.split(".")[0] == "agents"]


def test_every_moved_module_has_a_home_and_no_longer_exists() -> None:
    for old, new in registry.MOVED_MODULES.items():
        assert importlib.util.find_spec(old) is None, old
        assert importlib.util.find_spec(new) is not None, new
    for (package, name), home in registry.MOVED_NAMES.items():
        assert not hasattr(importlib.import_module(package), name)
        assert hasattr(importlib.import_module(home), name)


def test_an_entry_point_left_by_an_install_made_before_a_move_still_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An editable install keeps its entry-point metadata until reinstalled: `scripted` there still
    says `voice_audit.agents.testing:scripted`."""
    stale = EntryPoint(name="stale", value="voice_audit.agents.testing:scripted", group=AGENT_GROUP)
    _with_entry_point(monkeypatch, stale)
    assert load_object("stale", AGENT_GROUP) is load_object("scripted", AGENT_GROUP)


def test_a_campaign_from_before_the_move_still_checks_out(tmp_path: Path) -> None:
    """Planning imports every agent's adapter through the registry, so a campaign stored in an old run
    folder, naming the fakes by their old modules, plans and runs as it did."""
    old = {
        "s": "voice_audit.agents.testing:scripted",
        "t": "voice_audit.agents.serve.demo:tone_agent",
        "c": "voice_audit.agents.reference.chaos:chaos",
    }
    agents = "".join(f'  - {{name: {n}, adapter: "{ref}"}}\n' for n, ref in old.items())
    # GOOD's accents (l2_spanish, gb_rp) are beyond Flite, the voice of a campaign that names no tts.
    cfile = write(
        tmp_path,
        GOOD.replace('  - {name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}\n', agents)
        + "tts: {name: espeak}\n",
    )
    loaded = load_campaign(cfile)
    assert [a.adapter for a in loaded.campaign.agents] == list(old.values())
    assert agent_problems(loaded) == []
    made = [load_object(a.adapter, AGENT_GROUP)(a) for a in loaded.campaign.agents]
    assert [type(m).__name__ for m in made] == ["ScriptedAgent", "ToneAgent", "ChaosAgent"]


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
