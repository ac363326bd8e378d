"""The call operations: each runs on the pjsip thread through `SipStack.run` (place a call, hang
up, send DTMF, ping with OPTIONS, listen, accept and answer an incoming call, read the feeds'
counters).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pjsua2 as pj

from voice_audit.agents.protocols.sip_stack.bridge import MAX_CALLS, SipStack, StackError, StackFull, _error
from voice_audit.agents.protocols.sip_stack.legs import CallEvent, _Account, _Call, message_headers
from voice_audit.agents.protocols.sip_stack.media import Feed

log = logging.getLogger("voice_audit.agents.protocols.sip")


def _uac_transport(stack: SipStack, bind_host: str, transport: str) -> int:
    return stack.transport(bind_host, 0, transport)[0]


def _id_uri(user: str, host: str, display: str) -> str:
    name = f'"{display}" ' if display else ""
    return f"{name}<sip:{user}@{host}>"


@dataclass(frozen=True)
class CallerLine:
    """Where and as whom calls are placed: the target (a `sip_uri.SipTarget`), the local address
    they leave from, the From user and display name, the digest credentials, the codec order."""

    target: Any
    bind_host: str
    from_user: str
    display: str
    credentials: tuple[str, str] | None
    codecs: tuple[str, ...]


def caller_account(stack: SipStack, line: CallerLine) -> _Account:
    """The account a call on `line` is placed from (its transport, its From, its credentials)."""
    bind_host, target, credentials = line.bind_host, line.target, line.credentials
    tid = _uac_transport(stack, bind_host, target.transport)
    host = bind_host if bind_host not in ("0.0.0.0", "::") else "127.0.0.1"
    key = f"uac|{bind_host}|{target.transport}|{line.from_user}|{line.display}|{credentials[0] if credentials else ''}"
    if credentials is not None:
        key += "|" + hashlib_digest(credentials[1])
    return stack.account(key, _id_uri(line.from_user, host, line.display), bind_host, tid, credentials)


def prepare_caller(stack: SipStack, line: CallerLine) -> None:
    """Everything a call on `line` uses that outlives it, made before the first call: the
    transport and account it is placed from, the codec order, a media port per call slot."""
    if line.codecs != stack.codecs:
        stack.set_codecs(line.codecs)
    caller_account(stack, line)
    stack.spare_ports(MAX_CALLS)


def place_call(
    stack: SipStack,
    line: CallerLine,
    headers: dict[str, str],
    post: Callable[[CallEvent], None],
    loop: asyncio.AbstractEventLoop,
    sink: Callable[[bytes], None],
    rtp_timeout_s: float,
) -> tuple[int, Feed, str]:
    """INVITE the line's target offering its codecs; returns (handle, the caller's feed, SIP
    Call-ID)."""
    live = sum(1 for leg in stack.legs.values() if not leg.ended)
    if live >= MAX_CALLS:
        raise StackFull(
            f"this process already holds {live} SIP calls, the most its PJSUA2 build takes ({MAX_CALLS}): "
            "lower the campaign's concurrency or spread it over worker processes (--workers)"
        )
    if line.codecs != stack.codecs:
        stack.set_codecs(line.codecs)
    acc = caller_account(stack, line)
    leg = stack.new_leg(post, loop, sink)
    leg.rtp_timeout_s = rtp_timeout_s
    call = _Call(leg, acc)
    leg.call = call
    prm = pj.CallOpParam(True)
    for name, value in headers.items():
        h = pj.SipHeader()
        h.hName, h.hValue = name, value
        prm.txOption.headers.append(h)
    try:
        call.makeCall(line.target.uri, prm)
    except pj.Error:
        stack.release(leg.handle)
        raise
    return leg.handle, leg.feed, str(call.getInfo().callIdString)


def hashlib_digest(secret: str) -> str:
    """A short digest that keeps two credentials apart in an account key without holding either."""
    return hashlib.sha256(secret.encode()).hexdigest()[:12]


def hangup(
    stack: SipStack, handle: int, code: int = 0, reason: str = "", headers: dict[str, str] | None = None
) -> None:
    """BYE an answered call, CANCEL one not yet answered (`code` 0), or reject an incoming one."""
    leg = stack.legs.get(handle)
    if leg is None or leg.call is None or leg.ended:
        return
    prm = pj.CallOpParam(True)
    if code:
        prm.statusCode = code
    if reason:
        prm.reason = reason[:60]
    for name, value in (headers or {}).items():
        h = pj.SipHeader()
        h.hName, h.hValue = name, value
        prm.txOption.headers.append(h)
    with contextlib.suppress(pj.Error):  # already ending: nothing left to send
        leg.call.hangup(prm)


def send_dtmf(stack: SipStack, handle: int, digit: str, method: str) -> str:
    """RFC 4733 unless `method` is "info" or the far end took no telephone-event; returns the method used."""
    leg = stack.legs.get(handle)
    if leg is None or leg.call is None:
        raise StackError("the call is over")
    if method != "info":
        try:
            leg.call.dialDtmf(digit)
            return "rfc4733"
        except pj.Error as exc:
            log.info("RFC 4733 DTMF refused (%s); sending SIP INFO", _error(exc))
    prm = pj.CallSendDtmfParam()
    prm.method = pj.PJSUA_DTMF_METHOD_SIP_INFO
    prm.digits = digit
    prm.duration = 160
    leg.call.sendDtmf(prm)
    return "info"


def options_ping(
    stack: SipStack, target: Any, bind_host: str, done: Callable[[int, str, bool], None]
) -> None:
    """Send an OPTIONS to `target`; `done(code, reason, local)` when its transaction ends
    (`local`: PJSIP made the response up, so nothing answered)."""
    tid = _uac_transport(stack, bind_host, target.transport)
    host = bind_host if bind_host not in ("0.0.0.0", "::") else "127.0.0.1"
    acc = stack.account(f"probe|{bind_host}|{target.uri}", _id_uri("probe", host, ""), bind_host, tid)
    prm = pj.SendRequestParam()
    prm.method = "OPTIONS"
    prm.txOption.targetUri = target.uri
    acc.options_waiters.append(done)
    try:
        acc.sendRequest(prm)
    except pj.Error:
        acc.options_waiters.pop()
        raise


def listen(stack: SipStack, host: str, port: int, on_incoming: Callable[[Any], None]) -> int:
    """Take calls on host:port (UDP and TCP on the same port); returns the bound port."""
    _, bound = stack.transport(host, port, "udp")
    stack.transport(host, bound, "tcp")
    acc = stack.account(f"uas|{host}|{bound}", f"<sip:agent@{host}:{bound}>", host, None)
    acc.on_incoming = on_incoming
    return bound


def stop_listening(stack: SipStack, account_key: str) -> None:
    """Calls to a closed server's account are refused (486) from now on."""
    acc = stack.accounts.get(account_key)
    if acc is not None:
        acc.on_incoming = None


def accept_incoming(
    stack: SipStack,
    prm: Any,
    account_key: str,
    post: Callable[[CallEvent], None],
    loop: asyncio.AbstractEventLoop,
    sink: Callable[[bytes], None],
    rtp_timeout_s: float,
) -> tuple[int, Feed, dict[str, str], str]:
    """Inside `onIncomingCall`: wrap the new call; returns (handle, feed, request headers, Call-ID)."""
    acc = stack.accounts[account_key]
    leg = stack.new_leg(post, loop, sink)
    leg.rtp_timeout_s = rtp_timeout_s
    leg.call = _Call(leg, acc, prm.callId)
    whole = str(prm.rdata.wholeMsg)
    return leg.handle, leg.feed, message_headers(whole), str(leg.call.getInfo().callIdString)


def answer(stack: SipStack, handle: int, code: int, reason: str = "") -> None:
    """Send a provisional or final answer (180, 200, 486 ...) to an incoming call."""
    leg = stack.legs.get(handle)
    if leg is None or leg.call is None or leg.ended:
        raise StackError("the call is over")
    prm = pj.CallOpParam(True)
    prm.statusCode = code
    if reason:
        prm.reason = reason
    leg.call.answer(prm)


def feed_stats(stack: SipStack) -> dict[str, Any]:
    """The caller feeds' underruns, drops and (when collected) clock ticks, of the calls still held."""
    feeds = [leg.feed for leg in stack.legs.values()]
    return {
        "underruns": sum(f.underruns for f in feeds),
        "dropped": sum(f.dropped for f in feeds),
        "ticks": [list(f.ticks) for f in feeds if f.ticks],
    }
