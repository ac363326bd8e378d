"""What can go wrong with work sent to a child process, and on which side it went wrong.

`ChildError` is raised in the child (the work itself failed); `WorkerCrashed` and `WorkerTimeout`
are the parent's findings about the child (it died, or it did not answer in time and was killed);
`ServerError` is the fork server's failure (no child could be started). Each carries `side` and
`kind` so a caller can branch and log without parsing the message.
"""

from __future__ import annotations


class ProcsError(Exception):
    """Base of the errors this package raises."""

    side: str = "parent"
    kind: str = "procs"


class ChildError(ProcsError):
    """An exception raised by the work in a child: its class name (`kind`), message and traceback.

    When the child's exception survives pickling it is re-raised in the parent as itself, with a
    `ChildError` as its `__cause__` (so the traceback printed shows the child's frames); otherwise
    the `ChildError` is raised."""

    side = "child"

    def __init__(self, kind: str, message: str, traceback: str = "", pid: int | None = None) -> None:
        self.kind = kind
        self.message = message
        self.traceback = traceback
        self.pid = pid
        super().__init__(
            f"{kind} in child process {pid}: {message}" + (f"\n\n{traceback}" if traceback else "")
        )

    def __reduce__(self) -> tuple[type, tuple[str, str, str, int | None]]:
        return (type(self), (self.kind, self.message, self.traceback, self.pid))


class WorkerCrashed(ProcsError):
    """The child died (or answered something unreadable) before it finished a job."""

    kind = "crashed"

    def __init__(self, pid: int | None, exitcode: int | None, detail: str = "") -> None:
        self.pid = pid
        self.exitcode = exitcode
        how = "an unreadable answer" if detail else f"exit code {exitcode}"
        super().__init__(
            f"child process {pid} ended before answering ({how}){': ' + detail if detail else ''}"
        )


class WorkerTimeout(ProcsError):
    """The child did not answer within `timeout_s`; it was killed."""

    kind = "timeout"

    def __init__(self, pid: int | None, timeout_s: float) -> None:
        self.pid = pid
        self.timeout_s = timeout_s
        super().__init__(f"child process {pid} did not answer within {timeout_s:.1f} s and was killed")


class ServerError(ProcsError):
    """The fork server could not start a child (it died, or could not be started)."""

    side = "server"
    kind = "server"
