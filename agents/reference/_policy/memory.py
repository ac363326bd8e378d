"""What the caller has said so far in one call: the topics raised, whether the request was heard,
and facts volunteered before they were asked for.

Its own module because both the turn logic (`phases`) and the verify phase (`verification`) read
and update it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Memory:
    topics: set[str] = field(default_factory=set)
    request_seen: bool = False
    volunteered: dict[str, str] = field(default_factory=dict)
