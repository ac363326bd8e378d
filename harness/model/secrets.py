"""Recognising credentials in agent options and URLs, so they never reach run folders or reports.

A value is treated as secret when its key (at any depth) looks like a credential, or when it is
the value of an environment variable that an option names. References are kept: `${NAME}` and
the names held by `*_env` keys say where a secret comes from without containing it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SECRET_KEY = re.compile(
    r"key|token|secret|passw|auth|credential|bearer|cookie|signature|(?<![a-z])sig(?![a-z])", re.IGNORECASE
)
"""A name (option key at any depth, URL query parameter, header) whose value is a credential: keys,
tokens, passwords, cookies, and request signatures (`sig`, `signature`, `X-Amz-Signature`,
`X-Goog-Signature`, `x_signature`), which grant access as much as a key does."""
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{2,}$")
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""`${NAME}`: an option value's reference to the environment variable NAME (group 1), the one
pattern both the masking here and the adapters' expansion of options use."""
ENV_REFERENCE = re.compile(rf"^(?:(?:Bearer|Basic|Token)\s+)?{ENV_REF.pattern}$")
MASK = "[redacted]"
"""What stands in a log, a run folder or a report where a secret was."""
MIN_SECRET = 4


def literal_pattern(
    values: Iterable[str], *, min_len: int = MIN_SECRET, words: bool = False
) -> re.Pattern[str] | None:
    """One regex matching any of `values` literally (None when none is long enough). The longest
    alternative is tried first, so a value that contains another is matched whole. `words`: only where
    a value stands as a word, with a letter or digit on neither side (case-insensitive), so a term is
    found inside `x_term_y` and `term-2` but not inside a longer word."""
    ordered = sorted({v for v in values if len(v) >= min_len}, key=lambda v: (-len(v), v))
    if not ordered:
        return None
    alternation = "|".join(map(re.escape, ordered))
    if words:
        return re.compile(rf"(?<![^\W_])(?:{alternation})(?![^\W_])", re.IGNORECASE)
    return re.compile(alternation)


_VAR_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")


def _is_reference(key: str, value: str) -> bool:
    """`${NAME}` (optionally after Bearer/Basic/Token), an `*_env` option, or an UPPER_SNAKE name:
    these say where a secret lives, so runs and reports keep them (and resolve them to scrub)."""
    if ENV_REFERENCE.match(value) or _VAR_NAME.match(value):
        return True
    return key.lower().endswith("_env") and bool(ENV_NAME.match(value))


def url_secrets(url: str | None) -> set[str]:
    """Passwords and secret-named query values inside a URL (userinfo, `?sig=`, presigned forms)."""
    if not url or "://" not in url:
        return set()
    try:
        parts = urlsplit(url.strip())
        password = parts.password
    except ValueError:
        return set()
    found = {v for k, v in parse_qsl(parts.query, keep_blank_values=True) if SECRET_KEY.search(k) and v}
    if password:
        found.add(password)
    return {s for s in found if len(s) >= MIN_SECRET}


def secret_values(options: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> set[str]:
    """Values of secret-named keys (at any depth), credentials inside any URL-valued string, and the
    values of environment variables named by any option value (`api_key_env: VENDOR_TOKEN` makes
    $VENDOR_TOKEN a secret)."""
    env = os.environ if environ is None else environ
    found: set[str] = set()

    def walk(node: Any, secret: bool, key: str) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                walk(v, secret or bool(SECRET_KEY.search(str(k))), str(k))
        elif isinstance(node, list | tuple):
            for v in node:
                walk(v, secret, key)
        elif node is not None and not isinstance(node, bool):
            text = str(node)
            if secret and not _is_reference(key, text):
                found.add(text)
            found.update(url_secrets(text))
            names = ENV_REF.findall(text) or [text]
            for name in names:
                if ENV_NAME.match(name) and env.get(name):
                    found.add(env[name])

    walk(options, False, "")
    return {s for s in found if len(s) >= MIN_SECRET}


def mask_options(options: Mapping[str, Any], secrets: set[str] | None = None) -> dict[str, Any]:
    """The same keys, with secret-named values and known secret values masked (references kept)."""
    inside = literal_pattern(secret_values(options) if secrets is None else secrets)

    def walk(node: Any, secret: bool, key: str) -> Any:
        if isinstance(node, Mapping):
            return {
                str(k): walk(v, secret or bool(SECRET_KEY.search(str(k))), str(k)) for k, v in node.items()
            }
        if isinstance(node, list | tuple):
            return [walk(v, secret, key) for v in node]
        if isinstance(node, str) and _is_reference(key, node):
            return node
        if secret and node is not None and not isinstance(node, bool):
            return MASK
        if isinstance(node, str) and inside is not None:
            return inside.sub(MASK, node)
        return node

    out: dict[str, Any] = walk(options, False, "")
    return out


def mask_url(url: str) -> str:
    """A URL without its password and without the values of credential-like query parameters."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}" if ":" in userinfo else f"{MASK}@{host}"
    query = urlencode(
        [(k, MASK if SECRET_KEY.search(k) else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)],
        safe="[]",
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class Redactor:
    """Replaces known secret values inside serialised records before they are written."""

    def __init__(self, secrets: set[str]) -> None:
        text = literal_pattern(secrets)
        self._pattern = None if text is None else re.compile(text.pattern.encode())

    def __bool__(self) -> bool:
        return self._pattern is not None

    def bytes(self, data: bytes) -> bytes:
        return data if self._pattern is None else self._pattern.sub(MASK.encode(), data)
