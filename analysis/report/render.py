"""Render the report model three ways (HTML, Markdown, JSON) and write the report folder.

The HTML is one file with its CSS and JS inline (autoescaped Jinja2, nothing fetched from anywhere);
figures are SVG files in figures/ and recordings of the shown pairs are copied to audio/ beside it,
both loaded only when their section is opened. Every write is atomic.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from voice_audit.analysis.report import wording
from voice_audit.analysis.report.build import Built
from voice_audit.scenarios.atomic import atomic_open, atomic_write_bytes

HTML_FILE = "index.html"
MD_FILE = "report.md"
JSON_FILE = "report.json"
_PKG = "voice_audit.analysis.report"
_SVG_HEAD = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_SVG_ID = re.compile(r'id="([^"]+)"')


def _static(name: str) -> str:
    return (Path(__file__).parent / "static" / name).read_text(encoding="utf-8")


def inline_svg(svg: str, prefix: str) -> Markup:
    """SVG markup for inlining: prolog dropped, ids prefixed so several figures never collide."""
    body = _SVG_HEAD.sub("", svg, count=1)
    for ident in set(_SVG_ID.findall(body)):
        new = f"{prefix}-{ident}"
        body = body.replace(f'id="{ident}"', f'id="{new}"').replace(f"#{ident})", f"#{new})")
        body = body.replace(f'href="#{ident}"', f'href="#{new}"')
    return Markup(body)


def _md(value: Any) -> str:
    """A Markdown table cell: pipes escaped, newlines folded."""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _pct(value: float, scale: float) -> str:
    return f"{100.0 * value / scale:.3f}" if scale > 0 else "0"


def _abs_or_zero(value: float | None) -> float:
    return abs(value) if isinstance(value, int | float) else 0.0


def _shapley_scale(rows: list[dict[str, float | None]]) -> float:
    """One bar scale per table, so bars compare across its rows."""
    return max([_abs_or_zero(v) for r in rows for v in r.values()] + [1e-12])


def _env(autoescape: bool) -> Environment:
    env = Environment(
        loader=PackageLoader(_PKG, "templates"),
        autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=autoescape),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        abs_or_zero=_abs_or_zero, fmt=wording.fmt, fmt_p=wording.fmt_p, md=_md, pct=_pct, ms=wording.ms
    )
    env.globals.update(
        shapley_scale=_shapley_scale,
        convention=wording.CONVENTION_TEXT,
        model_convention=wording.MODEL_CONVENTION_TEXT,
    )
    return env


def render_html(built: Built) -> str:
    """The page; figures stay files under figures/ loaded lazily (<img loading="lazy">), so the page
    is light and a collapsed section costs nothing until it is opened."""
    forests = sorted(n for n in built.figures if n.startswith("forest-"))
    tpl = _env(True).get_template("report.html")
    return tpl.render(
        r=built.report,
        figures_forest=forests,
        css=Markup(_static("report.css")),
        js=Markup(_static("report.js")),
    )


def render_markdown(built: Built) -> str:
    return _env(False).get_template("report.md").render(r=built.report, figures=built.figures)


def render_json(built: Built) -> str:
    return (
        json.dumps(built.report.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False) + "\n"
    )


def _drop_stale(folder: Path, pattern: str, keep: set[str], root: Path) -> None:
    """A previous report in the same folder must not leave recordings or figures behind."""
    if folder.is_dir():
        for f in folder.glob(pattern):
            if f.relative_to(root).as_posix() not in keep:
                f.unlink()


def write_report(built: Built, out_dir: str | Path) -> list[Path]:
    """index.html, report.md, report.json, figures/*.svg and (unless redacted) audio/*.wav."""
    out = Path(out_dir)
    written: list[Path] = []

    def put(rel: str, data: bytes) -> None:
        atomic_write_bytes(out / rel, data, fsync=False)
        written.append(out / rel)

    _drop_stale(out / "figures", "*.svg", {f"figures/{n}" for n in built.figures}, out)
    keep_audio = set() if built.report.redaction.redacted else set(built.copies)
    _drop_stale(out / "audio", "*.wav", keep_audio, out)
    for name, svg in sorted(built.figures.items()):
        put(f"figures/{name}", svg.encode())
    if not built.report.redaction.redacted:
        for rel, src in sorted(built.copies.items()):
            dest = out / rel
            with open(src, "rb") as fh, atomic_open(dest, fsync=False) as copy:
                shutil.copyfileobj(fh, copy)
            written.append(dest)
    put(JSON_FILE, render_json(built).encode())
    put(MD_FILE, render_markdown(built).encode())
    put(HTML_FILE, render_html(built).encode())
    return written
