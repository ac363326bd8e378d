"""A shard as one Ray task on any node: no view of the driver's disk needed.

The driver sends the campaign (loaded and planned on the driver), its run's manifest and call-id
salt, and the shard's episodes. The task writes a scratch run folder of its own on its node, runs
the shard there exactly as a local worker runs it in the real folder, and posts each finished
episode to the driver's desk: its record, its folder's files (events, recording, earlier attempts)
and the usage ledger lines written since the last post. The scratch copy of an episode is removed
once posted, and the whole scratch folder when the task ends. The caches (synthesised speech,
voice calibrations) are the node's own, at the path the driver uses for its cache.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voice_audit.harness.model.episode import EpisodeRecord
from voice_audit.harness.planning import LoadedCampaign
from voice_audit.harness.runlog import (
    call_id_salt,
    episode_dir,
    episodes_dir,
    episodes_jsonl,
    read_episode_files,
    run_json,
    usage_jsonl,
)
from voice_audit.harness.runtime.shard import Message, ShardJob, run_shard_with

__all__ = ["POST_TIMEOUT_S", "RemoteShard", "ray_shard"]

POST_TIMEOUT_S = 120.0
"""Longest a task waits for the desk to take its posts at the end (the driver is gone otherwise)."""
SCRATCH_PREFIX = "voice-audit-shard-"


@dataclass(frozen=True)
class RemoteShard:
    """What a Ray task needs besides the campaign: the shard, where it sits, and the run's identity."""

    job: ShardJob
    shard: int
    placement: int
    manifest_json: bytes
    salt: bytes


class _Posts:
    """Usage lines not yet posted: the ledger file of the scratch folder, read up to its last whole line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def new_lines(self) -> bytes:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return b""
        end = data.rfind(b"\n") + 1
        self.offset += end
        return data[:end]


def ray_shard(remote: RemoteShard, loaded: LoadedCampaign, desk: Any) -> str:
    """Body of one Ray task; returns the node id it ran on. Every message reaches the desk before it returns."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    ray.get(desk.hello.remote(remote.shard, remote.placement, node), timeout=POST_TIMEOUT_S)
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    sent: list[Any] = []

    def post(msg: Message) -> None:
        if msg[0] == "error":  # the driver must know whose: such a shard is not placed again
            msg = (*msg, remote.shard, remote.placement)
        sent.append(desk.put.remote(msg))

    usage = _Posts(usage_jsonl(scratch))

    def on_record(record: EpisodeRecord) -> None:
        eid = record.header.episode_id
        folder = episode_dir(scratch, eid)
        files = read_episode_files(folder)
        shutil.rmtree(folder, ignore_errors=True)
        o = record.outcome
        post(
            (
                "episode",
                eid,
                o.status,
                o.failure_kind,
                o.terminal_outcome,
                record.model_dump_json(),
                files,
                usage.new_lines(),
                remote.shard,
                remote.placement,
            )
        )

    def load() -> tuple[LoadedCampaign, Path]:
        episodes_dir(scratch).mkdir()
        run_json(scratch).write_bytes(remote.manifest_json)
        call_id_salt(scratch).write_bytes(remote.salt)
        episodes_jsonl(scratch).touch()
        return loaded, scratch

    job = dataclasses.replace(
        remote.job,
        run_dir=str(scratch),
        records_to_driver=True,
    )
    try:
        run_shard_with(job, load, post, on_record)
    except Exception:  # already reported as an ("error", ...) message
        pass
    finally:
        rest = usage.new_lines()
        if rest:
            post(("usage", rest))
        shutil.rmtree(scratch, ignore_errors=True)
        ray.get(sent, timeout=POST_TIMEOUT_S)
    return str(node)
