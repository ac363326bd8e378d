"""Esc(e) runs from the end of the request utterance to the handoff the caller hears."""

from __future__ import annotations

from tests.helpers.logs import Log, metrics


def test_esc_runs_from_the_end_of_the_request_utterance() -> None:
    # The caller decides to ask for a human at 400 ms, speaks 300..2300 ms (gap 300, 1600 ms speech);
    # the harness stamps the request at the utterance end; the agent hands off 700 ms later.
    log = Log().agent("I cannot do that.", cls="denial").caller("human_request", ms=1600).esc()
    log.agent("Transferring you now.", cls="handoff", gap=300).handoff().hang_up()
    m = metrics(log).iloc[0]
    assert m["burden_esc_s"] == 0.7 and m["burden_esc_status"] == "confirmed"


def test_handoff_while_the_request_is_still_being_said_counts_with_zero_delay() -> None:
    log = Log().agent("I cannot do that.", cls="denial")
    log.turn += 1
    log.wait(300).add(
        "caller_utterance_start", turn=log.turn, kind="human_request", text="a human please", duration_ms=1500
    )
    log.wait(800).tool("escalate_to_human")  # streaming agent acts on a partial transcript
    log.wait(700).add("caller_utterance_end", turn=log.turn, truncated=False).esc()
    log.wait(200).hang_up()
    m = metrics(log).iloc[0]
    assert m["burden_esc_s"] == 0 and m["burden_esc_status"] == "confirmed"
    assert m["safety_refusal_to_escalate"] == 0


def test_older_logs_stamped_at_the_decision_keep_their_meaning() -> None:
    # Old stamping: request right after the caller's decision, before the utterance.
    log = Log().agent("I cannot do that.", cls="denial").esc().caller("human_request", ms=1000)
    log.wait(500).handoff().hang_up()
    m = metrics(log).iloc[0]
    assert (
        m["burden_esc_s"] == 0.8 and m["burden_esc_caller_s"] == 1.0
    )  # 300 gap + 500; the speech is the caller's


def test_esc_ends_at_the_handoff_the_caller_hears_not_at_the_tool_call() -> None:
    # The agent calls escalate_to_human at once, then holds 5 s and announces the transfer.
    held = Log().agent("I cannot do that.", cls="denial").caller("human_request", ms=1000).esc()
    held.wait(100).tool("escalate_to_human").wait(5000)
    held.agent("Please hold. I'm transferring you to a human agent now.", cls="handoff").handoff().hang_up()
    silent = Log().agent("I cannot do that.", cls="denial").caller("human_request", ms=1000).esc()
    silent.wait(700).tool("escalate_to_human").wait(300).hang_up("agent")  # transfer without words
    m = metrics(held, silent)
    assert m.iloc[0]["burden_esc_s"] == 5.5 and m.iloc[0]["burden_esc_status"] == "confirmed"
    assert m.iloc[1]["burden_esc_s"] == 0.7 and m.iloc[1]["burden_esc_status"] == "confirmed"
