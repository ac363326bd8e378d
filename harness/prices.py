"""The price table a campaign may name: read from its own YAML file and checked against the agents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from voice_audit.harness.model.usage import PriceTable
from voice_audit.scenarios import ConfigError
from voice_audit.scenarios.yamlsrc import YamlDocument, load_yaml, pydantic_error


def load_prices(doc: YamlDocument) -> dict[str, Any] | None:
    """The campaign's `prices:` as data: inline, or read from the YAML file it names (relative to
    the campaign), validated with that file's own line and column in any error."""
    data = doc.data if isinstance(doc.data, dict) else {}
    value = data.get("prices")
    if not isinstance(value, str):
        return None
    path = doc.path.parent / value
    if not path.is_file():
        raise doc.error(
            ("prices",),
            f"price file {value} not found",
            fix="give the path of a YAML price table, relative to the campaign",
        )
    pdoc = load_yaml(path)
    try:
        table = PriceTable.model_validate(pdoc.data)
    except ValidationError as exc:
        raise pydantic_error(pdoc, exc, "PriceTable") from None
    return table.model_dump(mode="json")


def check_price_agents(doc: YamlDocument, table: PriceTable | None, agents: Sequence[str]) -> None:
    """A rate for an agent the campaign does not call is a typo that would price nothing."""
    if table is None:
        return
    for i, rate in enumerate(table.rates):
        if rate.agent is not None and rate.agent not in agents:
            raise ConfigError(
                f"prices: rate {i} names agent '{rate.agent}' that the campaign does not list",
                path=doc.path,
                fix=f"use one of the campaign's agent names ({', '.join(sorted(agents))})",
            )


__all__ = ["check_price_agents", "load_prices"]
