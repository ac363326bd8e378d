"""Safe YAML loading that remembers where every value came from, so validation errors point at a line."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from voice_audit.scenarios.errors import ConfigError, ConfigErrors

Position = tuple[int, int]
PathKey = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


class _Positions:
    """Line/column (1-based) of every mapping key and sequence item, by its path in the document."""

    def __init__(self) -> None:
        self._pos: dict[PathKey, Position] = {}

    def add(self, key: PathKey, mark: yaml.Mark) -> None:
        self._pos.setdefault(key, (mark.line + 1, mark.column + 1))

    def nearest(self, key: Iterable[str | int]) -> Position | None:
        parts = tuple(key)
        while True:
            if parts in self._pos:
                return self._pos[parts]
            if not parts:
                return None
            parts = parts[:-1]


def _walk(node: yaml.Node, prefix: PathKey, positions: _Positions, path: str) -> None:
    positions.add(prefix, node.start_mark)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, yaml.Mark] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                mark = key_node.start_mark
                raise ConfigError(
                    f"duplicate key '{key}' (first at line {seen[key].line + 1})",
                    path=path,
                    line=mark.line + 1,
                    column=mark.column + 1,
                    fix="keep one of the two entries",
                )
            seen[key] = key_node.start_mark
            positions.add((*prefix, key), key_node.start_mark)
            _walk(value_node, (*prefix, key), positions, path)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*prefix, i), positions, path)


class YamlDocument:
    """A parsed YAML file plus the positions of its parts."""

    def __init__(self, path: Path, data: Any, positions: _Positions) -> None:
        self.path = path
        self.data = data
        self._positions = positions

    def position(self, key: Iterable[str | int]) -> Position | None:
        return self._positions.nearest(key)

    def error(self, key: Iterable[str | int], message: str, fix: str | None = None) -> ConfigError:
        pos = self.position(key)
        return ConfigError(
            message,
            path=self.path,
            line=pos[0] if pos else None,
            column=pos[1] if pos else None,
            fix=fix,
        )

    def validate(self, model: type[M], *, context: dict[str, Any] | None = None) -> M:
        """Validate into `model`, turning the first pydantic error into a positioned ConfigError."""
        try:
            return model.model_validate(self.data, context=context)
        except ValidationError as exc:
            raise pydantic_error(self, exc, model.__name__) from None


def pydantic_error(doc: YamlDocument, exc: ValidationError, what: str) -> ConfigError:
    """Every error of `exc`, each at its field's line:col with a fix (`ConfigErrors` when several)."""
    found: list[ConfigError] = []
    seen: set[str] = set()
    for err in exc.errors():
        one = _one_error(doc, err, what)
        if one.one_line() not in seen:
            seen.add(one.one_line())
            found.append(one)
    return found[0] if len(found) == 1 else ConfigErrors(found)


_TYPE_FIXES: dict[str, str] = {
    "int_parsing": "give a whole number",
    "int_type": "give a whole number",
    "float_parsing": "give a number",
    "float_type": "give a number",
    "bool_parsing": "give true or false",
    "bool_type": "give true or false",
    "string_type": "give a text value",
    "list_type": "give a list ([...] or one '- item' per line)",
    "tuple_type": "give a list ([...] or one '- item' per line)",
    "dict_type": "give a mapping (key: value lines)",
    "model_type": "give a mapping (key: value lines)",
    "greater_than": "give a larger value",
    "greater_than_equal": "give a larger value",
    "less_than": "give a smaller value",
    "less_than_equal": "give a smaller value",
    "too_short": "add entries",
    "too_long": "remove entries (at most {max_length})",
    "string_too_short": "give a non-empty value",
    "string_too_long": "shorten it to at most {max_length} characters",
    "string_pattern_mismatch": "write it to match {pattern}",
    "int_from_float": "give a whole number",
    "int_parsing_size": "give a whole number of at most 19 digits",
    "finite_number": "give a finite number",
    "multiple_of": "give a multiple of {multiple_of}",
    "decimal_parsing": "give a number",
    "decimal_type": "give a number",
    "enum": "use {expected}",
    "none_required": "remove the value",
    "set_type": "give a list ([...] or one '- item' per line)",
    "frozen_set_type": "give a list ([...] or one '- item' per line)",
    "model_attributes_type": "give a mapping (key: value lines)",
    "union_tag_invalid": "use {expected_tags}",
    "union_tag_not_found": "add '{discriminator}'",
    "date_parsing": "give a date as YYYY-MM-DD",
    "date_type": "give a date as YYYY-MM-DD",
    "date_from_datetime_parsing": "give a date as YYYY-MM-DD",
    "datetime_parsing": "give a date and time as YYYY-MM-DDTHH:MM:SS",
    "datetime_type": "give a date and time as YYYY-MM-DDTHH:MM:SS",
    "url_parsing": "give a full URL such as http://127.0.0.1:8080/v1",
    "url_type": "give a full URL such as http://127.0.0.1:8080/v1",
    "url_scheme": "begin the URL with {expected_schemes}",
    "url_syntax_violation": "give a full URL such as http://127.0.0.1:8080/v1",
    "url_too_long": "shorten the URL",
    "date_from_datetime_inexact": "give a date as YYYY-MM-DD, without a time",
    "date_past": "give a date in the past",
    "date_future": "give a date in the future",
    "time_type": "give a time as HH:MM:SS",
    "time_parsing": "give a time as HH:MM:SS",
    "datetime_from_date_parsing": "give a date and time as YYYY-MM-DDTHH:MM:SS",
    "datetime_object_invalid": "give a real date and time",
    "datetime_past": "give a date and time in the past",
    "datetime_future": "give a date and time in the future",
    "timezone_naive": "give the time without a timezone",
    "timezone_aware": "add a timezone, e.g. +00:00",
    "timezone_offset": "use the timezone offset {tz_expected}",
    "time_delta_type": "give a duration in seconds",
    "time_delta_parsing": "give a duration in seconds",
    "string_unicode": "give valid UTF-8 text",
    "string_not_ascii": "use ASCII characters only",
    "bytes_type": "give a text value",
    "decimal_max_digits": "give at most {max_digits} digits",
    "decimal_max_places": "give at most {decimal_places} decimal places",
    "decimal_whole_digits": "give at most {whole_digits} digits before the point",
    "set_item_not_hashable": "give plain values (text or numbers) as items",
    "mapping_type": "give a mapping (key: value lines)",
    "frozen_dict_type": "give a mapping (key: value lines)",
    "iterable_type": "give a list ([...] or one '- item' per line)",
    "invalid_key": "use text keys",
    "uuid_type": "give a UUID",
    "uuid_parsing": "give a UUID",
    "is_instance_of": "give a value of the documented type (docs/reference)",
    "json_invalid": "give valid JSON",
    "json_type": "give JSON text",
}

# Said when pydantic gives no context to fill a template in.
_BARE_FIXES: dict[str, str] = {
    "too_long": "remove entries",
    "string_too_long": "shorten it",
    "string_pattern_mismatch": "use the documented form (docs/reference)",
    "multiple_of": "give a multiple of the documented step",
    "enum": "use one of the allowed values",
    "union_tag_invalid": "use one of the allowed kinds",
    "union_tag_not_found": "add the field naming the kind",
    "url_scheme": "begin the URL with http:// or https://",
    "timezone_offset": "use the documented timezone offset",
    "decimal_max_digits": "give fewer digits",
    "decimal_max_places": "give fewer decimal places",
    "decimal_whole_digits": "give fewer digits before the point",
}


def _type_fix(err: Any) -> str | None:
    """The generic fix of a pydantic error type, filled in with what pydantic knows (a pattern, a bound)."""
    template = _TYPE_FIXES.get(err["type"])
    if template is None:
        return None
    try:
        return template.format(**(err.get("ctx") or {}))
    except (KeyError, IndexError, ValueError):
        return _BARE_FIXES.get(err["type"], "give a value of the documented type")


def _one_error(doc: YamlDocument, err: Any, what: str) -> ConfigError:
    loc = tuple(p for p in err["loc"] if isinstance(p, str | int))
    cause = (err.get("ctx") or {}).get("error")
    loc += tuple(getattr(cause, "loc", ()))  # a validator that knows the spot
    # Tagged unions and validators add non-document segments; keep the longest real prefix.
    field = ".".join(str(p) for p in loc) or "(top level)"
    msg = err["msg"]
    if err["type"] == "missing":
        fix = f"add '{loc[-1]}'" if loc else None
        return doc.error(loc[:-1], f"{what}: missing required field '{field}'", fix=fix)
    if err["type"] == "extra_forbidden":
        return doc.error(loc, f"{what}: unknown field '{field}'", fix="remove it or check its spelling")
    fix = getattr(cause, "fix", None)
    if fix is None and err["type"] == "literal_error":
        fix = f"use {(err.get('ctx') or {}).get('expected', 'one of the allowed values')}"
    if fix is None:
        fix = _type_fix(err)
    if err["type"] == "value_error" and isinstance(msg, str) and msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return doc.error(loc, f"{what}: {field}: {msg}", fix=fix)


def load_yaml(path: str | Path) -> YamlDocument:
    """Parse a YAML file with the safe loader; syntax errors become one positioned line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", path=p, fix="check the path") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text ({exc.reason})", path=p, fix="save the file as UTF-8") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(
            f"invalid YAML: {problem}",
            path=p,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
            fix="correct the YAML syntax at that position",
        ) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        raise ConfigError(
            f"invalid YAML: character {exc.character!r} is not allowed",
            path=p,
            line=line,
            column=column,
            fix="remove the control character",
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", path=p) from None
    positions = _Positions()
    if node is not None:
        _walk(node, (), positions, str(p))
    if not isinstance(data, dict):
        raise ConfigError(
            "expected a mapping at the top level",
            path=p,
            line=1,
            column=1,
            fix="see the examples in the README",
        )
    return YamlDocument(p, data, positions)
