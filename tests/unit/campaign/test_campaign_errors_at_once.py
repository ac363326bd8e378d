"""A campaign with several problems reports them all at once: one positioned line each, with its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.campaign_input import GOOD, write
from voice_audit.harness.planning import load_campaign
from voice_audit.scenarios import ConfigError, ConfigErrors


def test_two_field_errors_give_two_lines_with_fixes(tmp_path: Path) -> None:
    text = GOOD.replace("seed: 3", "seed: three") + "concurency: 3\n"
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_campaign(path)
    assert isinstance(err.value, ConfigErrors)
    lines = str(err.value).splitlines()
    assert len(lines) == 2, lines
    by_line = {int(line[len(str(path)) + 1 :].split(":", 1)[0]): line for line in lines}
    assert set(by_line) == {2, 15}, lines  # each at its own field
    assert "seed" in by_line[2] and "(fix: give a whole number)" in by_line[2]
    assert (
        "unknown field 'concurency'" in by_line[15]
        and "(fix: remove it or check its spelling)" in by_line[15]
    )


def test_two_naming_errors_give_two_lines_with_fixes(tmp_path: Path) -> None:
    text = GOOD.replace("outage_support]", "outage_suport]").replace(
        "  - contrast: []\n", "  - contrast: []\n    agents: [nobody]\n"
    )
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_campaign(path)
    lines = str(err.value).splitlines()
    assert len(lines) == 2, lines
    assert (
        lines[0].startswith(f"{path}:3:")
        and "unknown scenario 'outage_suport'" in lines[0]
        and "(fix: " in lines[0]
    )
    assert lines[1].startswith(f"{path}:12:14:") and "names agent 'nobody'" in lines[1]
    assert "(fix: use one of the campaign's agent names (s))" in lines[1]
