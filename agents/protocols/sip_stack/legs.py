"""The call layer, as the pjsip thread sees it: a call's leg (its PJSUA2 call, its media port,
where its news goes), the accounts calls are placed from and taken on, and the events posted to
the owning event loop (`CallEvent`).
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pjsua2 as pj

from voice_audit.agents.protocols.sip_stack.media import FramePort

log = logging.getLogger("voice_audit.agents.protocols.sip")


@dataclass(frozen=True, slots=True)
class CallEvent:
    """What happened to a call, posted from the pjsip thread to the owning loop.

    kind: "state" (state name, code, reason, local, reason_header), "media" (codec, clock rate,
    hold), "dtmf" (digit), "rtp_stopped" (seconds), "incoming" (headers), "options" (code).
    """

    kind: str
    state: str = ""
    code: int = 0
    reason: str = ""
    local: bool = False
    detail: str = ""
    headers: dict[str, str] = field(default_factory=dict)


_REASON = re.compile(r"^Reason\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_HEADER = re.compile(r"^([A-Za-z0-9\-.!%*_+`'~]+)\s*:\s*(.*?)\s*$")


def message_headers(whole: str) -> dict[str, str]:
    """Header name (lower case) -> value of a raw SIP message (first occurrence wins)."""
    out: dict[str, str] = {}
    for line in whole.split("\r\n\r\n", 1)[0].splitlines()[1:]:
        m = _HEADER.match(line)
        if m and m.group(1).lower() not in out:
            out[m.group(1).lower()] = m.group(2)
    return out


class _Call(pj.Call):
    """Refers to its leg weakly: no reference cycle, so the cyclic garbage collector, which may
    run on any thread, never frees a PJSUA2 call (freed off the pjsip thread, it aborts)."""

    def __init__(self, leg: Leg, acc: Any, call_id: int = pj.PJSUA_INVALID_ID) -> None:
        super().__init__(acc, call_id)
        self._leg = weakref.ref(leg)

    def onCallState(self, prm: Any) -> None:
        leg = self._leg()
        if leg is not None:
            leg.on_state(self, prm)

    def onCallMediaState(self, prm: Any) -> None:
        del prm
        leg = self._leg()
        if leg is not None:
            leg.on_media(self)

    def onDtmfDigit(self, prm: Any) -> None:
        leg = self._leg()
        if leg is not None:
            leg.post(CallEvent("dtmf", detail=str(prm.digit)))

    def onCallTransferRequest(self, prm: Any) -> None:
        """A REFER is declined: a transfer would start a call nobody records."""
        prm.statusCode = 603
        leg = self._leg()
        log.info("call %d: transfer to %s declined", leg.handle if leg else -1, prm.dstUri)


class Leg:
    """One call as the pjsip thread sees it: its PJSUA2 call, its port, where its news goes."""

    def __init__(self, handle: int, post: Callable[[CallEvent], None], port: FramePort) -> None:
        self.handle = handle
        self.post = post
        self.call: _Call | None = None
        self.port: FramePort | None = port
        self.feed = port.feed
        self.media_idx: int | None = None
        self.connected_to: Any = None
        self.codec = ""
        self.confirmed = False
        self.held = False
        self.rx_pkts = -1
        self.rx_at = time.monotonic()
        self.rtp_timeout_s = 0.0
        self.rtp_reported = False
        self.ended = False

    def on_state(self, call: _Call, prm: Any) -> None:
        info = call.getInfo()
        state = {
            pj.PJSIP_INV_STATE_CALLING: "calling",
            pj.PJSIP_INV_STATE_INCOMING: "incoming",
            pj.PJSIP_INV_STATE_EARLY: "early",
            pj.PJSIP_INV_STATE_CONNECTING: "connecting",
            pj.PJSIP_INV_STATE_CONFIRMED: "confirmed",
            pj.PJSIP_INV_STATE_DISCONNECTED: "disconnected",
        }.get(info.state, "null")
        local, reason_header = False, ""
        with contextlib.suppress(Exception):
            e = prm.e
            if e.type == pj.PJSIP_EVENT_TSX_STATE:
                src_type = e.body.tsxState.type
                local = src_type in (pj.PJSIP_EVENT_TIMER, pj.PJSIP_EVENT_TRANSPORT_ERROR)
                if src_type == pj.PJSIP_EVENT_RX_MSG:
                    whole = e.body.tsxState.src.rdata.wholeMsg
                    m = _REASON.search(whole.split("\r\n\r\n", 1)[0])
                    reason_header = m.group(1).strip() if m else ""
        if state == "confirmed":
            self.confirmed = True
            self.rx_at = time.monotonic()
        if state == "disconnected":
            self.ended = True
            # PJSIP has taken the call's stream out of the bridge, with its connections, before
            # this callback: a disconnection by its old slot number could reach a port that took
            # the number since.
            self.connected_to = None
            self._detach()
        self.post(
            CallEvent(
                "state",
                state=state,
                code=int(info.lastStatusCode),
                reason=str(info.lastReason),
                local=local,
                detail=reason_header,
            )
        )

    def on_media(self, call: _Call) -> None:
        info = call.getInfo()
        for i, media in enumerate(info.media):
            if media.type != pj.PJMEDIA_TYPE_AUDIO:
                continue
            status = media.status
            self.held = status in (pj.PJSUA_CALL_MEDIA_LOCAL_HOLD, pj.PJSUA_CALL_MEDIA_REMOTE_HOLD)
            if self.port is not None and status in (
                pj.PJSUA_CALL_MEDIA_ACTIVE,
                pj.PJSUA_CALL_MEDIA_REMOTE_HOLD,
            ):
                audio = call.getAudioMedia(i)
                self.port.startTransmit(audio)
                audio.startTransmit(self.port)
                self.media_idx, self.connected_to = i, audio
                self.port.source = audio.getPortId()
                try:
                    si = call.getStreamInfo(i)
                    codec = f"{si.codecName}/{si.codecClockRate}"
                except Exception:
                    codec = "unknown"
                if codec != self.codec:
                    log.info("call %d: codec %s", self.handle, codec)
                self.codec = codec
                self.rx_at = time.monotonic()
            self.post(CallEvent("media", detail=self.codec, state="hold" if self.held else "active"))
            return

    def check_rtp(self, now: float) -> None:
        """Post `rtp_stopped` once when a confirmed, unheld call has received no RTP for the timeout."""
        if self.call is None or self.ended or self.media_idx is None or not self.confirmed:
            return
        try:
            pkts = int(self.call.getStreamStat(self.media_idx).rtcp.rxStat.pkt)
        except Exception:
            return
        if pkts != self.rx_pkts or self.held:
            self.rx_pkts, self.rx_at = pkts, now
            return
        if self.rtp_timeout_s > 0 and not self.rtp_reported and now - self.rx_at >= self.rtp_timeout_s:
            self.rtp_reported = True
            self.post(CallEvent("rtp_stopped", detail=f"{now - self.rx_at:.1f}"))

    def _detach(self) -> None:
        if self.port is None:
            return
        if self.connected_to is not None:
            with contextlib.suppress(Exception):
                self.port.stopTransmit(self.connected_to)
            with contextlib.suppress(Exception):
                self.connected_to.stopTransmit(self.port)
            self.connected_to = None
        self.port.sink = None


class _Account(pj.Account):
    def __init__(self) -> None:
        super().__init__()
        self.on_incoming: Callable[[Any], None] | None = None
        self.options_waiters: deque[Callable[[int, str, bool], None]] = deque()

    def onIncomingCall(self, prm: Any) -> None:
        if self.on_incoming is not None:
            try:
                self.on_incoming(prm)
                return
            except Exception:
                log.exception("incoming call handler failed")
        call = pj.Call(self, prm.callId)  # nobody takes it: refuse it, and free the wrapper here
        op = pj.CallOpParam(True)
        op.statusCode = 486
        with contextlib.suppress(pj.Error):
            call.answer(op)
        del call

    def onSendRequest(self, prm: Any) -> None:
        """An OPTIONS ended; probe accounts are per target, so waiters complete in order."""
        if not self.options_waiters:
            return
        done = self.options_waiters.popleft()
        code, reason, local = 0, "", True
        with contextlib.suppress(Exception):
            e = prm.e.body.tsxState
            code, reason = int(e.tsx.statusCode), str(e.tsx.statusText)
            local = e.type != pj.PJSIP_EVENT_RX_MSG
        done(code, reason, local)
