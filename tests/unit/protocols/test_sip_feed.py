"""The caller's feed between asyncio and the media clock thread: whole 20 ms frames, in order, a
two-frame restart after an underrun, a bounded backlog; and the frame copies across SWIG."""

from __future__ import annotations

import pytest

pytest.importorskip("pjsua2")

import pjsua2 as pj

from voice_audit.agents.protocols.sip_stack import (
    FRAME_BYTES,
    MAX_TX_FRAMES,
    SILENCE,
    Feed,
    StackError,
    check_codecs,
    message_headers,
)
from voice_audit.agents.protocols.sip_stack.media import fast_ok, fast_read, slow_read


def frame(i: int) -> bytes:
    return bytes([i % 256]) * FRAME_BYTES


def test_frames_are_whole_and_in_order() -> None:
    feed = Feed(collect_ticks=True)
    assert feed.take() == SILENCE and feed.underruns == 0  # nothing fed yet: no underrun counted
    data = frame(1) + frame(2) + frame(3)[:100]
    feed.push(data[:700])
    feed.push(data[700:])
    assert len(feed.tx) == 2 and len(feed.rest) == 100  # the partial tail waits for more
    assert [feed.take(), feed.take()] == [frame(1), frame(2)]
    assert feed.ticks is not None and len(feed.ticks) == 2


def test_an_underrun_restarts_on_two_frames() -> None:
    feed = Feed(collect_ticks=False)
    feed.push(frame(1) + frame(2))
    assert feed.take() == frame(1) and feed.take() == frame(2)
    assert feed.take() == SILENCE and feed.underruns == 1
    feed.push(frame(3))
    assert feed.take() == SILENCE  # one frame is not enough to restart
    feed.push(frame(4))
    assert [feed.take(), feed.take()] == [frame(3), frame(4)]
    assert feed.underruns == 1


def test_the_backlog_is_bounded() -> None:
    feed = Feed(collect_ticks=False)
    feed.push(b"".join(frame(i) for i in range(MAX_TX_FRAMES + 5)))
    assert len(feed.tx) == MAX_TX_FRAMES and feed.dropped == 5
    assert feed.tx[0] == frame(5)  # the oldest went first


def test_fast_frame_copies_match_the_slow_path() -> None:
    assert fast_ok()
    data = bytes(range(256)) * 2 + bytes(128)
    media = pj.MediaFrame()
    media.buf = pj.ByteVector(data)
    assert fast_read(media.buf) == slow_read(media.buf) == data


def test_codecs_and_headers() -> None:
    assert check_codecs(["pcmu", "G722"]) == ("PCMU", "G722")
    with pytest.raises(StackError, match="no Opus"):
        check_codecs(["opus"])
    msg = "INVITE sip:a@b SIP/2.0\r\nFrom: <sip:+1555@h>;tag=1\r\nX-Voice-Audit-Call-Id: CAx\r\n\r\nv=0\r\nX-Not: body"
    assert message_headers(msg) == {"from": "<sip:+1555@h>;tag=1", "x-voice-audit-call-id": "CAx"}
