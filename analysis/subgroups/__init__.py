"""Subgroup discovery (METHOD.md section 7): frequent caller-attribute itemsets whose outcome diverges."""

from .discretise import discretise
from .errors import SubgroupError, SubgroupWarning, TooManyItemsetsError
from .lattice import Lattice
from .mining import mine
from .result import Subgroups

__all__ = ["Lattice", "SubgroupError", "SubgroupWarning", "Subgroups", "TooManyItemsetsError", "discretise", "mine"]
