"""The docs site's generated references: the command line (from the Typer app, every plugin command
mounted) and the file formats (from `voice-audit schema`). Generated, never hand-written, so they
cannot drift from the product; a test compares the committed pages with a fresh generation.

    python -m voice_audit.harness.reference_docs docs/reference
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from voice_audit.harness.runlog import atomic_write_bytes

CLI_PAGE = "cli.md"
SCHEMA_PAGE = "schemas.md"


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _option_row(p: Any) -> str:
    if p.param_type_name == "argument":
        name = f"`{(p.metavar or p.name or '').upper()}`"
        kind = "argument"
    else:
        opts = list(p.opts) + list(getattr(p, "secondary_opts", []))
        name = " / ".join(f"`{o}`" for o in opts)
        bare = p.bare_type()
        kind = "flag" if getattr(p, "is_flag", False) else getattr(bare, "__name__", str(bare)).lower()
    default = p.default
    root = Path(__file__).resolve().parents[1]
    if isinstance(default, Path) and default.is_absolute() and default.is_relative_to(root):
        default = default.relative_to(
            root
        )  # a folder of the package: its repository path, not this machine's
    shown = "" if default is None or callable(default) or default == () else f"`{default}`"
    help_text = getattr(p, "help", None) or ""
    required = " (required)" if p.required else ""
    return f"| {name} | {_cell(kind)}{required} | {shown} | {_cell(help_text)} |"


def _command_md(cmd: Any, path: list[str], out: list[str]) -> None:
    """`cmd` is a command of Typer's click (Typer vendors its own copy of click)."""
    ctx = cmd.context_class(cmd, info_name=" ".join(path))
    if path[1:]:
        out.append(f"{'#' * min(len(path), 4)} `{' '.join(path)}`\n")
    help_text = (cmd.help or "").strip()
    if help_text:
        out.append(help_text.replace("\b\n", "") + "\n")
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    out.append(f"```\n{' '.join(path)} {usage}\n```\n")
    params = [p for p in cmd.params if p.name != "help" and not getattr(p, "hidden", False)]
    if params:
        out.append("| parameter | type | default | meaning |\n|---|---|---|---|")
        out.extend(_option_row(p) for p in params)
        out.append("")
    if hasattr(cmd, "commands"):
        for name in sorted(cmd.commands):
            sub = cmd.commands[name]
            if not getattr(sub, "hidden", False):
                _command_md(sub, [*path, name], out)


def cli_markdown() -> str:
    from voice_audit.harness.cli import _mount_plugins, app

    _mount_plugins([])
    root = typer.main.get_command(app)
    out = [
        "# Command-line reference\n",
        "Generated from the command line itself (`python -m voice_audit.harness.reference_docs docs/reference`); "
        "`voice-audit COMMAND --help` prints the same.\n",
    ]
    _command_md(root, ["voice-audit"], out)
    return "\n".join(out).rstrip() + "\n"


def _type_of(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        return spec["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in spec:
        return " or ".join(_type_of(s) for s in spec["anyOf"])
    if "enum" in spec:
        return " / ".join(f"`{v}`" for v in spec["enum"])
    if "const" in spec:
        return f"`{spec['const']}`"
    kind = spec.get("type", "any")
    if kind == "array" and "items" in spec:
        items = spec["items"]
        return f"list of {_type_of(items) if isinstance(items, dict) else 'values'}"
    if kind == "object" and isinstance(spec.get("additionalProperties"), dict):
        return f"map of {_type_of(spec['additionalProperties'])}"
    return str(kind)


def _model_md(title: str, schema: dict[str, Any], level: str, out: list[str]) -> None:
    out.append(f"{level} {title}\n")
    if schema.get("description"):
        out.append(" ".join(str(schema["description"]).split()) + "\n")
    props: dict[str, Any] = schema.get("properties", {})
    if not props:
        return
    required = set(schema.get("required", []))
    out.append("| field | type | required | meaning |\n|---|---|---|---|")
    for name, spec in props.items():
        out.append(
            f"| `{name}` | {_cell(_type_of(spec))} | {'yes' if name in required else ''} | "
            f"{_cell(spec.get('description', ''))} |"
        )
    out.append("")


def schema_markdown() -> str:
    from voice_audit.harness.schemas import schema_documents

    out = [
        "# File formats\n",
        "Generated from the JSON Schemas `voice-audit schema -o DIR` writes "
        "(`python -m voice_audit.harness.reference_docs docs/reference`). Every model forbids unknown fields.\n",
    ]
    for name, raw in sorted(schema_documents().items()):
        doc: dict[str, Any] = dict(raw)
        out.append(f"## {name}\n")
        out.append(f"`voice-audit schema` writes it as `{name}.schema.json`.\n")
        if "properties" in doc:
            _model_md(str(doc.get("title", name)), doc, "###", out)
        elif "oneOf" in doc or "discriminator" in doc:
            kinds = [r["$ref"].rsplit("/", 1)[-1] for r in doc.get("oneOf", []) if "$ref" in r]
            out.append("A tagged union on `type`: " + ", ".join(f"`{k}`" for k in kinds) + ".\n")
        for def_name, spec in sorted(doc.get("$defs", {}).items()):
            if spec.get("properties"):
                _model_md(f"{name} · {def_name}", spec, "####", out)
    return "\n".join(out).rstrip() + "\n"


def write_reference(folder: Path) -> list[Path]:
    pages = {CLI_PAGE: cli_markdown(), SCHEMA_PAGE: schema_markdown()}
    written = []
    for name, text in pages.items():
        path = folder / name
        atomic_write_bytes(path, text.encode())
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else Path("docs/reference")
    for path in write_reference(folder):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
