"""Dependencies point one way: analysis reads run folders and the data model only (never the
runtime, the agents or an audio engine), and a private module or name (`a.b._c`) is imported only inside
its package `a.b`: never from another top-level package nor from another subpackage of the same one.

The packages are named by their installed names (`voice_audit.agents`), never by their folders' bare
names: the repository root is on `sys.path` under pytest and `python -m`, so `import agents` would
load a second copy of our files there, and in an installed environment finds another project's
`agents` (the OpenAI Agents SDK's) or nothing."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[3]
PACKAGES = ("harness", "agents", "personas", "scenarios", "analysis")
# Where Python and YAML that names our modules lives: the product, its tests, examples and benchmarks.
SCANNED = (*PACKAGES, "tests", "examples", "benchmarks", "campaigns")
# A dotted module path of one of our packages by its bare name (`agents.testing`), optionally with
# `:attr`; preceded by neither a name character nor a dot (`voice_audit.agents.testing` is fine).
_BARE_PATH = re.compile(r"(?<![\w.])(" + "|".join(PACKAGES) + r")((?:\.\w+)+)(:[\w.]+)?")
ALLOWED_HARNESS = (
    "voice_audit.harness.model",
    "voice_audit.harness.runlog",
    "voice_audit.harness.audio.dsp",
    "voice_audit.harness.audio.wer",
    "voice_audit.harness.audio.errors",
    # Child processes (fork server, worker pool): standard library only, no runtime or engine code
    # (tests/unit/procs/test_procs.py checks it imports nothing else of ours), so the audio pass
    # and the log readers share the harness's one process mechanism instead of keeping their own.
    "voice_audit.harness.procs",
)
# Modules analysis must never load, by any path (a package __init__ importing eagerly included).
FORBIDDEN_LOADED = (
    "voice_audit.harness.runtime",
    "voice_audit.harness.caller",
    "voice_audit.harness.planning",
    "voice_audit.harness.registry",
    "voice_audit.harness.llm",
    "voice_audit.harness.audio.tts_pool",
    "voice_audit.harness.audio.synth",
    "voice_audit.harness.audio.recognizer",
    "voice_audit.harness.audio.registry",
    "voice_audit.harness.audio.espeak",
    "voice_audit.agents",
)
ANALYSIS_ENTRY_POINTS = (
    "voice_audit.analysis",
    "voice_audit.analysis.pipeline",
    "voice_audit.analysis.cli",
    "voice_audit.analysis.report",
    "voice_audit.analysis.report.cli",
    "voice_audit.analysis.subgroups_run",
    "voice_audit.analysis.subgroups_run.cli",
    "voice_audit.analysis.rating",
    "voice_audit.analysis.rating.cli",
)


def _home(root: Path, path: Path) -> str:
    """The package a file belongs to, by its installed name (a package's `__init__` belongs to the
    package itself): `agents/protocols/wire.py` is in `voice_audit.agents.protocols`."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(["voice_audit", *parts[:-1]])


def _statements(path: Path, home: str) -> list[tuple[str, list[str]]]:
    """Each import of a file as (module, names taken from it); absolute, relative imports resolved
    against the file's package `home`. A `from` import's name may be a submodule."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = home.split(".")[: len(home.split(".")) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            elif node.module:
                module = node.module
            else:
                continue
            out.append((module, [a.name for a in node.names if a.name != "*"]))
    return out


def _imports(path: Path, home: str = "") -> list[str]:
    """The modules a file imports (with the submodule taken from `voice_audit.harness` or
    `voice_audit.harness.audio`)."""
    out: list[str] = []
    for module, names in _statements(path, home):
        out.append(module)
        if module in ("voice_audit.harness", "voice_audit.harness.audio"):
            out += [f"{module}.{n}" for n in names]
    return out


def _owner(root: Path, parts: list[str]) -> str | None:
    """The package a private module or name belongs to: `a.b._c` (module or name) is `a.b`'s;
    `a.b.mod._name` is `a.b`'s too (a private name of a module is private to its package)."""
    i = next((i for i, p in enumerate(parts) if i and p.startswith("_") and not p.startswith("__")), None)
    if i is None:
        return None
    owner = parts[:i]
    if (root.joinpath(*owner[1:]).with_suffix(".py")).is_file():
        owner = owner[:-1]
    return ".".join(owner)


def analysis_violations(root: Path) -> list[str]:
    bad: list[str] = []
    for path in sorted((root / "analysis").rglob("*.py")):
        for mod in _imports(path, _home(root, path)):
            top = ".".join(mod.split(".")[:2])
            if top == "voice_audit.agents" or (
                top == "voice_audit.harness"
                and not any(mod == a or mod.startswith(a + ".") for a in ALLOWED_HARNESS)
            ):
                bad.append(f"{path.relative_to(root)}: {mod}")
    return bad


def private_violations(root: Path) -> list[str]:
    """A private module or name (`a.b._c`) imported from outside its package `a.b`: from another
    top-level package, or from another subpackage of the same one (`voice_audit.agents.serve` reaching into
    `voice_audit.agents.protocols._secrets`). Inside `a.b` and its subpackages it is fair game."""

    def outside(home: str, dotted: str) -> bool:
        parts = dotted.split(".")
        own = len(parts) > 1 and parts[0] == "voice_audit" and parts[1] in PACKAGES
        owner = _owner(root, parts) if own else None
        return owner is not None and home != owner and not home.startswith(owner + ".")

    bad: list[str] = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            home = _home(root, path)
            for module, names in _statements(path, home):
                found = (
                    [module]
                    if outside(home, module)
                    else [f"{module}.{n}" for n in names if outside(home, f"{module}.{n}")]
                )
                bad += [f"{path.relative_to(root)}: {m}" for m in found]
    return bad


def _names_our_module(root: Path, top: str, rest: str) -> bool:
    """`top.rest` names a module or package of ours (`scenarios.lock` is a file name, not a module)."""
    first = root / top / rest.split(".")[1]
    return first.is_dir() or first.with_suffix(".py").is_file()


def bare_name_violations(root: Path) -> list[str]:
    """Our packages named by their bare names: imports, module paths given as strings (`python -m`'s
    argument, `importlib.import_module`'s, a patch target) and `module:attr` references anywhere in a
    string or a YAML file (an adapter of a campaign)."""
    bad: list[str] = []
    for folder in SCANNED:
        for path in sorted((root / folder).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.suffix in (".yaml", ".yml"):
                text = path.read_text(encoding="utf-8")
                bad += [
                    f"{rel}: {m.group(0)}"
                    for m in _BARE_PATH.finditer(text)
                    if m.group(3) and _names_our_module(root, m.group(1), m.group(2))
                ]
            if path.suffix != ".py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                if isinstance(node, ast.Import):
                    named = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    named = [node.module]
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    whole = _BARE_PATH.fullmatch(node.value)
                    refs = [m for m in _BARE_PATH.finditer(node.value) if m.group(3)]
                    named = [
                        m.group(0)
                        for m in ([whole] if whole else []) + refs
                        if _names_our_module(root, m.group(1), m.group(2))
                    ]
                else:
                    continue
                bad += [f"{rel}: {n}" for n in dict.fromkeys(named) if n.split(".")[0] in PACKAGES]
    return bad


def test_no_file_names_a_package_by_its_bare_name() -> None:
    here = Path(__file__).relative_to(ROOT).as_posix()
    bad = [b for b in bare_name_violations(ROOT) if not b.startswith(here + ":")]  # its planted files
    assert not bad, "name the package voice_audit.<package>:\n" + "\n".join(bad)


def test_analysis_imports_only_the_data_model_from_harness() -> None:
    bad = analysis_violations(ROOT)
    assert not bad, (
        "analysis may import only " + ", ".join(ALLOWED_HARNESS) + " from harness:\n" + "\n".join(bad)
    )


def test_no_package_imports_another_packages_private_module() -> None:
    bad = private_violations(ROOT)
    assert not bad, "use the other package's public surface (its __init__):\n" + "\n".join(bad)


def _plant(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            if parent != Path(".") and not (root / parent / "__init__.py").exists():
                (root / parent / "__init__.py").write_text("")
        path.write_text(text)


def test_the_rules_catch_planted_violations(tmp_path: Path) -> None:
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
    _plant(
        tmp_path,
        {
            "scenarios/_model.py": "",
            "agents/protocols/_secrets.py": "def install() -> None: ...\n",
            "agents/protocols/wire.py": "def _helper() -> None: ...\n",
            "agents/protocols/sub/deep.py": "from voice_audit.agents.protocols._secrets import install\n",
            "agents/protocols/stream.py": "from voice_audit.agents.protocols import _secrets\nfrom ._secrets import install\n",
            "agents/protocols/__init__.py": "from voice_audit.agents.protocols._secrets import install\n",
            "analysis/bad.py": "from voice_audit.harness.audio.tts_pool import TTSPool\n",
            "harness/bad.py": "from voice_audit.scenarios._model import Scenario\n",
            "scenarios/fine.py": "from voice_audit.scenarios._model import Scenario\n",
            "agents/serve/server.py": "from voice_audit.agents.protocols._secrets import install\n",
            "agents/serve/named.py": "from voice_audit.agents.protocols import _secrets\n",
            "agents/serve/helper.py": "from voice_audit.agents.protocols.wire import _helper\n",
            "agents/serve/relative.py": "from ..protocols._secrets import install\n",
            "agents/serve/public.py": "from voice_audit.agents.protocols import install\nimport voice_audit.agents.protocols.wire\n",
            "personas/bad.py": "import voice_audit.agents.protocols._secrets\n",
        },
    )
    assert analysis_violations(tmp_path) == ["analysis/bad.py: voice_audit.harness.audio.tts_pool"]
    assert sorted(private_violations(tmp_path)) == [
        "agents/serve/helper.py: voice_audit.agents.protocols.wire._helper",
        "agents/serve/named.py: voice_audit.agents.protocols._secrets",
        "agents/serve/relative.py: voice_audit.agents.protocols._secrets",
        "agents/serve/server.py: voice_audit.agents.protocols._secrets",
        "harness/bad.py: voice_audit.scenarios._model",
        "personas/bad.py: voice_audit.agents.protocols._secrets",
    ]


def test_the_bare_name_rule_catches_planted_violations(tmp_path: Path) -> None:
    for folder in SCANNED:
        (tmp_path / folder).mkdir()
    _plant(
        tmp_path,
        {
            "agents/testing.py": "",
            "harness/cli.py": "",
            "harness/audio/espeak.py": "",
            "scenarios/library/a.yaml": "id: a\n",
            "analysis/bad.py": "import agents.testing\nfrom voice_audit.harness import cli\n",
            "personas/bad.py": "from harness.audio import espeak\nimport scenarios\n",
            "tests/test_bad.py": (
                "import subprocess, sys\n"
                "from . import helpers\n"
                "import agentsx\n"
                'subprocess.run([sys.executable, "-m", "harness.cli"])\n'
                'subprocess.run([sys.executable, "-m", "voice_audit.harness.cli"])\n'
                'LOCK = "scenarios.lock"\n'
                'DOC = "the analysis.observer_gate option; voice_audit.agents.testing:scripted"\n'
                'CAMPAIGN = "agents:\\n  - {name: a, adapter: agents.testing:scripted}\\n"\n'
            ),
            "examples/run.py": 'monkeypatch_target = "harness.audio.espeak.EspeakBackend"\n',
            "benchmarks/bench.py": 'import importlib\nimportlib.import_module("harness.audio")\n',
            "campaigns/old.yaml": "agents:\n  - {name: a, adapter: agents.testing:scripted}\n"
            "  - {name: b, adapter: voice_audit.agents.testing:scripted}\n",
        },
    )
    assert sorted(bare_name_violations(tmp_path)) == [
        "analysis/bad.py: agents.testing",
        "benchmarks/bench.py: harness.audio",
        "campaigns/old.yaml: agents.testing:scripted",
        "examples/run.py: harness.audio.espeak.EspeakBackend",
        "personas/bad.py: harness.audio",
        "personas/bad.py: scenarios",
        "tests/test_bad.py: agents.testing:scripted",
        "tests/test_bad.py: harness.cli",
    ]


def test_analysis_loads_no_runtime_agent_or_engine_module() -> None:
    code = (
        "import importlib, sys\n"
        f"for m in {ANALYSIS_ENTRY_POINTS!r}: importlib.import_module(m)\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    bad = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN_LOADED)]
    assert not bad, bad
    assert "voice_audit.harness.model" in loaded  # the check sees what analysis really loads
