"""What Shapley, pruning and ranking need from a mining result (divergence or cross-agent gap)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import pandas as pd

from .lattice import Lattice
from .stats import Effect


class Scored(Protocol):
    """A lattice with a coalition score per itemset (zero on the empty itemset) and a test per itemset."""

    @property
    def lattice(self) -> Lattice: ...

    @property
    def root_testable(self) -> bool: ...

    def score(self, outcome: str) -> np.ndarray: ...

    def effect(self, outcome: str, test: str) -> Effect: ...

    def table(self, outcomes: Sequence[str] | None = None) -> pd.DataFrame: ...
