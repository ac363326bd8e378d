"""The method text a report carries: the sections of the method shipped with the package, and the
references to it in the report's other text pointed at that section."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from voice_audit.analysis.report.model import MethodSection

METHOD_FILE = Path(__file__).parent / "templates" / "method.md"
_METHOD_HEADING = re.compile(r"^## (\d+)\. (.+)$", re.MULTILINE)
_METHOD_REF = re.compile(r"(?:METHOD\.md|docs/method/index\.md),? section (\d+)")


def method_sections() -> list[MethodSection]:
    """The method text shipped with the package (templates/method.md), by numbered section."""
    text = METHOD_FILE.read_text(encoding="utf-8")
    heads = list(_METHOD_HEADING.finditer(text))
    return [
        MethodSection(
            number=int(h.group(1)),
            title=h.group(2).strip(),
            text=text[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)].strip(),
        )
        for i, h in enumerate(heads)
    ]


def method_refs(node: Any) -> Any:
    """References to the method point at the method section this report carries."""
    if isinstance(node, str):
        return _METHOD_REF.sub(r"method section \1 (Method, in this report)", node)
    if isinstance(node, Mapping):
        return {k: method_refs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [method_refs(v) for v in node]
    return node
