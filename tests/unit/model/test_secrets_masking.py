"""Credential masking shared by the run manifest, the event logs and the report."""

from __future__ import annotations

from voice_audit.harness.model.secrets import MASK, Redactor, mask_options, mask_url, secret_values


def test_secret_named_values_and_their_copies_are_masked() -> None:
    opts = {"api_key": "sk-live-1234abcd", "lines": ["hello sk-live-1234abcd there"], "voice": "m3"}
    masked = mask_options(opts)
    assert masked["api_key"] == MASK and masked["voice"] == "m3"
    assert masked["lines"] == [f"hello {MASK} there"]


def test_references_are_kept_and_resolved() -> None:
    env = {"VENDOR_TOKEN": "tok-99887766", "OTHER_VAR": "zz-1122334455"}
    opts = {
        "headers": {"Authorization": "Bearer ${VENDOR_TOKEN}"},
        "api_key_env": "OTHER_VAR",
        "token_source": "OTHER_VAR",
    }
    assert secret_values(opts, env) == {"tok-99887766", "zz-1122334455"}
    masked = mask_options(opts, secret_values(opts, env))
    assert masked == opts


def test_urls_lose_passwords_and_credential_parameters() -> None:
    url = "wss://user:hunter22@agent.example/ws?api_key=abc123&lang=en"
    out = mask_url(url)
    assert "hunter22" not in out and "abc123" not in out
    assert "lang=en" in out and "agent.example/ws" in out and out.startswith("wss://user:")


def test_redactor_replaces_inside_serialised_lines() -> None:
    red = Redactor({"tok-99887766", "abc"})
    assert red.bytes(b'{"text":"say tok-99887766 now"}') == ('{"text":"say ' + MASK + ' now"}').encode()
    assert red.bytes(b"abc") == b"abc", "values shorter than four characters are not treated as secrets"
    assert not Redactor(set())
