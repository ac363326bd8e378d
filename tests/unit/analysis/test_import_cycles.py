"""No import cycles among the product's modules.

A cycle makes a module's meaning depend on which side is imported first, and hides a seam that
should be a module of its own (shared names both sides need). The graph is read from the source
with `ast`: every import anywhere in a file (at the top, inside a function, under TYPE_CHECKING),
relative imports resolved against the file's package and `voice_audit.<folder>` names mapped onto
the folders, so moving an import into a function or under TYPE_CHECKING does not hide a cycle."""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

ROOT = Path(__file__).parents[3]
PACKAGES = ("harness", "agents", "analysis", "personas", "scenarios")


def modules(root: Path) -> dict[str, Path]:
    """Every product module by its installed name (a package by its `__init__.py`)."""
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(("voice_audit", *parts))] = path
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the product modules it imports. `from a.b import c` is an edge to the module
    `a.b.c` where there is one, else to `a.b` (a name of its `__init__` or module); an import of
    anything else (the standard library, third parties) is no edge."""
    mods = modules(root)

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        home = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                deps.update(m for a in node.names if (m := known(a.name)))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = home.split(".")[: len(home.split(".")) - (node.level - 1)]
                    module = ".".join([*base, node.module] if node.module else base)
                else:
                    module = node.module or ""
                for alias in node.names:
                    target = f"{module}.{alias.name}"
                    found = target if target in mods else known(module)
                    if found:
                        deps.add(found)
        deps.discard(name)
        graph[name] = deps
    return graph


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _cycle_through(graph: dict[str, set[str]], members: list[str]) -> list[str]:
    """A shortest cycle through the component's first module, to name in the failure."""
    first, inside = members[0], set(members)
    came_from: dict[str, str] = {}
    queue = deque([first])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node] & inside):
            if child == first:
                path = [node]
                while path[-1] != first:
                    path.append(came_from[path[-1]])
                return [first, *reversed(path[:-1]), first]
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    return members


def import_cycles(root: Path) -> list[str]:
    """Each cycle as `a -> b -> a`, one per group of modules that import each other."""
    graph = import_graph(root)
    return [" -> ".join(_cycle_through(graph, comp)) for comp in _components(graph)]


def test_product_modules_import_no_cycle() -> None:
    cycles = import_cycles(ROOT)
    assert not cycles, "import cycles (move what both sides need into a module of its own):\n" + "\n".join(
        cycles
    )


def test_the_graph_sees_what_the_rule_relies_on() -> None:
    graph = import_graph(ROOT)
    # relative imports, names of a package's __init__, and submodules named in a from-import
    assert "voice_audit.harness.audio.dsp" in graph["voice_audit.harness.audio"]
    assert len(graph) > 300  # every product package was read


def _plant(root: Path, files: dict[str, str]) -> None:
    for pkg in PACKAGES:
        (root / pkg).mkdir(exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            if parent != Path(".") and not (root / parent / "__init__.py").exists():
                (root / parent / "__init__.py").write_text("")
        path.write_text(text)


def test_a_planted_cycle_is_found_and_named(tmp_path: Path) -> None:
    _plant(
        tmp_path,
        {
            "harness/audio/a.py": "from voice_audit.harness.audio.b import B\nA = 1\n",
            "harness/audio/b.py": "def f() -> None:\n    from .a import A\n",
            "agents/x/p.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from voice_audit.agents.x import q\n"
            ),
            "agents/x/q.py": "import voice_audit.agents.x.r\n",
            "agents/x/r.py": "from ..x import p\n",
            "personas/fine.py": "from voice_audit.harness.audio import a\nimport json\n",
        },
    )
    assert import_cycles(tmp_path) == [
        "voice_audit.agents.x.p -> voice_audit.agents.x.q -> voice_audit.agents.x.r -> voice_audit.agents.x.p",
        "voice_audit.harness.audio.a -> voice_audit.harness.audio.b -> voice_audit.harness.audio.a",
    ]
    (tmp_path / "harness/audio/b.py").write_text("B = 2\n")
    assert import_cycles(tmp_path) == [
        "voice_audit.agents.x.p -> voice_audit.agents.x.q -> voice_audit.agents.x.r -> voice_audit.agents.x.p"
    ]
