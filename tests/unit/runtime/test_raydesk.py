"""The driver's desk (a plain class; Ray makes it an actor): its inbox and its start barrier."""

from __future__ import annotations

import time

from voice_audit.harness.runtime.raydesk import Desk


def test_the_inbox_hands_each_message_over_once_in_order() -> None:
    desk = Desk(parties=1)
    desk.put(("a",))
    desk.hello(0, 0, "node-1")
    desk.put(("b",))
    assert desk.drain() == [("a",), ("placed", 0, 0, "node-1"), ("b",)]
    assert desk.drain() == []


def test_the_barrier_holds_until_every_shard_has_arrived() -> None:
    desk = Desk(parties=3, grace_s=60)
    for k in range(3):
        desk.hello(k, 0, "n")
    desk.arrive(0, None)
    desk.arrive(1, "agent 'w': warm-up failed")
    assert desk.barrier() == (False, {0: "", 1: "agent 'w': warm-up failed"}, [2])
    desk.arrive(2, None)
    released, arrived, missing = desk.barrier()
    assert released and missing == [] and set(arrived) == {0, 1, 2}


def test_a_shard_that_started_is_waited_for_but_one_never_placed_is_not() -> None:
    desk = Desk(parties=3, grace_s=0.2)
    desk.hello(0, 0, "n")
    desk.hello(1, 0, "n")  # started, still warming up
    desk.arrive(0, None)
    time.sleep(0.3)
    assert desk.barrier()[0] is False  # shard 1 is warming up: it is waited for
    desk.arrive(1, None)
    # shard 2 was never placed (its node dead but still counted): after the grace, nobody waits for it
    released, _, missing = desk.barrier()
    assert released and missing == [2]
    desk.hello(2, 0, "n")  # placed late: it goes straight through
    assert desk.barrier()[0] is True


def test_a_lost_shard_counts_as_arrived_with_why() -> None:
    desk = Desk(parties=2, grace_s=60)
    desk.hello(0, 0, "n")
    desk.hello(1, 0, "n")
    desk.arrive(0, None)
    desk.lost(1, "lost: NodeDiedError")
    released, arrived, _ = desk.barrier()
    assert released and arrived[1] == "lost: NodeDiedError"
    desk.arrive(1, None, replace=False)  # a late arrival does not hide why it was lost
    assert desk.barrier()[1][1] == "lost: NodeDiedError"
