"""Tools the app runs: how a served in-process agent uses the results its client sends.

When a served agent's client declares functions (Gemini Live `setup.tools`, Realtime
`session.tools`), the app is the backend of those tools: the agent announces the call
(`ToolCallOut`), waits for the app's answer, and goes on from that answer, never from a result of its
own. A session that can do this implements `AppToolSession`; the serving front end tells it which
names the app runs (`use_app_tools`) and hands it each answer (`app_tool_result`). A call the app
does not answer in time, or that is cancelled, fails (`NO_APP_RESULT`): the agent says it could not do
it, as it would for any failed tool.

`AppToolFixture` is the tool fixture such a session gives its dialogue policy: the app's tools are
answered by the app, the others run on the scenario's own fixture as before. A synchronous policy
calls `call`, which blocks its thread until the answer comes back on the event loop, so it must run
off the loop while app tools are on (`TurnSession` does so); a policy that runs on the loop (the
model-driven one) awaits `acall`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from voice_audit.harness.adapter import ToolCallOut
from voice_audit.harness.tools import ToolFixture, ToolOutcome

__all__ = [
    "NO_APP_RESULT",
    "AppToolFixture",
    "AppToolSession",
    "AppTools",
]

NO_APP_RESULT = "no_result_from_app"
"""The error of an app tool call the app did not answer (timeout, cancellation, connection gone)."""


@runtime_checkable
class AppToolSession(Protocol):
    """An agent session that can use tool results sent by the app it is served to."""

    def use_app_tools(self, names: frozenset[str], timeout_s: float) -> bool:
        """From now on the app runs the tools named (a later call replaces the set); False when the
        agent cannot wait for an app's result (its tools stay its own)."""

    def app_tool_result(self, call_id: str, outcome: ToolOutcome | None) -> None:
        """The app's answer to an announced call; None: the call will not be answered (cancelled)."""


@dataclass
class AppTools:
    """The app-run tools of one session and the calls waiting for the app's answer."""

    names: frozenset[str] = frozenset()
    timeout_s: float = 60.0
    waits: dict[str, asyncio.Future[ToolOutcome | None]] = field(default_factory=dict)
    closed: bool = False
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def next_id(self) -> str:
        return f"app-{next(self._ids)}"

    async def ask(self, call: ToolCallOut, announce: Callable[[ToolCallOut], None]) -> ToolOutcome:
        """Announce the call and wait (on the event loop) for the app's answer; a closed session's
        calls fail at once."""
        if self.closed:
            return ToolOutcome(False, {}, NO_APP_RESULT)
        wait: asyncio.Future[ToolOutcome | None] = asyncio.get_running_loop().create_future()
        self.waits[call.call_id] = wait
        announce(call)
        try:
            async with asyncio.timeout(self.timeout_s):
                outcome = await wait
        except TimeoutError:
            outcome = None
        finally:
            self.waits.pop(call.call_id, None)
        return outcome if outcome is not None else ToolOutcome(False, {}, NO_APP_RESULT)

    def answer(self, call_id: str, outcome: ToolOutcome | None) -> None:
        wait = self.waits.get(call_id)
        if wait is not None and not wait.done():
            wait.set_result(outcome)

    def cancel_all(self) -> None:
        """The session is over: every waiting call fails, and so does any later one."""
        self.closed = True
        for call_id in list(self.waits):
            self.answer(call_id, None)


@dataclass
class AppToolFixture(ToolFixture):
    """A call's tool fixture whose app-run tools are answered by the app (see the module doc).

    `call` blocks its thread while the app answers, so it must not run on the event loop's thread;
    `answered` pairs each announced call with the app's outcome, so the session reports that outcome
    under the announced id and does not announce the call again."""

    app: AppTools = field(default_factory=AppTools)
    loop: asyncio.AbstractEventLoop | None = None
    announce: Callable[[ToolCallOut], None] | None = None
    answered: list[tuple[ToolCallOut, ToolOutcome]] = field(default_factory=list)

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if name not in self.app.names or self.loop is None or self.announce is None:
            return super().call(name, arguments)
        call = ToolCallOut(self.app.next_id(), name, dict(arguments))
        asked = self.app.ask(call, self.announce)
        try:
            future = asyncio.run_coroutine_threadsafe(asked, self.loop)
        except RuntimeError:  # the loop is closed: the session is gone
            asked.close()
            outcome = ToolOutcome(False, {}, NO_APP_RESULT)
        else:
            try:
                outcome = future.result(self.app.timeout_s + 5.0)
            except (concurrent.futures.CancelledError, TimeoutError):
                future.cancel()
                outcome = ToolOutcome(False, {}, NO_APP_RESULT)
        self.calls.append((name, dict(arguments), outcome))
        self.answered.append((call, outcome))
        return outcome

    async def acall(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """`call` for a policy that runs on the event loop (a model-driven one): awaits the app."""
        if name not in self.app.names or self.announce is None:
            return super().call(name, arguments)
        call = ToolCallOut(self.app.next_id(), name, dict(arguments))
        outcome = await self.app.ask(call, self.announce)
        self.calls.append((name, dict(arguments), outcome))
        self.answered.append((call, outcome))
        return outcome

    def announced(self, outcome: ToolOutcome) -> ToolCallOut | None:
        """The call the app answered with this outcome (by identity), None for the fixture's own."""
        return next((c for c, o in self.answered if o is outcome), None)
