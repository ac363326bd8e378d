"""Child processes for CPU-bound work: one fork server, one worker pool, errors that say which side failed.

Pure infrastructure on the standard library alone (it imports nothing else of ours), so every
package may use it, `analysis` included, without loading the runtime or an engine.

* `fork_server()` / `ForkServer`: children forked from a server that imported what they need once
  (`preload`), so they start in milliseconds and never run the parent's main module again.
* `Child`: one such child with a channel to the parent (the local executor's shards).
* `WorkerPool`: `size` children, each running `initializer` once and then one job at a time, with a
  per-job time limit (a hung child is killed and replaced alone) and a clean `close`.
* Every child dies with the parent, however the parent ends (`lifeline`), kill -9 included.
* `ChildError` (the work failed in the child), `WorkerCrashed`, `WorkerTimeout` (the parent's
  findings about a child), `ServerError` (no child could be started).
"""

from voice_audit.harness.procs.errors import ChildError, ProcsError, ServerError, WorkerCrashed, WorkerTimeout
from voice_audit.harness.procs.pool import WorkerPool
from voice_audit.harness.procs.server import Child, ForkServer, fork_server

__all__ = [
    "Child",
    "ChildError",
    "ForkServer",
    "ProcsError",
    "ServerError",
    "WorkerCrashed",
    "WorkerPool",
    "WorkerTimeout",
    "fork_server",
]
