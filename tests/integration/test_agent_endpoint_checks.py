"""Agent endpoints checked before any call: `voice-audit run` stops with one line naming an agent
nobody answers for (credentials masked), exit 2, nothing written; `voice-audit plan` imports every
adapter and checks every URL's form (and, with --check-agents, that it answers), one line per problem."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.pilot_cache import home_with_session_cache
from voice_audit.harness.endpoints import unreachable_agents, url_problem
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.runlog import RunReader

CAMPAIGN = """\
name: reach
seed: 3
scenarios: [refund_duplicate_charge]
agents:
  - {{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}}
  - {{name: h, adapter: http, url: "{url}"}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
voices: 1
replicates: 1
tts: {{name: espeak}}
"""

SECRET = "pw-9f3k2j"
KEY = "key-77aa11"


def _free_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def home(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runs' HOME: private (never the user's cache) but for the session's audio cache."""
    return home_with_session_cache(tmp_path / "home", tmp_path_factory)


def _run(tmp_path: Path, home: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    cfile = tmp_path / "c.yaml"
    cfile.write_text(CAMPAIGN.format(url=url))
    cmd = [
        sys.executable,
        "-m",
        "voice_audit.harness.cli",
        "run",
        str(cfile),
        "--out",
        str(tmp_path / "runs"),
        "--quiet",
        "--no-stimulus-check",
        *extra,
    ]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "HOME": str(home)}
    )


def test_an_unreachable_agent_stops_the_run_before_any_call(tmp_path: Path, home: Path) -> None:
    port = _free_port()
    res = _run(tmp_path, home, f"http://user:{SECRET}@127.0.0.1:{port}/agent?api_key={KEY}")
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert f"agent 'h' at http://user:[redacted]@127.0.0.1:{port}/agent" in lines[0]
    assert "connection refused" in lines[0] and "c.yaml" in lines[0]
    assert SECRET not in res.stderr and KEY not in res.stderr
    assert "agent 's'" not in lines[0], "the in-process agent has no endpoint to check"
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir()), "nothing half-written"


def test_without_the_check_the_calls_fail_as_the_agents_failure_not_a_traceback(
    tmp_path: Path, home: Path
) -> None:
    port = _free_port()
    res = _run(tmp_path, home, f"http://127.0.0.1:{port}", "--no-check-agents")
    assert "Traceback" not in res.stderr, res.stderr
    assert res.returncode == 0, res.stderr  # the scripted agent's calls completed
    (run_dir,) = (tmp_path / "runs").iterdir()
    records = list(RunReader(run_dir).records())
    assert len(records) == 4
    unreached = [r for r in records if r.header.agent == "h"]
    assert len(unreached) == 2
    # the agent's failure, recorded as such: its kind is set and the caller was not served
    assert all(r.outcome.failure_kind and r.outcome.terminal_outcome != "refund_issued" for r in unreached)
    assert all(
        (run_dir / "episodes" / r.header.episode_id / "call.wav").stat().st_size >= 44 for r in unreached
    )


def test_probe_tells_a_listening_port_from_a_closed_one() -> None:
    async def go() -> list[str]:
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        open_port = server.sockets[0].getsockname()[1]
        closed = _free_port()
        agents = [
            AgentSpec(name="up", adapter="ws", url=f"ws://127.0.0.1:{open_port}/stream"),
            AgentSpec(name="down", adapter="ws", url=f"ws://127.0.0.1:{closed}/stream"),
            AgentSpec(name="local", adapter="voice_audit.agents.fakes.scripted:scripted"),
        ]
        async with server:
            return await unreachable_agents(agents)

    problems = asyncio.run(go())
    assert len(problems) == 1 and "agent 'down'" in problems[0] and "connection refused" in problems[0]


def test_url_problems_are_named() -> None:
    assert url_problem("http://127.0.0.1:8080/x") is None
    assert url_problem("wss://api.example.com/v1/realtime?model=m") is None
    assert url_problem("127.0.0.1:8080") is not None
    assert "scheme 'ftp'" in (url_problem("ftp://host/") or "")
    assert "no host" in (url_problem("http:///path") or "")
    assert "malformed" in (url_problem("http://host:99999/") or "")


BAD_AGENTS = """\
name: bad
seed: 3
scenarios: [refund_duplicate_charge]
agents:
  - {name: typo, adapter: "voice_audit.agents.fakes.scripted:scriptd"}
  - {name: gone, adapter: "voice_audit.agents.nosuchmodule:factory"}
  - {name: form, adapter: http, url: "htp:/127.0.0.1:8080"}
  - {name: fine, adapter: "voice_audit.agents.fakes.scripted:scripted"}
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: gb_southern}
voices: 1
replicates: 1
tts: {name: espeak}
"""


def _plan(cfile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "voice_audit.harness.cli", "plan", str(cfile), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_plan_names_every_bad_adapter_and_url_once(tmp_path: Path) -> None:
    cfile = tmp_path / "bad.yaml"
    cfile.write_text(BAD_AGENTS)
    res = _plan(cfile)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 3, res.stderr
    assert (
        f"{cfile}:5:" in lines[0] and "agent 'typo'" in lines[0] and "has no attribute 'scriptd'" in lines[0]
    )
    assert (
        f"{cfile}:6:" in lines[1]
        and "agent 'gone'" in lines[1]
        and "voice_audit.agents.nosuchmodule" in lines[1]
    )
    assert f"{cfile}:7:" in lines[2] and "agent 'form'" in lines[2] and "scheme 'htp'" in lines[2]
    assert "Traceback" not in res.stderr and not res.stdout


def test_plan_checks_reachability_only_when_asked(tmp_path: Path) -> None:
    cfile = tmp_path / "c.yaml"
    port = _free_port()
    cfile.write_text(CAMPAIGN.format(url=f"http://127.0.0.1:{port}"))
    assert _plan(cfile).returncode == 0  # the form is right; nothing is probed
    res = _plan(cfile, "--check-agents")
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and f"agent 'h' at http://127.0.0.1:{port}" in res.stderr, res.stderr

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        cfile.write_text(CAMPAIGN.format(url=f"http://127.0.0.1:{listener.getsockname()[1]}"))
        res = _plan(cfile, "--check-agents")
    assert res.returncode == 0, res.stderr
    assert "2 matched pairs, 4 calls" in res.stdout
