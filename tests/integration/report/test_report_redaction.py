"""--redact keeps schema and numbers, drops audio, URLs, real-system words; no planted secret survives."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

from voice_audit.analysis.report import Built
from voice_audit.analysis.report.redact import LEVEL, LEVEL_MASK, Scrubber, is_real_system
from voice_audit.harness.model.secrets import MASK, mask_options, secret_values


def _files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*") if p.is_file())


def _keys(node: Any, path: str = "") -> set[str]:
    if isinstance(node, dict):
        return {f"{path}.{k}" for k in node} | {x for k, v in node.items() for x in _keys(v, f"{path}.{k}")}
    if isinstance(node, list) and node:
        return _keys(node[0], f"{path}[]")
    return set()


def test_no_planted_secret_in_any_output_byte(redacted: tuple[Built, Path], fx: ModuleType) -> None:
    _, out = redacted
    files = _files(out)
    assert {f.name for f in files} >= {"index.html", "report.md", "report.json"}
    assert any(f.suffix == ".svg" for f in files)
    for f in files:
        data = f.read_bytes()
        for secret in fx.SECRETS:
            assert secret.encode() not in data, f"{secret} leaked into {f}"
        assert b"https://" not in data.replace(b"http://www.w3.org", b"") or f.suffix == ".svg", f


def test_full_report_masks_credentials_but_keeps_the_endpoint(
    full: tuple[Built, Path], fx: ModuleType
) -> None:
    built, out = full
    for f in _files(out):
        data = f.read_bytes()
        for secret in (fx.SECRET_TOKEN, fx.SECRET_URL_KEY, fx.SECRET_ENV_VALUE):
            assert secret.encode() not in data, f"{secret} in {f}"
    vendor = next(a for a in built.report.agents if a.name == "vendor_x")
    assert vendor.url is not None and fx.SECRET_HOST in vendor.url
    assert vendor.options["api_key"] == MASK
    assert built.report.redaction.secrets_masked > 0


def test_redaction_drops_audio_urls_and_real_system_words(
    redacted: tuple[Built, Path], fx: ModuleType
) -> None:
    built, out = redacted
    r = built.report
    assert r.redaction.redacted
    assert not list(out.rglob("*.wav"))
    page = (out / "index.html").read_text()
    assert "<audio" not in page and "withheld in this redacted release" in page
    vendor = next(a for a in r.agents if a.name == "vendor_x")
    assert vendor.url == "[redacted-url]"
    seen_vendor = seen_ref = False
    for p in r.pairs_shown:
        for call in (p.a, p.b):
            if call is None:
                continue
            assert call.audio is None
            agent_lines = [x for x in call.transcript if x.who == "agent"]
            caller_lines = [x for x in call.transcript if x.who == "caller"]
            assert caller_lines and all(x.text for x in caller_lines)
            if p.agent == "vendor_x":
                seen_vendor = True
                assert call.text_redacted and all(x.text is None for x in agent_lines)
            else:
                seen_ref = True
                assert not call.text_redacted and any(
                    fx.REFERENCE_LINE in (x.text or "") for x in agent_lines
                )
    assert seen_vendor and seen_ref
    assert all(
        f.termination == "[redacted: real-system text]" for f in r.failed_calls if f.agent == "vendor_x"
    )


def test_redaction_keeps_schema_and_numbers(full: tuple[Built, Path], redacted: tuple[Built, Path]) -> None:
    full_text = (full[1] / "report.json").read_text()
    b_text = (redacted[1] / "report.json").read_text()
    a, b = json.loads(full_text), json.loads(b_text)
    assert _keys(a) == _keys(b)
    for level in ("us_general", "l2_spanish", "female_adult"):  # condition labels are masked ...
        assert level in full_text and level not in b_text
    a = json.loads(LEVEL.sub(lambda m: f"{m.group(1)}={LEVEL_MASK}", full_text))  # ... and only they
    assert a["cells"] == b["cells"] and a["findings"] == b["findings"]
    assert a["calls"] == b["calls"] and a["gates"] == b["gates"] and a["disposition"] == b["disposition"]
    assert [p["pair_id"] for p in a["pairs_shown"]] == [p["pair_id"] for p in b["pairs_shown"]]


def test_secret_values_from_keys_nesting_and_named_env_vars() -> None:
    options = {
        "api_key": "k-123456",
        "auth": {"user": "bobby", "pass": "hunter22"},
        "headers": [{"X-Token": "t-999999"}],
        "key_env": "MY_VENDOR_TOKEN",
        "model": "gpt-x",
        "retries": 3,
    }
    found = secret_values(options, {"MY_VENDOR_TOKEN": "from-env-777", "HOME": "/root"})
    assert found >= {"k-123456", "bobby", "hunter22", "t-999999", "from-env-777"}
    assert "gpt-x" not in found and "3" not in found
    masked = mask_options(options, found)
    assert masked["api_key"] == MASK and masked["auth"] == {"user": MASK, "pass": MASK}
    assert masked["model"] == "gpt-x" and masked["retries"] == 3


def test_scrubber_masks_secrets_inside_text_and_urls_when_redacting() -> None:
    s = Scrubber({"sekrit-42"}, drop_urls=True)
    assert s.tree({"a": ["x sekrit-42 y", "see wss://h.example/p?q=1 now"]}) == {
        "a": [f"x {MASK} y", "see [redacted-url] now"]
    }
    assert s.hits == 2
    assert Scrubber(set(), drop_urls=False).text("http://a.b/c") == "http://a.b/c"


def test_only_bundled_adapters_count_as_synthetic() -> None:
    assert not is_real_system("cascaded") and not is_real_system("scripted")
    for adapter in ("http", "ws", "twilio", "realtime", "mypkg.agent:factory", "some_plugin"):
        assert is_real_system(adapter)
