"""An episode received as bytes is written whole into the run folder, and nothing outside its folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.runfolder import copy_golden
from voice_audit.harness.runlog import (
    RunFolderError,
    RunWriter,
    append_usage_lines,
    episode_dir,
    read_episode_files,
    usage_jsonl,
    write_episode_files,
)

FILES = {
    "events.jsonl": b'{"t_ms":0}\n',
    "call.wav": bytes(range(256)) * 10,
    "attempts.jsonl": b"{}\n",
    "attempts/1/events.jsonl": b'{"t_ms":1}\n',
}


def test_files_read_from_one_folder_are_written_byte_for_byte_into_another(tmp_path: Path) -> None:
    src = episode_dir(tmp_path / "scratch", "e1")
    for rel, data in FILES.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    received = read_episode_files(src)
    assert received == FILES
    run = tmp_path / "run"
    target = write_episode_files(run, "e1", received)
    assert target == episode_dir(run, "e1")
    assert read_episode_files(target) == FILES
    assert [p.name for p in (run / "episodes").iterdir()] == ["e1"]  # no staging folder left


def test_an_unrecorded_folder_of_an_earlier_attempt_is_replaced(tmp_path: Path) -> None:
    stale = episode_dir(tmp_path, "e1")
    stale.mkdir(parents=True)
    (stale / "old.txt").write_text("from a lost node")
    write_episode_files(tmp_path, "e1", {"events.jsonl": b"x\n"})
    assert read_episode_files(stale) == {"events.jsonl": b"x\n"}


@pytest.mark.parametrize("rel", ["../escape", "/abs/path", "a/../../b", "", "."])
def test_a_path_leaving_the_episode_folder_is_refused_and_nothing_is_left(tmp_path: Path, rel: str) -> None:
    with pytest.raises(RunFolderError, match="outside its folder"):
        write_episode_files(tmp_path, "e1", {"events.jsonl": b"x\n", rel: b"y"})
    assert not episode_dir(tmp_path, "e1").exists()
    assert list((tmp_path / "episodes").iterdir()) == []
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize("eid", ["../x", "", "..", "a/b"])
def test_a_bad_episode_id_is_refused(tmp_path: Path, eid: str) -> None:
    with pytest.raises(RunFolderError, match="episode id"):
        write_episode_files(tmp_path, eid, {"events.jsonl": b"x\n"})


def test_a_folder_without_a_record_is_removed_by_a_resume(tmp_path: Path) -> None:
    """A driver killed between an episode's files and its record leaves a folder a resume removes."""
    run = copy_golden(tmp_path)
    kept = {p.name for p in (run / "episodes").iterdir()}
    write_episode_files(run, "e1", {"events.jsonl": b"x\n"})
    assert RunWriter(run).prepare_resume() == kept
    assert {p.name for p in (run / "episodes").iterdir()} == kept


def test_usage_lines_are_appended_whole(tmp_path: Path) -> None:
    append_usage_lines(tmp_path, b'{"a":1}\n{"a":2}\n')
    append_usage_lines(tmp_path, b"")
    append_usage_lines(tmp_path, b'{"a":3}\n')
    assert usage_jsonl(tmp_path).read_bytes() == b'{"a":1}\n{"a":2}\n{"a":3}\n'
    with pytest.raises(RunFolderError, match="without its end"):
        append_usage_lines(tmp_path, b'{"a":4}')
    assert usage_jsonl(tmp_path).read_bytes().endswith(b'{"a":3}\n')
