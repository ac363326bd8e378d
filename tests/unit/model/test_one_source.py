"""Each vocabulary has one source, and nothing in the product spells it out again.

The persona axes live in `personas.AXES`, the built-in outcomes in `scenarios.vocabulary`, the
utterance kinds and escalation reasons in the event model, the `${NAME}` pattern in
`harness.model.secrets`. A copy drifts silently (an axis added to the catalogue but not mined, an
outcome the caller can produce but no metric counts), so the users are compared with the source
here, and a scan of the product's source refuses a second spelling of any of them."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.rating.tasks import QUESTIONS
from voice_audit.analysis.subgroups_run.attributes import PERSONA, VOICE_DERIVED
from voice_audit.harness.caller.policy import Decision, Say
from voice_audit.harness.model.events import (
    CallerUtteranceStart,
    EscalationReason,
    EscalationRequested,
    UtteranceKind,
)
from voice_audit.harness.model.secrets import ENV_REF
from voice_audit.personas import AXES, Axis
from voice_audit.scenarios import BUILTIN_OUTCOMES, Outcome

ROOT = Path(__file__).parents[3]
PACKAGES = ("harness", "agents", "analysis", "personas", "scenarios")

# Each vocabulary and the one file allowed to spell it.
VOCABULARIES: dict[str, tuple[frozenset[str], str]] = {
    "persona axes": (frozenset(AXES), "personas/_model.py"),
    "built-in outcomes": (frozenset(BUILTIN_OUTCOMES), "scenarios/vocabulary.py"),
    "utterance kinds": (frozenset(get_args(UtteranceKind)), "harness/model/events.py"),
    "escalation reasons": (frozenset(get_args(EscalationReason)), "harness/model/events.py"),
}


def test_users_take_the_persona_axes_from_personas() -> None:
    assert get_args(Axis) == AXES
    assert tuple(QUESTIONS) == AXES
    assert tuple(p for p in PERSONA if p not in VOICE_DERIVED) == AXES


def test_users_take_the_outcomes_and_kinds_from_their_source() -> None:
    assert get_args(Outcome) == BUILTIN_OUTCOMES
    counted = [m.name.removeprefix("outcome_") for m in CATALOGUE.values() if m.family == "terminal_outcome"]
    assert [o for o in counted if o in BUILTIN_OUTCOMES] == list(BUILTIN_OUTCOMES)
    assert CallerUtteranceStart.model_fields["kind"].annotation == UtteranceKind
    assert EscalationRequested.model_fields["reason"].annotation == EscalationReason
    hints = {f: Say.__dataclass_fields__[f].type for f in ("kind",)}
    assert hints == {"kind": "UtteranceKind"}  # postponed annotations: the name, not a copy
    assert Decision.__dataclass_fields__["escalation"].type == "EscalationReason | None"


def _strings(node: ast.AST) -> list[str] | None:
    """The string elements of a tuple, list or set display, or of a `Literal[...]` subscript."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal":
        node = node.slice
    if not isinstance(node, ast.Tuple | ast.List | ast.Set):
        return None
    out = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return out if len(out) == len(node.elts) else None


def copies(root: Path) -> list[str]:
    """Places outside a vocabulary's source that spell all of it (or the `${NAME}` pattern)."""
    found: list[str] = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            literal_slices: set[int] = set()
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and ENV_REF.pattern in node.value
                    and rel != "harness/model/secrets.py"
                ):
                    found.append(f"{rel}:{node.lineno}: the ${{NAME}} pattern")
                if id(node) in literal_slices:
                    continue  # already read as its `Literal[...]`
                if isinstance(node, ast.Subscript):
                    literal_slices.add(id(node.slice))
                words = _strings(node)
                if not words:
                    continue
                for name, (vocab, home) in VOCABULARIES.items():
                    if rel != home and vocab <= set(words):
                        found.append(f"{rel}:{node.lineno}: {name}")
    return found


def test_no_product_module_spells_a_vocabulary_again() -> None:
    found = copies(ROOT)
    assert not found, "import the one source instead:\n" + "\n".join(found)


def test_the_scan_finds_planted_copies(tmp_path: Path) -> None:
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
    (tmp_path / "analysis" / "axes.py").write_text(
        f"AXES = {tuple(AXES)!r}\nSOME = ('accent', 'affect', 'other')\n"
    )
    kinds = ", ".join(repr(k) for k in get_args(UtteranceKind))
    (tmp_path / "harness" / "policy.py").write_text(
        f"from typing import Literal\nKind = Literal[{kinds}]\nREF = re.compile({ENV_REF.pattern!r})\n"
    )
    (tmp_path / "personas" / "_model.py").write_text(f"AXES = {list(AXES)!r}\n")
    assert sorted(copies(tmp_path)) == [
        "analysis/axes.py:1: persona axes",
        "harness/policy.py:2: utterance kinds",
        "harness/policy.py:3: the ${NAME} pattern",
    ]
    assert re.fullmatch(ENV_REF, "${VENDOR_TOKEN}")
