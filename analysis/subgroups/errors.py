"""Errors and warnings raised by the subgroup engine.

Every error is a ValueError subclass whose one-line message names the parameter to change, so a caller
(or a campaign runner) can surface it verbatim.
"""

from __future__ import annotations


class SubgroupError(ValueError):
    """Base class: the input or a guard prevents mining."""


class TooManyItemsetsError(SubgroupError):
    """More frequent itemsets than `max_itemsets` would be produced."""


class TooManyLevelsError(SubgroupError):
    """An attribute has more distinct values than `max_levels`."""


class CubeTooLargeError(SubgroupError):
    """The dense data cube would not fit the memory budget of the top-down strategy."""


class OutcomeError(SubgroupError):
    """An outcome column is unusable (all missing, not numeric)."""


class AttributeInputError(SubgroupError):
    """An attribute column is unusable or missing."""


class UnknownItemsetError(SubgroupError, KeyError):
    """The requested itemset is not frequent (or not spelled as mined)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class GapInputError(SubgroupError):
    """The two agent tables cannot be matched caller by caller."""


class SubgroupWarning(UserWarning):
    """Input was adjusted (e.g. a constant attribute dropped); mining continued."""
