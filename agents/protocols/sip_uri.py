"""SIP target URIs, what the harness may put in a SIP request, and what a SIP failure means.

Pure functions (no SIP stack): the adapter checks its options with them before any call, the
pre-run endpoint check parses the URL with them, and the unit tests cover them directly.

- `parse_target`: `sip:user@host[:port][;transport=udp|tcp]`. The request URI the stack dials
  is rebuilt from the parts, so nothing but these parameters reaches the wire. `sips:` and
  `transport=tls` are refused (the stack is built without a TLS transport here).
- `check_headers`, `check_identity`: extra headers and the From user and display name are the
  same on every call of an agent, but a campaign author could still write a caller's condition
  into them (`X-Accent: gb_rp`); they are refused if any name or value mentions a persona axis or
  level, or if they would replace a header the stack owns.
- `failure_for_status`: a final SIP response to the INVITE -> (failure kind, message). The kinds
  are the runtime's (`voice_audit.harness.model.failures.FAILURE_SIDE` gives their side): an agent that is busy,
  unavailable, not found, unanswered, failing (5xx) or unreachable did not serve the caller, an
  outcome; credentials it refuses are the harness's configuration, missing data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from voice_audit.agents.protocols.sip_wire import CALL_ID_HEADER
from voice_audit.harness.model.failures import FailureKind

__all__ = [
    "OWNED_HEADERS",
    "SipTarget",
    "Transport",
    "check_headers",
    "check_identity",
    "condition_words",
    "failure_for_status",
    "parse_target",
    "target_problem",
]

Transport = Literal["udp", "tcp"]

OWNED_HEADERS = frozenset(
    h.lower()
    for h in (
        "Via",
        "From",
        "To",
        "Call-ID",
        "CSeq",
        "Contact",
        "Max-Forwards",
        "Route",
        "Record-Route",
        "Content-Type",
        "Content-Length",
        "Content-Encoding",
        "Authorization",
        "Proxy-Authorization",
        "WWW-Authenticate",
        "Proxy-Authenticate",
        "Allow",
        "Supported",
        "Require",
        "Session-Expires",
        "Min-SE",
        "Expires",
        "Event",
        "Refer-To",
        "Replaces",
        "i",
        "f",
        "t",
        "v",
        "m",
        "l",
        "c",
        "k",
    )
) | {CALL_ID_HEADER.lower()}
"""Headers the stack or the adapter writes; an option may not replace them."""

_TOKEN = re.compile(r"^[A-Za-z0-9\-.!%*_+`'~]+$")
_USER = re.compile(r"^[A-Za-z0-9\-_.!~*'()&=+$,;?/%]+$")
_HOST = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9\-.]*[A-Za-z0-9])?)$")
_DISPLAY = re.compile(r"^[\w .,'\-+()]*$")


@dataclass(frozen=True, slots=True)
class SipTarget:
    user: str | None
    host: str
    port: int | None
    transport: Transport

    @property
    def uri(self) -> str:
        """The request URI, rebuilt from the parsed parts."""
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"sip:{user}{self.host}{port};transport={self.transport}"

    @property
    def address(self) -> tuple[str, int]:
        return self.host.strip("[]"), self.port or 5060


def target_problem(url: str) -> str | None:
    """Why `url` cannot name a SIP agent, or None when it can."""
    try:
        parse_target(url)
    except ValueError as exc:
        return str(exc)
    return None


def parse_target(url: str) -> SipTarget:
    """`sip:user@host[:port][;transport=udp|tcp]` -> SipTarget; ValueError names what is wrong."""
    scheme, sep, rest = url.partition(":")
    if not sep or scheme.lower() not in ("sip", "sips"):
        raise ValueError("a SIP agent's url is sip:user@host[:port][;transport=udp|tcp]")
    if scheme.lower() == "sips":
        raise ValueError("sips: (SIP over TLS) is not supported; use sip: with transport=udp or tcp")
    if rest.startswith("//"):
        raise ValueError("a SIP URI has no '//' (write sip:user@host:port)")
    if "?" in rest:
        raise ValueError("headers in the URI (?...) are not accepted; use the adapter's `headers` option")
    hostport, *params = rest.split(";")
    user: str | None = None
    if "@" in hostport:
        user, hostport = hostport.rsplit("@", 1)
        if ":" in user:
            raise ValueError(
                "a password in the URI is not accepted; use auth_username_env / auth_password_env"
            )
        if not user or not _USER.match(user):
            raise ValueError(f"invalid user part {user!r}")
    host, port = _split_hostport(hostport)
    transport: Transport = "udp"
    for param in params:
        name, _, value = param.partition("=")
        if name.lower() == "transport":
            if value.lower() == "tls":
                raise ValueError("transport=tls is not supported (the stack here has no TLS transport)")
            if value.lower() not in ("udp", "tcp"):
                raise ValueError(f"transport must be udp or tcp, not {value!r}")
            transport = "tcp" if value.lower() == "tcp" else "udp"
        elif name:
            raise ValueError(f"URI parameter {name!r} is not accepted (only transport=udp|tcp)")
    return SipTarget(user, host, port, transport)


def _split_hostport(hostport: str) -> tuple[str, int | None]:
    if hostport.startswith("["):
        end = hostport.find("]")
        host, tail = hostport[: end + 1], hostport[end + 1 :]
    else:
        host, _, port_s = hostport.partition(":")
        tail = f":{port_s}" if port_s else ""
    if not host or not _HOST.match(host):
        raise ValueError(f"invalid host {host!r}" if host else "no host")
    if not tail:
        return host, None
    if not tail.startswith(":") or not tail[1:].isdigit():
        raise ValueError(f"invalid port {tail[1:]!r}")
    port = int(tail[1:])
    if not 0 < port < 65536:
        raise ValueError(f"port {port} is out of range")
    return host, port


def condition_words() -> frozenset[str]:
    """Words that name a caller condition: the persona axes and every level id of the catalogue."""
    from voice_audit.personas import AXES, load_catalogue

    catalogue = load_catalogue()
    words = {a.lower() for a in AXES} | {"persona", "condition", "contrast", "voice_profile"}
    for axis in AXES:
        words |= {level.lower() for level in catalogue.levels(axis)}
    words.discard("none")  # a disfluency level, and an everyday header value
    return frozenset(words)


def _mentions(text: str, words: Iterable[str]) -> str | None:
    low = text.lower()
    tokens = set(re.split(r"[^a-z0-9_]+", low)) | set(re.split(r"[^a-z0-9]+", low))
    for word in words:
        if word in tokens or ("_" in word and word in low) or word.replace("_", "-") in low.split():
            return word
    return None


def check_headers(headers: Mapping[str, object], words: frozenset[str] | None = None) -> dict[str, str]:
    """Extra request headers, checked: RFC 3261 token names, one-line printable values, no header
    the stack owns, nothing that names a caller condition. ValueError says which and why."""
    words = condition_words() if words is None else words
    out: dict[str, str] = {}
    for raw_name, raw_value in headers.items():
        name, value = str(raw_name), str(raw_value)
        if not _TOKEN.match(name):
            raise ValueError(f"header name {name!r} is not a SIP token")
        if name.lower() in OWNED_HEADERS:
            raise ValueError(f"header {name!r} is written by the SIP stack or the adapter; it cannot be set")
        if any((ord(c) < 32 and c != "\t") or ord(c) == 127 for c in value):
            raise ValueError(f"header {name!r}: the value must be one printable line")
        hit = _mentions(name, words) or _mentions(value, words)
        if hit is not None:
            raise ValueError(
                f"header {name!r} mentions {hit!r}, a caller condition: nothing sent to the agent may reveal it"
            )
        out[name] = value
    return out


def check_identity(from_user: str, display_name: str, words: frozenset[str] | None = None) -> None:
    """The From user and display name: well-formed, and naming no caller condition."""
    words = condition_words() if words is None else words
    if not from_user or not _USER.match(from_user) or "@" in from_user:
        raise ValueError(f"from_user {from_user!r} is not a SIP user part (e.g. +15550100000)")
    if not _DISPLAY.match(display_name) or len(display_name) > 64:
        raise ValueError(f"display_name {display_name!r}: letters, digits, spaces and .,'-+() only, up to 64")
    hit = _mentions(from_user, words) or _mentions(display_name, words)
    if hit is not None:
        raise ValueError(f"the caller identity mentions {hit!r}, a caller condition")


BUSY = frozenset({486, 600})
UNAVAILABLE = frozenset({404, 410, 480, 484, 604})
AUTH = frozenset({401, 403, 407})
NO_ANSWER = 408
CANCELLED = 487


def failure_for_status(
    code: int, reason: str, *, credentials: bool, answer_timeout: bool = False, local: bool = False
) -> tuple[FailureKind, str]:
    """The failure kind and message of an INVITE that ended with final response `code`.

    `credentials`: the adapter had credentials to answer a challenge with (a 401/407 then means
    they were refused). `answer_timeout`: the adapter itself cancelled an unanswered call.
    `local`: the stack made the response up (a transaction timeout or a transport error: nothing
    answered at all).
    """
    what = f"SIP {code} {reason}".strip()
    if answer_timeout:
        return "connect_failed", f"no answer: the call was not answered in time and was cancelled ({what})"
    if local:
        if code == NO_ANSWER:
            return "connect_failed", f"transaction timeout: nothing answered the INVITE ({what})"
        return "connect_failed", f"unreachable: {what}"
    if code in BUSY:
        return "connect_failed", f"busy: {what}"
    if code in UNAVAILABLE:
        return "connect_failed", f"unavailable or not found: {what}"
    if code == NO_ANSWER:
        return "connect_failed", f"no answer: {what}"
    if code in AUTH:
        if code == 403 or credentials:
            return "harness_error", f"authentication refused: {what}; check the credentials the options name"
        return "harness_error", (
            f"the endpoint asks for credentials ({what}); set auth_username_env and auth_password_env"
        )
    if code == CANCELLED:
        return "cancelled", f"the call was cancelled before an answer ({what})"
    if code == 503:  # overloaded: the vendor's load, a harness-side wait and a new call (never non-service)
        return "rate_limited", f"service unavailable: {what}"
    if 500 <= code < 600:
        return "agent_error", f"server error: {what}"
    if code in (488, 415, 420, 606):
        return "protocol_error", f"offer refused: {what} (no common codec or unsupported extension)"
    if code >= 300:
        return "protocol_error", f"call refused: {what}"
    return "connect_failed", f"the call ended before any final response: {what}"
