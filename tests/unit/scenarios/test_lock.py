"""Scenario hashing, the lock file and its refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from voice_audit.scenarios import BUNDLED_LIBRARY, ConfigError, LockError, ScenarioLibrary, load_scenario_file

REFUND = BUNDLED_LIBRARY / "refund_duplicate_charge.yaml"


@pytest.fixture()
def library(tmp_path: Path) -> Path:
    for f in BUNDLED_LIBRARY.iterdir():
        shutil.copy(f, tmp_path / f.name)
    return tmp_path


def test_bundled_library_is_locked_and_verifies() -> None:
    lib = ScenarioLibrary()
    assert lib.verify() == []
    assert set(lib.load_all()) == {
        "refund_duplicate_charge",
        "outage_support",
        "plan_correction",
        "account_verification",
        "retention_cancel",
        "billing_dispute_denied",
    }


def test_hash_is_stable_across_loads_and_key_order(tmp_path: Path) -> None:
    first = load_scenario_file(REFUND).sha256
    assert load_scenario_file(REFUND).sha256 == first
    data = yaml.safe_load(REFUND.read_text())
    reordered = {k: data[k] for k in reversed(list(data))}
    reordered["facts"] = {k: data["facts"][k] for k in reversed(list(data["facts"]))}
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(reordered, sort_keys=False))
    assert load_scenario_file(path).sha256 == first


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("facts", "account", "tenure_months"), 15),
        (("facts", "charge", "amount"), "24.98"),
        (("facts", "charge", "date"), "2026-11-23"),
        (
            ("facts", "policy", "text"),
            "A duplicate charge is refunded only after manager approval, within 30 days.",
        ),
        (("facts", "eligibility", "refund_eligible"), False),
        (("facts", "tool_permissions", "issue_refund"), False),
        (("facts", "prior_contacts"), []),
        (("caller", "anchors", 1, "text"), "I was charged twice for my subscription."),
    ],
)
def test_any_fact_edit_changes_the_hash(tmp_path: Path, path: tuple[str | int, ...], value: object) -> None:
    data = yaml.safe_load(REFUND.read_text())
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump(data))
    assert load_scenario_file(edited).sha256 != load_scenario_file(REFUND).sha256


def test_edited_scenario_is_refused_with_the_relock_command(library: Path) -> None:
    path = library / "refund_duplicate_charge.yaml"
    path.write_text(path.read_text().replace("tenure_months: 14", "tenure_months: 15"))
    lib = ScenarioLibrary(library)
    with pytest.raises(LockError) as err:
        lib.get_locked("refund_duplicate_charge")
    msg = str(err.value)
    assert "refund_duplicate_charge.yaml" in msg and "edited after locking" in msg
    assert f"voice-audit scenarios lock {library}" in msg
    assert any("edited after locking" in p for p in lib.verify())


def test_relock_of_changed_scenario_needs_a_version_bump(library: Path) -> None:
    path = library / "refund_duplicate_charge.yaml"
    path.write_text(path.read_text().replace("tenure_months: 14", "tenure_months: 15"))
    lib = ScenarioLibrary(library)
    with pytest.raises(LockError, match="bump 'version'"):
        lib.lock()
    old = lib.load_all()["refund_duplicate_charge"][1].version
    path.write_text(path.read_text().replace(f"version: {old}", f"version: {old + 1}", 1))
    lock = lib.lock()
    assert lock.scenarios["refund_duplicate_charge"].version == old + 1
    assert lib.get_locked("refund_duplicate_charge").facts.account.tenure_months == 15


def test_unlocked_scenario_is_refused(library: Path) -> None:
    (library / "scenarios.lock").unlink()
    with pytest.raises(LockError, match="not locked"):
        ScenarioLibrary(library).get_locked("outage_support")


def test_newer_lock_file_is_refused(library: Path) -> None:
    lock = library / "scenarios.lock"
    data = json.loads(lock.read_text())
    data["lock_version"] = 99
    lock.write_text(json.dumps(data))
    with pytest.raises(LockError, match="newer"):
        ScenarioLibrary(library).verify()


def test_missing_required_fact_names_file_line_and_field(tmp_path: Path) -> None:
    text = REFUND.read_text().replace("    standing: good\n", "")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_scenario_file(path)
    assert str(err.value).startswith(f"{path}:")
    assert "facts.account.standing" in str(err.value)
    assert err.value.line is not None


def test_spoken_digits_are_refused(tmp_path: Path) -> None:
    text = REFUND.read_text().replace(
        "amount: twenty four dollars and ninety nine cents", "amount: 24.99 dollars"
    )
    path = tmp_path / "digits.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="spell numbers as words"):
        load_scenario_file(path)


def test_every_scenario_exercises_auth_policy_and_escalation() -> None:
    for _, sc in ScenarioLibrary().load_all().values():
        perms = sc.facts.tool_permissions
        assert perms["verify_identity"] and perms["policy_lookup"] and perms["escalate_to_human"]
        assert sc.caller.challenges
        assert any(a.outcome == "escalated" for a in sc.acceptable_outcomes)
