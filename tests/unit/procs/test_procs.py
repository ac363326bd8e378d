"""The one process mechanism (`voice_audit.harness.procs`): results, errors by side, initializer once
per child, time limits, lifelines, and nothing but public standard-library interfaces."""

from __future__ import annotations

import ast
import fcntl
import os
import pickle
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from voice_audit.harness import procs
from voice_audit.harness.procs import ChildError, WorkerCrashed, WorkerPool, WorkerTimeout, fork_server

ROOT = Path(__file__).parents[3]
PACKAGE = ROOT / "harness" / "procs"
T = "tests.helpers.procs_targets"


def _running(pid: int) -> bool:
    """Not yet a zombie. The main thread of a killed process turns zombie before its other threads
    (the lifeline's) have exited and its descriptors are closed. A process reaped between opening
    and reading its stat file reads as ESRCH."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        return state not in ("Z", "X") or len(list(Path(f"/proc/{pid}/task").iterdir())) > 1
    except (FileNotFoundError, ProcessLookupError):
        return False


def _gone(pids: list[int], within_s: float) -> list[int]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and any(_running(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _running(p)]


def test_results_come_back_in_order_from_every_child() -> None:
    with WorkerPool(2, f"{T}:sleep_then", eager=True) as pool:
        got = pool.map([(0.05 * (i % 3), i) for i in range(12)])
        assert len(pool.pids()) == 2
    assert got == list(range(12))


def test_the_initializer_runs_once_in_each_child() -> None:
    with WorkerPool(2, f"{T}:whoami", initializer=f"{T}:count_init", initargs=("engine",)) as pool:
        got = pool.map(range(20))
    assert {(n, tag) for _, n, tag, _ in got} == {(1, "engine")}
    assert 1 <= len({pid for pid, *_ in got}) <= 2
    assert os.getpid() not in {pid for pid, *_ in got}


def test_an_exception_in_a_child_keeps_its_kind_and_names_the_child_side() -> None:
    with WorkerPool(1, "math:sqrt") as pool:
        with pytest.raises(ValueError, match="math domain error") as info:
            pool.submit(-1.0).result()
        cause = info.value.__cause__
        assert isinstance(cause, ChildError)
        assert (cause.side, cause.kind, cause.pid) == ("child", "ValueError", pool.pids()[0])
        assert "math domain error" in cause.traceback
        assert pool.submit(4.0).result() == 2.0  # the child lives on


def test_an_exception_that_cannot_travel_arrives_as_a_child_error() -> None:
    with WorkerPool(1, f"{T}:raise_unpicklable") as pool, pytest.raises(ChildError) as info:
        pool.submit("x").result()
    assert info.value.kind == "Unpicklable" and "cannot travel: x" in info.value.message


def test_a_failing_initializer_is_reported_with_its_kind() -> None:
    with (
        WorkerPool(1, f"{T}:whoami", initializer=f"{T}:failing_init") as pool,
        pytest.raises(RuntimeError, match="no engine here") as info,
    ):
        pool.submit(1).result()
    assert isinstance(info.value.__cause__, ChildError) and info.value.__cause__.kind == "RuntimeError"


def test_a_hung_child_is_killed_at_its_limit_and_replaced_alone() -> None:
    with WorkerPool(2, f"{T}:sleep_then", eager=True) as pool:
        t0 = time.monotonic()
        hung = pool.submit((60.0, "never"), timeout=0.5)
        fine = pool.submit((0.2, "fine"), timeout=30)
        with pytest.raises(WorkerTimeout) as info:
            hung.result()
        assert time.monotonic() - t0 < 5
        assert fine.result() == "fine"
        err = info.value
        assert (err.side, err.kind, err.timeout_s) == ("parent", "timeout", 0.5)
        assert err.pid is not None and not _gone([err.pid], 5)
        assert err.pid not in pool.pids()
        assert pool.submit((0.0, "again"), timeout=30).result() == "again"


def test_the_cold_start_allowance_applies_to_a_childs_first_job_only() -> None:
    with WorkerPool(1, f"{T}:sleep_then", cold_start_s=5.0) as pool:
        assert pool.submit((0.5, "first"), timeout=0.2).result() == "first"
        with pytest.raises(WorkerTimeout):
            pool.submit((2.0, "second"), timeout=0.2).result()


def test_a_child_that_dies_is_reported_with_its_exit_code_and_replaced() -> None:
    with WorkerPool(1, f"{T}:exit_with") as pool:
        with pytest.raises(WorkerCrashed) as info:
            pool.submit(3).result()
        assert (info.value.exitcode, info.value.side) == (3, "parent")
    with WorkerPool(1, "builtins:abs") as pool:
        assert pool.submit(-1).result() == 1
        (pid,) = pool.pids()
        os.kill(pid, signal.SIGKILL)
        _gone([pid], 5)
        assert pool.submit(-2).result() == 2 and pool.pids() != [pid]


def test_children_get_the_parents_current_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    fork_server().preload([])  # the server exists before the variable does
    monkeypatch.setenv("PROCS_TEST_VALUE", "set after the server started")
    with WorkerPool(1, f"{T}:env") as pool:
        assert pool.submit("PROCS_TEST_VALUE").result() == "set after the server started"


def test_close_ends_every_child() -> None:
    pool = WorkerPool(2, "builtins:abs", eager=True)
    assert pool.map([-1, -2]) == [1, 2]
    deadline = time.monotonic() + 10
    while len(pool.pids()) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    pids = pool.pids()
    pool.close()
    assert len(pids) == 2 and not _gone(pids, 5) and pool.pids() == []
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(1)


def test_a_passed_descriptor_is_the_same_open_file(tmp_path: Path) -> None:
    """The local executor's workers hold the run folder's lock with the driver."""
    path = tmp_path / "run.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    child = fork_server().start(f"{T}:hold_lock", (1.0,), pass_fds=(fd,))
    assert child.conn.recv() == "holding"
    os.close(fd)
    other = os.open(path, os.O_RDWR)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the child still holds it
        assert child.join(10) == 0
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(other)
        child.close()


PARENT = """
import os, sys, time
from voice_audit.harness.procs import WorkerPool, fork_server
pool = WorkerPool(2, "tests.helpers.procs_targets:sleep_then", eager=True)
busy = pool.submit((3600.0, None))  # one child stuck in a job, one idle
while len(pool.pids()) < 2:
    time.sleep(0.02)
print(fork_server().pid(), *pool.pids(), flush=True)
time.sleep(3600)
"""


@pytest.mark.serial
def test_children_and_the_server_exit_when_the_parent_is_killed() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PARENT)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 3 and all(_running(p) for p in pids)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert not _gone(pids, 10), "children outlived their parent"


def test_the_package_imports_nothing_but_the_standard_library_and_itself() -> None:
    """`analysis` uses this package: it must never load the runtime or an engine through it."""
    bad = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            for name in names:
                top = name.split(".")[0]
                if not (
                    top in sys.stdlib_module_names
                    or top == "__future__"
                    or name.startswith("voice_audit.harness.procs")
                ):
                    bad.append(f"{path.name}: {name}")
    assert not bad, bad
    code = "import sys, voice_audit.harness.procs; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    ours = {m for m in loaded.stdout.split() if m.startswith("voice_audit.")}
    assert ours <= {
        "voice_audit.harness",
        *(
            f"voice_audit.harness.procs{s}"
            for s in ("", ".errors", ".pool", ".server", "._forkserver", ".lifeline")
        ),
    }, ours


def test_no_private_standard_library_interface_is_used() -> None:
    """No subclassing of multiprocessing's internals (`popen_forkserver.Popen._launch` and friends)
    anywhere in the product, and no private module or name of the standard library here."""
    private = re.compile(
        r"popen_forkserver|popen_spawn|\._launch\b|_Popen\b|set_spawning_popen|forkserver\.connect"
    )
    hits = [
        f"{path.relative_to(ROOT)}"
        for pkg in ("harness", "agents", "analysis", "personas", "scenarios")
        for path in (ROOT / pkg).rglob("*.py")
        if private.search(path.read_text(encoding="utf-8"))
    ]
    assert not hits, hits
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.split(".")[0] in sys.stdlib_module_names
                and node.module != "__future__"
            ):
                assert not [a.name for a in node.names if a.name.startswith("_")], (path.name, node.module)
                assert not any(p.startswith("_") for p in node.module.split(".")), (path.name, node.module)
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in sys.stdlib_module_names
                and node.attr.startswith("_")
                and node.attr != "_exit"  # os._exit: public, documented
            ):
                raise AssertionError(f"{path.name}: {node.value.id}.{node.attr}")


def test_the_public_surface_is_named() -> None:
    assert set(procs.__all__) >= {
        "WorkerPool",
        "ForkServer",
        "fork_server",
        "Child",
        "ChildError",
        "WorkerCrashed",
        "WorkerTimeout",
    }


FORKING_PARENT = """
import os, sys, time
from voice_audit.harness.procs import WorkerPool, fork_server
pool = WorkerPool(1, "tests.helpers.procs_targets:sleep_then", eager=True)
while not pool.pids():
    time.sleep(0.02)
if os.fork() == 0:  # a plain fork of the parent (not by the server) that outlives it
    time.sleep(3600)
print(fork_server().pid(), *pool.pids(), flush=True)
time.sleep(3600)
"""


@pytest.mark.serial
def test_a_plain_fork_of_the_parent_does_not_keep_its_children_alive() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(FORKING_PARENT)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert not _gone(pids, 10), "the forked copy kept the lifeline open"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)


def test_a_job_that_cannot_be_sent_fails_in_the_parent_and_spares_the_child() -> None:
    with WorkerPool(1, "builtins:abs") as pool:
        assert pool.submit(-1).result() == 1
        (pid,) = pool.pids()
        with pytest.raises((TypeError, AttributeError, pickle.PicklingError)):
            pool.submit(lambda: None).result()
        assert pool.submit(-3).result() == 3 and pool.pids() == [pid]
