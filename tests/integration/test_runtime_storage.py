"""Disk full or read-only while a campaign runs: one clear error, nothing corrupted, resumable."""

from __future__ import annotations

import asyncio
import errno
import json
import os
from pathlib import Path

import pytest

from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunFolderError, RunReader, writer
from voice_audit.harness.runtime import CampaignRunner

CAMPAIGN = """\
name: disk
seed: 4
scenarios: [refund_duplicate_charge]
agents: [{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted", options: {audio_ms: 100}}]
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: gb_southern}
voices: 3
replicates: 2
concurrency: 2
tts: {name: espeak}
"""


@pytest.mark.parametrize(("code", "words"), [(errno.ENOSPC, "the disk is full"), (errno.EROFS, "read-only")])
def test_write_failure_stops_cleanly_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, words: str
) -> None:
    cfile = tmp_path / "c.yaml"
    cfile.write_text(CAMPAIGN)
    loaded = load_campaign(cfile)
    run_dir = tmp_path / "run"
    real_write = os.write
    calls = {"n": 0}

    def failing_write(fd: int, data: bytes) -> int:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if not target.endswith("episodes.jsonl"):
            return real_write(fd, data)
        calls["n"] += 1
        if calls["n"] > 3:
            half = real_write(fd, data[: len(data) // 2])  # a torn record, as a full disk leaves it
            del half
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    monkeypatch.setattr(writer.os, "write", failing_write)
    with pytest.raises(RunFolderError) as err:
        asyncio.run(CampaignRunner(loaded, run_dir, cache_dir=tmp_path / "cache", progress=False).run())
    message = str(err.value)
    assert words in message and f"voice-audit run --resume {run_dir}" in message and "\n" not in message
    monkeypatch.setattr(writer.os, "write", real_write)

    reader = RunReader(run_dir)
    whole = [r.header.episode_id for r in reader.records()]
    assert len(whole) == 3, "the records written before the failure stay valid"
    summary = asyncio.run(
        CampaignRunner(loaded, run_dir, cache_dir=tmp_path / "cache", progress=False).run(resume=True)
    )
    assert summary.resumed == 3
    lines = (run_dir / "episodes.jsonl").read_bytes().splitlines()
    ids = [json.loads(line)["header"]["episode_id"] for line in lines]
    assert sorted(ids) == sorted(e.episode_id for e in loaded.plan.episodes)
