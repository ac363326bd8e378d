"""The server over real HTTP: token, size limits, no path access, resume, and blinding of everything served."""

from __future__ import annotations

import asyncio
import json
import re
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from voice_audit.analysis.rating.server import SECURITY_HEADERS, RatingServer
from voice_audit.analysis.rating.session import RatingSession
from voice_audit.analysis.rating.store import read_labels
from voice_audit.analysis.rating.tasks import build_task, rater_order
from voice_audit.harness.runlog import RunReader

TIMEOUT = aiohttp.ClientTimeout(total=20)


class Live:
    def __init__(self, server: RatingServer, url: str) -> None:
        self.server, self.url, self.token = server, url, server.token
        self.port = int(url.split(":")[2].split("/")[0])


async def start(run_dir: Path, task: str = "perceptibility") -> Live:
    server = RatingServer(RatingSession(run_dir, build_task(run_dir, task)))  # type: ignore[arg-type]
    return Live(server, await server.start("127.0.0.1", 0))


@pytest.fixture
async def live(run_dir: Path) -> AsyncIterator[Live]:
    srv = await start(run_dir)
    yield srv
    await srv.server.stop()


async def raw(port: int, request_line: str, extra: bytes = b"", headers: str = "") -> tuple[int, bytes, str]:
    """Send a request line verbatim, so no client library normalises '..' or percent escapes away."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
    writer.write(
        f"{request_line}\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n{headers}\r\n".encode() + extra
    )
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body, head.decode("latin-1")


async def test_requests_without_the_token_are_refused(live: Live) -> None:
    t = live.token
    for target in [
        "/",
        "/static/app.js",
        "/api/next?rater=a",
        f"/?token={t}",
        f"/x{t}/",
        f"/{t[:-1]}/",
        f"/{t.upper()}/",
        "/favicon.ico",
        f"/%2F{t}/",
        f"//{t}/",
    ]:
        status, body, head = await raw(live.port, f"GET {target} HTTP/1.1")
        assert status == 403, target
        assert b"forbidden" in body and "Referrer-Policy: no-referrer" in head
    status, _, _ = await raw(
        live.port,
        "POST /api/label HTTP/1.1",
        b"{}",
        "Content-Type: application/json\r\nContent-Length: 2\r\n",
    )
    assert status == 403
    status, _, _ = await raw(live.port, f"GET /{t}/ HTTP/1.1")
    assert status == 200


async def test_paths_outside_the_app_cannot_be_fetched(live: Live, run_dir: Path) -> None:
    t = live.token
    eid = next(RunReader(run_dir).records()).header.episode_id
    secrets_on_disk = [b'"campaign_sha256"', b"schema_version", b"root:", eid.encode()]
    targets = [
        f"/{t}/static/../../run.json",
        f"/{t}/static/..%2F..%2Frun.json",
        f"/{t}/static/%2e%2e/%2e%2e/run.json",
        f"/{t}/static/%252e%252e%252frun.json",
        f"/{t}/static/..%5c..%5crun.json",
        f"/{t}/../run.json",
        f"/{t}/%2e%2e/episodes.jsonl",
        f"/{t}/clip/..%2Fepisodes.jsonl",
        f"/{t}/clip/{eid}",
        f"/{t}/clip/episodes%2F{eid}%2Fcall.wav",
        f"/{t}/static//etc/passwd",
        f"/{t}/static/%2Fetc%2Fpasswd",
        f"/{t}//etc/passwd",
        f"/{t}/static/app.js/../../../run.json",
        f"/{t}/run.json",
        f"/{t}/episodes.jsonl",
        f"/{t}/static/..%c0%af..%c0%afrun.json",
        f"/{t}/static/app.css%00.js",
    ]
    for target in targets:
        status, body, _ = await raw(live.port, f"GET {target} HTTP/1.1")
        assert status in (400, 403, 404), (target, status)
        assert not any(s in body for s in secrets_on_disk), target


async def test_body_limits_and_content_type(live: Live) -> None:
    t = live.token
    big = json.dumps({"rater": "a", "clip": "x" * 40_000, "answer": 1}).encode()
    status, _, _ = await raw(
        live.port,
        f"POST /{t}/api/label HTTP/1.1",
        big,
        f"Content-Type: application/json\r\nContent-Length: {len(big)}\r\n",
    )
    assert status == 413
    chunk = b"%x\r\n%s\r\n0\r\n\r\n" % (len(big), big)
    status, _, _ = await raw(
        live.port,
        f"POST /{t}/api/label HTTP/1.1",
        chunk,
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n",
    )
    assert status == 413
    async with aiohttp.ClientSession(timeout=TIMEOUT) as s:
        r = await s.post(
            live.url + "api/label",
            data="rater=a&clip=b&answer=1",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert r.status == 415
        r = await s.post(
            live.url + "api/label", data=b"{not json", headers={"Content-Type": "application/json"}
        )
        assert r.status == 400
        r = await s.get(live.url + "api/next?rater=" + "a" * 41)
        assert r.status == 400
        r = await s.get(live.url + "api/next?rater=../x")
        assert r.status == 400


async def rate_all(url: str, rater: str, answer: Any, limit: int | None = None) -> list[dict[str, Any]]:
    """Drive the API like the page does; returns every payload served."""
    served = []
    async with aiohttp.ClientSession(timeout=TIMEOUT) as s:
        while True:
            nxt = await (await s.get(url + f"api/next?rater={rater}")).json()
            served.append(nxt)
            if nxt["done"] or (limit is not None and len(served) > limit):
                return served
            r = await s.post(
                url + "api/label", json={"rater": rater, "clip": nxt["clip"], "answer": answer, "plays": 1}
            )
            assert r.status == 200, await r.text()


async def test_labels_are_stored_in_order_and_resume_after_restart(run_dir: Path) -> None:
    first = await start(run_dir)
    served = await rate_all(first.url, "alice", 1, limit=3)
    await first.server.stop()
    labels = read_labels(run_dir)
    assert [r.position for r in labels] == [0, 1, 2]
    order = rater_order(build_task(run_dir, "perceptibility"), "alice")
    assert [r.item for r in labels] == [i.key for i in order[:3]]
    assert all(r.perceived == r.options[0] and r.intended in r.options for r in labels)
    second = await start(run_dir)
    try:
        rest = await rate_all(second.url, "alice", 2)
        assert rest[0]["completed"] == 3 and rest[-1] == {"done": True, "completed": 8, "total": 8}
        assert rest[0]["clip"] != served[3]["clip"], "clip tokens are new random tokens after a restart"
        labels = read_labels(run_dir)
        assert [r.item for r in labels] == [i.key for i in order]
        assert [r.position for r in labels] == list(range(8))
        assert len({r.session for r in labels}) == 2
    finally:
        await second.server.stop()


async def test_only_the_current_clip_can_be_labelled_once(live: Live) -> None:
    async with aiohttp.ClientSession(timeout=TIMEOUT) as s:
        a = await (await s.get(live.url + "api/next?rater=a")).json()
        b = await (await s.get(live.url + "api/next?rater=b")).json()
        post = {"rater": "a", "clip": a["clip"], "plays": 1}
        for bad in [0, 3, "1", True, None, {"x": 1}]:
            r = await s.post(live.url + "api/label", json={**post, "answer": bad})
            assert r.status == 400, bad
        if b["clip"] != a["clip"]:
            r = await s.post(live.url + "api/label", json={**post, "clip": b["clip"], "answer": 1})
            assert r.status == 409
        r = await s.post(live.url + "api/label", json={**post, "clip": "A" * 24, "answer": 1})
        assert r.status == 404
        assert (await s.post(live.url + "api/label", json={**post, "answer": 2})).status == 200
        assert (await s.post(live.url + "api/label", json={**post, "answer": 2})).status == 409


async def test_quality_labels_need_every_scale(run_dir: Path) -> None:
    srv = await start(run_dir, "quality")
    try:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as s:
            nxt = await (await s.get(srv.url + "api/next?rater=q")).json()
            names = [sc["name"] for sc in nxt["scales"]]
            assert names == [
                "helpfulness",
                "specificity",
                "policy_grounding",
                "condescension",
                "interruption",
                "empathy",
            ]
            full = {n: 1 for n in names}
            for bad in [
                {**full, "empathy": 6},
                {k: v for k, v in full.items() if k != "empathy"},
                {**full, "extra": 1},
                {**full, "interruption": 5},
            ]:
                r = await s.post(
                    srv.url + "api/label", json={"rater": "q", "clip": nxt["clip"], "answer": bad, "plays": 1}
                )
                assert r.status == 400, bad
            r = await s.post(
                srv.url + "api/label",
                json={"rater": "q", "clip": nxt["clip"], "answer": {**full, "empathy": 5}, "plays": 2},
            )
            assert r.status == 200
        (rec,) = read_labels(run_dir)
        assert rec.task == "quality" and rec.scores["empathy"] == 5 and rec.plays == 2 and rec.audio == "call"
    finally:
        await srv.server.stop()


def sensitive_strings(run_dir: Path) -> set[str]:
    """Every identifier and condition label the run folder holds that a rater must not see."""
    reader = RunReader(run_dir)
    m = reader.manifest
    out = {m.run_id, m.campaign.name, m.campaign_sha256, m.plan_sha256, m.catalogue_sha256, str(run_dir)}
    out |= set(m.scenario_hashes) | set(m.scenario_hashes.values()) | set(m.facts_hashes.values())
    for agent in m.campaign.agents:
        out |= {agent.name, agent.adapter}
    for rec in reader.records():
        h = rec.header
        out |= {
            h.episode_id,
            h.pair_id,
            h.caller_id,
            h.scenario_id,
            h.agent,
            h.adapter,
            h.scenario_sha256,
            h.facts_sha256,
            h.speech.voice,
            str(h.seed),
        }
        out |= {v for v in h.condition.model_dump().values()}
        out |= {"/".join(h.condition.model_dump().values())}
    return {s for s in out if s}


def find(strings: set[str], text: str) -> set[str]:
    return {s for s in strings if re.search(rf"(?<![A-Za-z0-9_]){re.escape(s)}(?![A-Za-z0-9_])", text)}


@pytest.mark.parametrize("task", ["perceptibility", "quality", "observer", "intelligibility"])
async def test_nothing_served_names_a_condition_agent_scenario_or_episode(run_dir: Path, task: str) -> None:
    strings = sensitive_strings(run_dir)
    assert {
        "us_general",
        "l2_spanish",
        "calm",
        "frustrated",
        "scripted_ref",
        "refund_duplicate_charge",
    } <= strings
    srv = await start(run_dir, task)
    corpus: list[str] = []
    header_values: list[str] = []
    wavs: list[bytes] = []
    payloads: list[dict[str, Any]] = []
    try:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as s:

            async def get(url: str) -> bytes:
                r = await s.get(url)
                assert r.status == 200, url
                corpus.append(url)
                header_values.extend(f"{k}: {v}" for k, v in r.headers.items() if k not in SECURITY_HEADERS)
                return await r.read()

            corpus.append((await get(srv.url)).decode())
            corpus.append((await get(srv.url + "?rater=blind")).decode())
            corpus.append((await get(srv.url + "static/app.js")).decode())
            corpus.append((await get(srv.url + "static/app.css")).decode())
            while True:
                body = await get(srv.url + "api/next?rater=blind")
                corpus.append(body.decode())
                nxt = json.loads(body)
                payloads.append(nxt)
                if nxt["done"]:
                    break
                wav = await get(srv.url + f"clip/{nxt['clip']}")
                wavs.append(wav)
                answer: Any = {
                    "perceptibility": 1,
                    "observer": {"act": 1, "facts": [1]},
                    "intelligibility": "I was charged twice",
                }.get(task) or {sc["name"]: 1 for sc in nxt["scales"]}
                r = await s.post(
                    srv.url + "api/label",
                    json={"rater": "blind", "clip": nxt["clip"], "answer": answer, "plays": 1},
                )
                corpus.append(await r.text())
                header_values.extend(f"{k}: {v}" for k, v in r.headers.items() if k not in SECURITY_HEADERS)
    finally:
        await srv.server.stop()
    n_items = len(build_task(run_dir, task).items)  # type: ignore[arg-type]
    assert len(wavs) == n_items and (n_items == 8 or task in ("observer", "intelligibility"))
    assert find(strings, "\n".join(corpus + header_values)) == set()
    for k in SECURITY_HEADERS:
        assert not find(strings - {"none"}, SECURITY_HEADERS[k])
    for wav in wavs:
        # RIFF, WAVE, 'fmt ' (16 bytes), then 'data' with everything else: no room for metadata.
        assert wav[36:40] == b"data" and struct.unpack("<I", wav[40:44])[0] == len(wav) - 44
        assert not find(strings, wav[:44].decode("latin-1"))
    # Blinding by construction: for one axis, every payload is the same apart from the token and the count.
    # (An observer item also shows the agent's words of its turn, the thing to be judged.)
    shapes = {
        json.dumps(
            {k: v for k, v in p.items() if k not in ("clip", "completed", "transcript")}, sort_keys=True
        )
        for p in payloads[:-1]
    }
    assert len(shapes) == (2 if task == "perceptibility" else 1)
    tokens = [p["clip"] for p in payloads[:-1]]
    assert len(set(tokens)) == n_items and all(re.fullmatch(r"[A-Za-z0-9_-]{24}", tok) for tok in tokens)
