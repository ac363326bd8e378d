"""The SIP stack's media ports outlive their calls: a finished call's port rests, disconnected,
and a later call takes it, but never while a stream still reaches it (one call must never hear
another). Real PJSUA2 endpoint and conference bridge, no network."""

from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("pjsua2")

from voice_audit.agents.protocols.sip_stack import PORT_GRACE_S, SipStack


def _on(stack: SipStack, fn):  # type: ignore[no-untyped-def]
    return stack.submit(fn).result(timeout=10)


def test_a_port_still_reached_by_a_stream_waits_and_a_free_one_is_reused() -> None:
    stack = SipStack.get()
    loop = asyncio.new_event_loop()
    try:
        heard: list[bytes] = []

        def two_legs() -> tuple[int, int]:
            a = stack.new_leg(lambda e: None, loop, lambda pcm: None)
            b = stack.new_leg(lambda e: None, loop, heard.append)
            assert a.port is not None and b.port is not None
            a.port.startTransmit(b.port)  # stands for a call's stream that still reaches b
            b.port.source = a.port.getPortId()
            return a.handle, b.handle

        # Ports left resting by earlier calls in this process (or made spare by a warm-up) would
        # be taken first: this test follows two ports of its own.
        _on(stack, stack._resting.clear)
        a, b = _on(stack, two_legs)
        time.sleep(0.1)  # the bridge applies the connection at its next tick
        b_port = _on(stack, lambda: stack.legs[b].port)
        _on(stack, lambda: stack.release(b))
        assert b_port.sink is None and b_port.inbox is None  # resting ports hear nothing
        time.sleep(PORT_GRACE_S + 0.1)

        c = _on(stack, lambda: stack.new_leg(lambda e: None, loop, lambda pcm: None).handle)
        assert _on(stack, lambda: stack.legs[c].port) is not b_port  # still reached by a's "stream"

        a_port = _on(stack, lambda: stack.legs[a].port)
        _on(stack, lambda: a_port.stopTransmit(b_port))
        time.sleep(PORT_GRACE_S + 0.1)
        d_leg = _on(stack, lambda: stack.new_leg(lambda e: None, loop, lambda pcm: None))
        assert d_leg.port is b_port  # free now: reused, not a new port
        assert d_leg.feed is b_port.feed and not d_leg.feed.tx and d_leg.feed.underruns == 0
        for h in (a, c, d_leg.handle):
            _on(stack, lambda h=h: stack.release(h))
    finally:
        loop.close()
