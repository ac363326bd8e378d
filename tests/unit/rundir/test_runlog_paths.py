"""The run folder has one owner: only `voice_audit.harness.runlog` spells a run-folder path.

A path is spelled when the source holds it as a string: a constant that is a path (no spaces) with
a run-folder file as one of its parts (`"run.json"`, `f"episodes/{eid}/call.wav"`), or a run-folder
name joined onto a path (`run_dir / "episodes"`). Prose may name the files (a message, a
docstring); a schema's `examples=` show a value as a reader sees it. The run-log package imports
only the standard library, pydantic and the data model (and what the data model imports), so
analysis can read run folders without loading the runtime.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from voice_audit.harness.runlog import layout

ROOT = Path(__file__).parents[3]
PACKAGES = ("harness", "agents", "analysis", "personas", "scenarios")
OWNER = Path("harness") / "runlog"
# Every name the layout defines (file names and folder names), read from the layout itself.
NAMES = frozenset(
    v for k, v in vars(layout).items() if k.isupper() and isinstance(v, str) and not k.startswith("_")
)
# Folder names too common to forbid as a path part on their own (`audio` is also the report's
# folder): they are forbidden when joined onto a path.
FILES = frozenset(n for n in NAMES if "." in n)
JOINED = NAMES - {layout.STIMULI_AUDIO_DIR}
_PART = re.compile(r"[^/\\]+")
# What the run-log package may import besides the standard library.
RUNLOG_MAY_IMPORT = (
    "pydantic",
    "voice_audit.harness.model",
    "voice_audit.scenarios",  # the data model's own base (Frozen, atomic writes, errors)
    "voice_audit.personas",  # the data model's persona axes
    "voice_audit.harness.runlog",
)


def _docstrings(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _examples(tree: ast.AST) -> set[int]:
    """Constants under an `examples=` keyword (a schema's sample values)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "examples":
            out |= {id(n) for n in ast.walk(node.value)}
    return out


def _text(node: ast.AST) -> str | None:
    """A string constant, or an f-string with `{}` for its fields."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}" for v in node.values
        )
    return None


def spelled_paths(source: str, name: str = "<source>") -> list[str]:
    """The run-folder paths a module's source spells, as `line: text`."""
    tree = ast.parse(source, filename=name)
    skip = _docstrings(tree) | _examples(tree)
    parts_of_fstrings = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    bad: list[str] = []
    for node in ast.walk(tree):  # parents first: a joined name is reported once, as joined
        if id(node) in skip or id(node) in parts_of_fstrings:
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            right = _text(node.right)
            if right is not None and right in JOINED:
                bad.append(f"{node.lineno}: / {right!r}")
                skip.add(id(node.right))
            continue
        text = _text(node)
        if text is None or any(c.isspace() for c in text):
            continue
        if FILES & set(_PART.findall(text)):
            bad.append(f"{node.lineno}: {text!r}")
    return sorted(set(bad), key=lambda b: int(b.split(":")[0]))


def violations(root: Path) -> list[str]:
    bad: list[str] = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root)
            if rel.is_relative_to(OWNER):
                continue
            bad += [
                f"{rel.as_posix()}:{b}" for b in spelled_paths(path.read_text(encoding="utf-8"), str(rel))
            ]
    return bad


def runlog_imports(root: Path) -> list[str]:
    """Imports of the run-log package outside the standard library and `RUNLOG_MAY_IMPORT`."""
    bad: list[str] = []
    for path in sorted((root / OWNER).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            for n in names:
                top = n.split(".")[0]
                if top in sys.stdlib_module_names or top == "__future__":
                    continue
                if not any(n == a or n.startswith(a + ".") for a in RUNLOG_MAY_IMPORT):
                    bad.append(f"{path.relative_to(root).as_posix()}: {n}")
    return bad


def test_only_the_runlog_package_spells_a_run_folder_path() -> None:
    bad = violations(ROOT)
    assert not bad, "use voice_audit.harness.runlog's names and path functions:\n" + "\n".join(bad)


def test_the_runlog_package_imports_only_the_data_model() -> None:
    assert not runlog_imports(ROOT)


def test_the_layout_names_what_the_rule_looks_for() -> None:
    assert {
        "run.json",
        "episodes.jsonl",
        "usage.jsonl",
        "events.jsonl",
        "call.wav",
        "metrics.parquet",
    } <= FILES
    assert {"episodes", "attempts", "stimuli", ".start-barrier"} <= JOINED


PLANTED = '''"""A docstring may name run.json and episodes/<id>/call.wav."""
from pathlib import Path
from pydantic import Field

def f(run_dir: Path, eid: str) -> list[object]:
    """So may a function's: usage.jsonl."""
    audio = Field(description="the recording", examples=["episodes/ab12/call.wav"])
    message = f"{run_dir}: no run.json; not a run folder"
    return [
        run_dir / "run.json",
        f"episodes/{eid}/call.wav",
        run_dir / "episodes" / eid,
        {"pairs.parquet": 1},
        Path(run_dir, "usage.jsonl"),
        run_dir / "report" / "audio",
        "stimuli-asr",
        audio,
        message,
    ]
'''


def test_the_rule_catches_planted_paths() -> None:
    assert spelled_paths(PLANTED) == [
        "10: / 'run.json'",
        "11: 'episodes/{}/call.wav'",
        "12: / 'episodes'",
        "13: 'pairs.parquet'",
        "14: 'usage.jsonl'",
    ]


def test_the_rules_catch_a_planted_module_and_import(tmp_path: Path) -> None:
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
    (tmp_path / OWNER).mkdir()
    (tmp_path / OWNER / "layout.py").write_text('RUN_JSON = "run.json"\nimport json\n')
    (tmp_path / OWNER / "bad.py").write_text("from voice_audit.harness.runtime import campaign\n")
    (tmp_path / "analysis" / "reader.py").write_text('import json\nPATH = "episodes.jsonl"\n')
    assert violations(tmp_path) == ["analysis/reader.py:2: 'episodes.jsonl'"]
    assert runlog_imports(tmp_path) == ["harness/runlog/bad.py: voice_audit.harness.runtime"]
