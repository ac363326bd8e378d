"""The on-disk system-state files' key, format, location and bound, without a model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from voice_audit.harness.llm import states

TOKENS = (1, 2, 3, 4)
CONFIG = {"n_ctx": 4096, "n_batch": 512, "type_k": 1, "llama_cpp": "0.3.36"}


def test_the_key_changes_with_the_model_the_settings_and_every_token() -> None:
    key = states.state_key("a" * 64, CONFIG, TOKENS)
    assert key == states.state_key("a" * 64, dict(CONFIG), list(TOKENS))
    others = {
        states.state_key("b" * 64, CONFIG, TOKENS),
        states.state_key("a" * 64, {**CONFIG, "n_ctx": 2048}, TOKENS),
        states.state_key("a" * 64, {**CONFIG, "llama_cpp": "0.3.37"}, TOKENS),
        states.state_key("a" * 64, CONFIG, (1, 2, 3, 5)),
        states.state_key("a" * 64, CONFIG, (1, 2, 3)),
    }
    assert key not in others and len(others) == 5


def test_a_file_decodes_only_whole_and_for_its_own_key_and_tokens() -> None:
    state = bytes(range(256)) * 40
    blob = b"".join(states.encode("k", TOKENS, state))
    assert states.decode(blob, "k", TOKENS) == state
    assert states.decode(blob, "other", TOKENS) is None
    assert states.decode(blob, "k", (1, 2, 3)) is None
    assert states.decode(blob[:-1], "k", TOKENS) is None
    assert states.decode(blob[:20], "k", TOKENS) is None
    assert states.decode(blob[:-1] + bytes([blob[-1] ^ 1]), "k", TOKENS) is None
    assert states.decode(b"not a state file" * 10, "k", TOKENS) is None
    assert states.decode(b"", "k", TOKENS) is None


def test_the_folder_is_under_the_models_cache_unless_the_variable_names_one_or_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(states.ENV, raising=False)
    assert states.states_dir() == tmp_path / "xdg" / "voice-audit" / "models" / "states"
    monkeypatch.setenv(states.ENV, str(tmp_path / "mine"))
    assert states.states_dir() == tmp_path / "mine"
    for off in ("off", "OFF", "0", "none"):
        monkeypatch.setenv(states.ENV, off)
        assert states.states_dir() is None


def test_store_and_load_round_trip_and_a_bad_file_is_not_loaded(tmp_path: Path) -> None:
    states.store(tmp_path / "s", "k", TOKENS, b"state")
    assert states.load(tmp_path / "s", "k", TOKENS) == b"state"
    assert states.load(tmp_path / "s", "k", (9,)) is None
    assert states.load(tmp_path / "s", "missing", TOKENS) is None
    (tmp_path / "s" / f"k{states.SUFFIX}").write_bytes(b"junk")
    assert states.load(tmp_path / "s", "k", TOKENS) is None
    assert [p.name for p in (tmp_path / "s").iterdir()] == [f"k{states.SUFFIX}"], "no temporary left"


def test_the_folder_keeps_the_most_recently_used_files_within_its_bounds(tmp_path: Path) -> None:
    for i in range(5):
        path = tmp_path / f"{i}{states.SUFFIX}"
        path.write_bytes(b"x" * 100)
        os.utime(path, ns=(i * 10**9, i * 10**9))
    states.prune(tmp_path, max_files=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{i}{states.SUFFIX}" for i in (2, 3, 4)]
    states.prune(tmp_path, max_bytes=250)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{i}{states.SUFFIX}" for i in (3, 4)]
    (tmp_path / "notes.txt").write_text("not a state")
    states.prune(tmp_path, max_files=0)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_load_makes_a_file_recently_used(tmp_path: Path) -> None:
    for key in ("old", "new"):
        states.store(tmp_path, key, TOKENS, b"state")
    os.utime(tmp_path / f"old{states.SUFFIX}", ns=(10**9, 10**9))
    os.utime(tmp_path / f"new{states.SUFFIX}", ns=(2 * 10**9, 2 * 10**9))
    assert states.load(tmp_path, "old", TOKENS) == b"state"
    states.prune(tmp_path, max_files=1)
    assert [p.name for p in tmp_path.iterdir()] == [f"old{states.SUFFIX}"]
