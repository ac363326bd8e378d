"""The model reader over real HTTP: llama-cpp-python's OpenAI-compatible server, started here on
127.0.0.1 with the packaged tiny model (SmolLM2-135M-Instruct), and the same model in-process.

The tiny model reads turns poorly; these tests are about the plumbing: the answer is parsed into
the closed vocabularies, the second reading is logged in the event schema, the key is sent only
as the bearer credential and never shows up, and readings are identical across processes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers.pilot_cache import home_with_session_cache
from voice_audit.harness.caller import ACTS, RuleReader
from voice_audit.harness.caller.model_reader import ModelReader, ReaderError, fact_names
from voice_audit.harness.caller.readers import Readers
from voice_audit.harness.llm import LLMError, OpenAIChatClient, packaged_model, resolve_weights, wait_ready
from voice_audit.harness.model.events import parse_event
from voice_audit.harness.runlog import RunReader
from voice_audit.scenarios import BUNDLED_LIBRARY, Scenario, ScenarioLibrary

pytest.importorskip("llama_cpp", reason="needs the llm extra: pip install 'voice-audit[llm]'")
pytestmark = [pytest.mark.slow, pytest.mark.cpu_bound]  # a local LLM: long, no wall-clock assertion

TURNS = (
    "Before I look into that, could you confirm your date of birth for me?",
    "Sorry, I didn't quite catch that. Could you say it again?",
)
KEY_ENV = "VOICE_AUDIT_TEST_READER_KEY"


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]


@pytest.fixture(scope="module")
def weights() -> Path:
    try:
        path, _ = resolve_weights(packaged_model("smollm2-135m"))
    except LLMError as exc:
        pytest.skip(str(exc))
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def llama_server(weights: Path, key: str, log: Path) -> Iterator[str]:
    """`python -m llama_cpp.server` on a free loopback port; stopped (and reaped) on exit."""
    port = _free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(weights), "--model_alias", "smollm2",
           "--host", "127.0.0.1", "--port", str(port), "--api_key", key, "--n_threads", "1", "--n_ctx", "2048",
           "--n_threads_batch", "1",  # prompts on one thread too (the default, every core, busy-waits)
           "--seed", "0", "--verbose", "False"]  # fmt: skip
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


async def _read_all(url: str, key: str, scenario: Scenario) -> list[dict[str, object]]:
    client = OpenAIChatClient(url, "smollm2", api_key_env=KEY_ENV, environ={KEY_ENV: key}, structured="json_object",
                              timeout_s=300)  # fmt: skip
    reader = ModelReader(client, max_tokens=96)
    try:
        await wait_ready(url, timeout_s=120, api_key=key)
        out = []
        for text in TURNS:
            r = await reader.aread(text, scenario)
            out.append(
                {
                    "acts": list(r.act_names),
                    "facts": list(r.challenge_facts),
                    "classification": r.classification,
                }
            )
        return out
    finally:
        await reader.close()


async def test_readings_over_http_are_parsed_logged_and_identical_across_processes(
    run_server: tuple[str, str, Path],
    weights: Path,
    scenario: Scenario,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The first server is the module's (started fresh for this test, the first in the file), the
    second is a new process given the same requests: the same readings."""
    caplog.set_level(logging.DEBUG)
    url, key, log = run_server
    first = await _read_all(url, key, scenario)
    # the model as the second reader beside the rules: its reading is an event of the log schema
    client = OpenAIChatClient(url, "smollm2", api_key_env=KEY_ENV, environ={KEY_ENV: key}, structured="json_object",
                              timeout_s=300)  # fmt: skip
    model = ModelReader(client, max_tokens=96)
    readers = Readers(scenario, RuleReader(), model)
    turn = await readers.read(TURNS[0])
    fields = turn.event_fields()
    assert fields is not None and fields["error"] is None
    event = parse_event({"t_ms": 5, "type": "caller_reading", "turn": 3, **fields})
    assert event.type == "caller_reading" and event.reader == "model:openai:smollm2"
    assert turn.acting == RuleReader().read(TURNS[0], scenario)
    # a wrong key is refused by the server, and the error names neither key
    wrong = OpenAIChatClient(url, "smollm2", api_key_env=KEY_ENV, environ={KEY_ENV: "sk-wrong-" + key[3:11]},
                             structured="json_object")  # fmt: skip
    with pytest.raises(ReaderError) as exc:
        await ModelReader(wrong).aread(TURNS[1], scenario)
    assert exc.value.kind == "llm_http_error" and "401" in str(exc.value)
    assert key not in str(exc.value) and key[3:11] not in str(exc.value)
    await model.close()
    await wrong.close()
    facts = fact_names(scenario)
    for r in first:
        assert r["acts"] and set(r["acts"]) <= set(ACTS)  # type: ignore[arg-type]
        assert set(r["facts"]) <= set(facts)  # type: ignore[arg-type]
    with llama_server(weights, key, tmp_path / "server.log") as url:
        second = await _read_all(url, key, scenario)
    assert second == first
    assert key not in caplog.text and key not in event.model_dump_json()
    for server_log in (log, tmp_path / "server.log"):
        assert key not in server_log.read_text(errors="replace")


def test_in_process_readings_are_identical_across_processes_and_orders(
    scenario: Scenario, weights: Path, tmp_path: Path
) -> None:
    """Two fresh processes with the in-process backend give the same readings, in either order. The
    reader prompt's state goes to a private folder, never the user's cache: the first process
    computes it, the second loads it (a loaded state answers as the computed one)."""
    code = (
        "import json, sys\n"
        "from voice_audit.harness.caller.model_reader import ModelReader\n"
        "from voice_audit.harness.llm import LocalChatClient, packaged_model\n"
        "from scenarios import BUNDLED_LIBRARY, ScenarioLibrary\n"
        "sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()['refund_duplicate_charge'][1]\n"
        "r = ModelReader(LocalChatClient(packaged_model('smollm2-135m'), n_threads=1), max_tokens=96)\n"
        "turns = json.loads(sys.argv[1])\n"
        "out = {t: list(r.read(t, sc).act_names) for t in turns}\n"
        "print(json.dumps(out, sort_keys=True))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    env["VOICE_AUDIT_LLM_STATES"] = str(tmp_path / "llm-states")
    runs = [
        subprocess.run(
            [sys.executable, "-c", code, json.dumps(order)],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
            env=env,
        ).stdout
        for order in (list(TURNS), list(reversed(TURNS)))
    ]
    a, b = (json.loads(x) for x in runs)
    assert a == b and set(a) == set(TURNS)
    assert all(acts and set(acts) <= set(ACTS) for acts in a.values())


RUN_CAMPAIGN = """\
name: model_reader_run
seed: 3
scenarios: [refund_duplicate_charge]
agents: [{{name: scripted_ref, adapter: "voice_audit.agents.fakes.scripted:scripted"}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: l2_spanish}}
voices: 1
timeouts: {{call_s: 3000}}
reader:
  acting: {acting}
  model: {{backend: openai, base_url: "{url}", model: smollm2, api_key_env: {env}, structured: json_object,
          timeout_s: 300}}
tts: {{name: espeak}}
"""


@pytest.fixture(scope="module")
def run_server(weights: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """One server (its URL, key and log) for the file: the first server of the readings test and
    both runs below. A server start and its evaluation of the reader's prompt cost as much CPU as
    a run; the runs assert on nothing the earlier requests leave in the server."""
    key = "sk-" + secrets.token_hex(16)
    log = tmp_path_factory.mktemp("server") / "server.log"
    with llama_server(weights, key, log) as url:
        asyncio.run(wait_ready(url, timeout_s=120, api_key=key))
        yield url, key, log


@pytest.mark.parametrize("acting", ["rules", "model"])
def test_a_run_logs_both_readings_per_turn_and_never_the_key(
    run_server: tuple[str, str, Path], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, acting: str
) -> None:
    url, key, _ = run_server
    home = home_with_session_cache(tmp_path / "home", tmp_path_factory)  # never the user's cache
    (tmp_path / "c.yaml").write_text(RUN_CAMPAIGN.format(url=url, env=KEY_ENV, acting=acting))
    exe = Path(sys.executable).with_name("voice-audit")
    done = subprocess.run(
        [str(exe), "run", str(tmp_path / "c.yaml"), "--out", str(tmp_path), "--run-id", "r", "--quiet", "--no-stimulus-check"],
        capture_output=True, text=True, timeout=1200, env={**os.environ, KEY_ENV: key, "HOME": str(home)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert key not in done.stdout + done.stderr
    run = tmp_path / "r"
    for f in run.rglob("*"):
        if f.is_file():
            assert key.encode() not in f.read_bytes(), f
    reader = RunReader(run)
    records = list(reader.records())
    assert len(records) == 2
    for rec in records:
        events = reader.events(rec.header.episode_id)
        decided = [e.turn for e in events if e.type == "caller_decision"]
        second = [e for e in events if e.type == "caller_reading"]
        assert decided and [e.turn for e in second] == decided
        other = "rules" if acting == "model" else "model:openai:smollm2"
        assert {e.reader for e in second} == {other}
        assert {e.acting_reader for e in second} == {"rules" if acting == "rules" else "model:openai:smollm2"}
