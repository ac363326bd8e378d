"""Call ids: unique per call and per run, opaque without the run's secret salt, reproducible from the folder."""

from __future__ import annotations

import hashlib
import hmac
import re
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from voice_audit.harness.runtime.callid import SALT_FILE, _salt_at, call_id, run_salt


def test_ids_have_the_callsid_shape_and_are_unique_per_call_and_attempt(tmp_path: Path) -> None:
    ids = {call_id(tmp_path, "run1", f"ep{i}", n) for i in range(50) for n in range(3)}
    assert len(ids) == 150
    assert all(re.fullmatch(r"CA[0-9a-f]{32}", i) for i in ids)


def test_same_folder_same_ids_new_folder_new_ids(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    first = call_id(a, "run1", "ep1", 0)
    _salt_at.cache_clear()  # a later process reads the salt back from the folder
    assert call_id(a, "run1", "ep1", 0) == first
    # the same run id and episode in another run folder (another salt): a different id, so the id
    # is not a function of the plan
    assert call_id(b, "run1", "ep1", 0) != first
    assert run_salt(a) != run_salt(b)


def test_the_id_is_an_hmac_under_the_secret_salt(tmp_path: Path) -> None:
    """Both calls of a pair differ only in their episode id; without the salt, the ids are keyed
    hashes nothing can be read from. With the salt, the id is recomputed exactly."""
    salt = run_salt(tmp_path)
    assert (tmp_path / SALT_FILE).read_text().strip() == salt.hex()
    mode = stat.S_IMODE((tmp_path / SALT_FILE).stat().st_mode)
    assert mode == 0o600
    expect = "CA" + hmac.new(salt, b"call|r|pair7-a|0", hashlib.sha256).hexdigest()[:32]
    assert call_id(tmp_path, "r", "pair7-a", 0) == expect
    unsalted = "CA" + hashlib.sha256(b"call|r|pair7-a|0").hexdigest()[:32]
    assert expect != unsalted


def test_concurrent_first_use_agrees_on_one_salt(tmp_path: Path) -> None:
    def one(i: int) -> bytes:
        _salt_at.cache_clear()
        return run_salt(tmp_path)

    with ThreadPoolExecutor(8) as pool:
        salts = set(pool.map(one, range(32)))
    assert len(salts) == 1
    assert [p.name for p in tmp_path.iterdir()] == [SALT_FILE]  # no temporary file left behind


def test_a_damaged_salt_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / SALT_FILE).write_text("abcd\n")
    _salt_at.cache_clear()
    with pytest.raises(ValueError, match="not a call-id salt"):
        call_id(tmp_path, "r", "e", 0)
