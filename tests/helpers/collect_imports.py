"""`pytest.importorskip` at module level, decided without importing the module.

Every pytest process collects every test file, so a heavy optional extra imported at module level
(torch, openai's types, pipecat, google.genai) costs each worker its import even when it runs none of
the file's tests. `skip_unless_installed` skips the module, with the reason `pytest.importorskip`
would give, when the module cannot be found; the tests import it themselves when they run. A module
that is found but fails to import then errors in the test instead of skipping: a broken install, not
a missing extra. `LazyModule` stands for a module the tests use by attribute (`gt.Content`) until
they first use it.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest


def _first_missing(modname: str) -> str | None:
    """The first dotted prefix of `modname` that no finder can locate, or None when all of it can be
    found; no package's `__init__` runs (namespace packages, which have none, are imported)."""
    path = None
    parts = modname.split(".")
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        module = sys.modules.get(name)
        if module is not None:
            path = getattr(module, "__path__", None)
            continue
        spec = None
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is not None and (spec := find_spec(name, path)) is not None:
                break
        if spec is None:
            return name
        path = spec.submodule_search_locations
        if path is not None and spec.origin is None:  # a namespace package: importing it runs no code
            path = importlib.import_module(name).__path__
        if path is None and i + 1 < len(parts):
            return ".".join(parts[: i + 2])
    return None


def skip_unless_installed(modname: str, reason: str | None = None) -> None:
    """Skip the calling test module, as `pytest.importorskip(modname, reason=reason)` would, when
    `modname` is not installed; unlike it, never import `modname`."""
    __tracebackhide__ = True  # the skip is reported at the test file's line, as importorskip's is
    missing = _first_missing(modname)
    if missing is not None:
        if reason is None:
            reason = f"could not import {modname!r}: No module named {missing!r}"
        pytest.skip(reason, allow_module_level=True)


class LazyModule:
    """A module imported on its first attribute access: `gt = LazyModule("google.genai.types")` reads
    as `from google.genai import types as gt` in the tests, without importing it at collection."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # pytest's collection probes module attributes (`_pytestfixturefunction`)
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def imported_before_tests(*modnames: str) -> Any:
    """A module-scoped autouse fixture importing `modnames` before the file's first test runs: assign
    it in a test file whose tests time real calls, so the import never lands inside a timed call."""

    @pytest.fixture(scope="module", autouse=True)
    def _imported() -> None:
        for name in modnames:
            importlib.import_module(name)

    return _imported
