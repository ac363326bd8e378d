"""Does a change of code change an output? Analyse one run folder (the golden run by default) at two
git revisions, each in its own worktree with this environment's packages, and compare every file
analysis writes, byte for byte.

A restructuring (a module split, a rename, the install namespace) must leave every output identical;
a behaviour change shows here file by file. Two things are set aside because they change from one analysis of the same code to the
next: the stage timings in analysis.json and the report's generation time. Revisions before the `voice_audit` namespace are run by
their bare package names, later ones through a directory that maps `voice_audit.<folder>` onto the
worktree, so both sides use the same interpreter and libraries.

    .venv/bin/python benchmarks/golden_identity.py REV_BEFORE REV_AFTER [--run DIR] [--keep]
    .venv/bin/python benchmarks/golden_identity.py --each REV...   # each revision against its parent
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "fixtures" / "runs" / "golden"
PACKAGES = ("harness", "agents", "analysis", "personas", "scenarios")
# What each revision runs on its copy of the run: the analysis, the subgroup miner, the report.
COMMANDS = (
    ["analyze", "{run}"],
    ["subgroups", "{run}", "--quiet"],
    ["report", "{run}", "-o", "{run}/report"],
)


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def _namespaced(tree: Path) -> bool:
    """A revision whose console script lives under voice_audit (the installed namespace)."""
    return "voice_audit.harness.cli:main" in (tree / "pyproject.toml").read_text(encoding="utf-8")


def _outputs(rev: str, side: str, run: Path, work: Path) -> tuple[Path, str]:
    """The run analysed at `rev`: its folder and the revision's short hash."""
    sha = _git("rev-parse", "--short", rev)
    tree = work / f"tree-{sha}"
    if not tree.exists():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), sha], check=True
        )
    env_path = str(tree)
    # A revision before the namespace names its CLI module by the folder alone.
    module = ".".join(("harness", "cli"))
    if _namespaced(tree):
        ns = work / f"ns-{sha}" / "voice_audit"
        ns.mkdir(parents=True, exist_ok=True)
        for package in PACKAGES:
            link = ns / package
            if not link.exists():
                link.symlink_to(tree / package)
        env_path, module = str(ns.parent), "voice_audit.harness.cli"
    out = work / f"run-{side}-{sha}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(run, out)
    for command in COMMANDS:
        args = [part.format(run=out) for part in command]
        code = f"import sys; sys.argv = ['voice-audit', *sys.argv[1:]]; from {module} import main; main()"
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=work,
            env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin", "HOME": str(work)},
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(
                f"{sha}: voice-audit {' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}"
            )
    return out, sha


def _written(run: Path, inputs: Path) -> list[Path]:
    """Every file analysis wrote: what the run folder holds beyond its input copy."""
    given = {p.relative_to(inputs) for p in inputs.rglob("*") if p.is_file()}
    return sorted(
        p.relative_to(run) for p in run.rglob("*") if p.is_file() and p.relative_to(run) not in given
    )


def _volatile(run: Path) -> list[bytes]:
    """What legitimately differs between two analyses of one run: the report's generation time."""
    report = run / "report" / "report.json"
    if not report.exists():
        return []
    return [json.loads(report.read_text(encoding="utf-8"))["generated_at"].encode()]


def _normalised(run: Path, rel: Path) -> bytes:
    """A written file without what changes from one analysis to the next: the stage timings of
    analysis.json and the report's generation time."""
    data = (run / rel).read_bytes()
    if rel == Path("analysis.json"):
        doc = json.loads(data)
        doc.pop("timings_s", None)
        return json.dumps(doc, sort_keys=True).encode()
    for value in _volatile(run):
        data = data.replace(value, b"<generated_at>")
    return data


def compare(before: str, after: str, run: Path, work: Path) -> bool:
    a, sha_a = _outputs(before, "before", run, work)
    b, sha_b = _outputs(after, "after", run, work)
    files_a, files_b = _written(a, run), _written(b, run)
    same = True
    print(f"\n{sha_a} -> {sha_b}: {len(files_b)} files written")
    for rel in sorted(set(files_a) | set(files_b)):
        if rel not in files_a or rel not in files_b:
            print(f"  {'only after ' if rel in files_b else 'only before'}  {rel}")
            same = False
        elif _normalised(a, rel) != _normalised(b, rel):
            print(f"  differs      {rel}")
            same = False
    print("  byte-identical" if same else "  NOT identical")
    return same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revs", nargs="+")
    parser.add_argument("--each", action="store_true", help="compare each revision with its parent")
    parser.add_argument("--run", type=Path, default=GOLDEN)
    parser.add_argument("--keep", action="store_true", help="keep the worktrees and outputs")
    ns = parser.parse_args()
    pairs = [(f"{r}^", r) for r in ns.revs] if ns.each else [(ns.revs[0], ns.revs[1])]
    if not ns.each and len(ns.revs) != 2:
        parser.error("give two revisions, or --each with any number")
    work = Path(tempfile.mkdtemp(prefix="golden-identity-"))
    try:
        results = [compare(before, after, ns.run.resolve(), work) for before, after in pairs]
    finally:
        if ns.keep:
            print(f"kept: {work}")
        else:
            for tree in work.glob("tree-*"):
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False
                )
            shutil.rmtree(work, ignore_errors=True)
    raise SystemExit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
