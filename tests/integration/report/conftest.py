"""Shared report fixtures: one analysed run per process, full and redacted reports written once."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from analysis.report import Built, build_report, write_report


def _fixture_module() -> ModuleType:
    name = "voice_audit_report_fixture"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("_fixture.py"))
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


@pytest.fixture(scope="session")
def fx() -> ModuleType:
    return _fixture_module()


@pytest.fixture(scope="session")
def run_dir(fx: ModuleType) -> Path:
    return Path(fx.analysed_run())


@pytest.fixture(scope="session")
def full(run_dir: Path, fx: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> tuple[Built, Path]:
    built = build_report(run_dir, environ=fx.ENVIRON)
    out = tmp_path_factory.mktemp("report-full")
    write_report(built, out)
    return built, out


@pytest.fixture(scope="session")
def redacted(run_dir: Path, fx: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> tuple[Built, Path]:
    built = build_report(run_dir, environ=fx.ENVIRON, redact=True)
    out = tmp_path_factory.mktemp("report-redacted")
    write_report(built, out)
    return built, out
