"""Credentials in agent options: taken from the environment, never written to a log.

Option values may name an environment variable as `${NAME}` (e.g. a header
`Authorization: "Bearer ${VENDOR_TOKEN}"`), so campaign files and the run folder's copy of the
campaign hold the reference, never the key. websockets logs every handshake header at DEBUG;
`install_log_redaction` masks the values of credential-bearing ones on its loggers.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping

from voice_audit.harness.adapter import AgentError
from voice_audit.harness.model.secrets import ENV_REF, MASK, SECRET_KEY

__all__ = ["HeaderRedaction", "expand_env", "expand_headers", "install_log_redaction"]

_HEADER_LINES = frozenset({"> %s: %s", "< %s: %s"})


def expand_env(value: str, what: str) -> str:
    """`${NAME}` -> the value of $NAME; an unset variable is a clear connect failure."""

    def sub(m: re.Match[str]) -> str:
        found = os.environ.get(m.group(1))
        if not found:
            raise AgentError("connect_failed", f"environment variable {m.group(1)} (in {what}) is not set")
        return found

    return ENV_REF.sub(sub, value)


def expand_headers(headers: Mapping[str, object] | None) -> dict[str, str]:
    return {str(k): expand_env(str(v), f"header {k}") for k, v in dict(headers or {}).items()}


class HeaderRedaction(logging.Filter):
    """Masks the value in websockets' `> Name: value` handshake lines when the name carries credentials."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        header = isinstance(args, tuple) and len(args) == 2 and record.msg in _HEADER_LINES
        if header and isinstance(args, tuple) and SECRET_KEY.search(str(args[0])):
            record.args = (args[0], MASK)
        return True


def install_log_redaction() -> None:
    for name in ("websockets.client", "websockets.server"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, HeaderRedaction) for f in logger.filters):
            logger.addFilter(HeaderRedaction())
