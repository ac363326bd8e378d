"""Errors every package raises for bad input: one line, naming the file, the position and the fix."""

from __future__ import annotations

from pathlib import Path


class VoiceAuditError(Exception):
    """Base of every error the CLI turns into one line on stderr and a non-zero exit."""

    exit_code = 2


class ConfigError(VoiceAuditError):
    """Bad input in a file the user wrote: the message says where and how to fix it."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        column: int | None = None,
        fix: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.column = column
        self.message = " ".join(message.split())
        self.fix = " ".join(fix.split()) if fix else None
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            where += ": "
        fix = f" (fix: {self.fix})" if self.fix else ""
        return f"{where}{self.message}{fix}"


class ConfigErrors(ConfigError):
    """Every problem found in one file at once: one positioned line with its fix per problem, so a
    user fixes them all in one pass. Reads as the first problem where one is expected."""

    def __init__(self, errors: list[ConfigError]) -> None:
        if not errors:
            raise ValueError("ConfigErrors needs at least one error")
        first = errors[0]
        self.errors = tuple(errors)
        super().__init__(first.message, path=first.path, line=first.line, column=first.column, fix=first.fix)
        Exception.__init__(self, "\n".join(e.one_line() for e in errors))

    def __str__(self) -> str:
        return "\n".join(e.one_line() for e in self.errors)


class LockError(VoiceAuditError):
    """A scenario is unlocked or was edited after locking."""


class SchemaVersionError(VoiceAuditError):
    """A file was written by a newer voice-audit than the one reading it."""


class MissingBackendError(VoiceAuditError):
    """An optional backend is not installed; the message carries the exact pip command."""

    def __init__(self, backend: str, extra: str, detail: str = "") -> None:
        self.backend = backend
        self.extra = extra
        tail = f" ({detail})" if detail else ""
        super().__init__(
            f"backend '{backend}' is not installed{tail}: run pip install 'voice-audit[{extra}]'"
        )
