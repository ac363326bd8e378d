"""Loading scenario files and the lock that freezes them before collection."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import Field

from voice_audit.scenarios._model import Scenario, check_required_paths
from voice_audit.scenarios.atomic import atomic_write_text
from voice_audit.scenarios.base import Frozen
from voice_audit.scenarios.errors import ConfigError, LockError
from voice_audit.scenarios.yamlsrc import load_yaml

BUNDLED_LIBRARY = Path(__file__).with_name("library")
LOCK_NAME = "scenarios.lock"
LOCK_VERSION = 1


class LockEntry(Frozen):
    version: int
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    file: str


class LockFile(Frozen):
    lock_version: int = LOCK_VERSION
    scenarios: dict[str, LockEntry]


def load_scenario_file(path: str | Path) -> Scenario:
    """Parse and validate one scenario file; problems come back as one positioned line."""
    doc = load_yaml(path)
    scenario = doc.validate(Scenario)
    problems = check_required_paths(scenario)
    if problems:
        raise doc.error(
            ("facts",), f"Scenario: {problems[0]}", fix="see scenarios/library for complete examples"
        )
    return scenario


def _lock_command(directory: Path) -> str:
    bundled = " --bundled" if directory.resolve() == BUNDLED_LIBRARY.resolve() else ""
    return f"voice-audit scenarios lock {directory}{bundled}"


def _relock_hint(directory: Path) -> str:
    return f"review the change, bump 'version' if facts changed, then run: {_lock_command(directory)}"


class ScenarioLibrary:
    """A folder of scenario YAML files and the lock file beside them."""

    def __init__(self, directory: str | Path = BUNDLED_LIBRARY) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise ConfigError("scenario folder not found", path=self.directory, fix="check the path")
        self.lock_path = self.directory / LOCK_NAME

    def files(self) -> list[Path]:
        return sorted(p for p in self.directory.glob("*.yaml") if not p.name.startswith("."))

    def load_all(self) -> dict[str, tuple[Path, Scenario]]:
        found: dict[str, tuple[Path, Scenario]] = {}
        for path in self.files():
            scenario = load_scenario_file(path)
            if scenario.id in found:
                raise ConfigError(
                    f"scenario id '{scenario.id}' is also defined in {found[scenario.id][0].name}",
                    path=path,
                    fix="give each scenario a unique id",
                )
            found[scenario.id] = (path, scenario)
        return found

    def read_lock(self) -> LockFile | None:
        if not self.lock_path.exists():
            return None
        try:
            data = json.loads(self.lock_path.read_text(encoding="utf-8"))
            lock = LockFile.model_validate(data)
        except (json.JSONDecodeError, ValueError) as exc:
            raise LockError(
                f"{self.lock_path}: unreadable lock file ({str(exc).splitlines()[0]}); "
                f"{_relock_hint(self.directory)}"
            ) from None
        if lock.lock_version > LOCK_VERSION:
            raise LockError(
                f"{self.lock_path}: lock_version {lock.lock_version} is newer than this voice-audit reads "
                f"({LOCK_VERSION}); upgrade voice-audit"
            )
        return lock

    def lock(self, *, allow_same_version_edit: bool = False) -> LockFile:
        """Record the hash of every scenario; an edit that keeps its version is refused by default."""
        current = self.load_all()
        old = self.read_lock()
        entries: dict[str, LockEntry] = {}
        for sid, (path, scenario) in sorted(current.items()):
            prev = old.scenarios.get(sid) if old else None
            if (
                prev is not None
                and prev.sha256 != scenario.sha256
                and prev.version == scenario.version
                and not allow_same_version_edit
            ):
                raise LockError(
                    f"{path}: scenario '{sid}' changed but kept version {scenario.version}; "
                    "bump 'version' so results from the old and new facts are never pooled "
                    "(or pass --allow-same-version to overwrite the lock)"
                )
            entries[sid] = LockEntry(version=scenario.version, sha256=scenario.sha256, file=path.name)
        lock = LockFile(scenarios=entries)
        atomic_write_text(
            self.lock_path, json.dumps(lock.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
        )
        return lock

    def verify(self) -> list[str]:
        """Every problem that would stop a run: unlocked, edited, or missing scenarios."""
        lock = self.read_lock()
        current = self.load_all()
        if lock is None:
            return [f"{self.lock_path}: no lock file; run: {_lock_command(self.directory)}"]
        problems: list[str] = []
        for sid, (path, scenario) in sorted(current.items()):
            entry = lock.scenarios.get(sid)
            if entry is None:
                problems.append(f"{path}: scenario '{sid}' is not locked; {_relock_hint(self.directory)}")
            elif entry.sha256 != scenario.sha256 or entry.version != scenario.version:
                problems.append(
                    f"{path}: scenario '{sid}' was edited after locking (sha256 {scenario.sha256[:12]} "
                    f"!= locked {entry.sha256[:12]}); {_relock_hint(self.directory)}"
                )
        for sid, entry in sorted(lock.scenarios.items()):
            if sid not in current:
                problems.append(
                    f"{self.lock_path}: locked scenario '{sid}' ({entry.file}) is missing; "
                    f"restore it or run: {_lock_command(self.directory)}"
                )
        return problems

    def get_locked(self, scenario_id: str) -> Scenario:
        """The scenario, only if its current content matches the lock; otherwise a LockError that says how to fix it."""
        current = self.load_all()
        if scenario_id not in current:
            known = ", ".join(sorted(current)) or "none"
            raise ConfigError(
                f"unknown scenario '{scenario_id}' in {self.directory} (known: {known})",
                fix="check the id, or point scenario_dir at the right folder",
            )
        path, scenario = current[scenario_id]
        lock = self.read_lock()
        entry = lock.scenarios.get(scenario_id) if lock else None
        if entry is None:
            raise LockError(f"{path}: scenario '{scenario_id}' is not locked; {_relock_hint(self.directory)}")
        if entry.sha256 != scenario.sha256 or entry.version != scenario.version:
            raise LockError(
                f"{path}: scenario '{scenario_id}' was edited after locking (sha256 {scenario.sha256[:12]} "
                f"!= locked {entry.sha256[:12]}); {_relock_hint(self.directory)}"
            )
        return scenario
