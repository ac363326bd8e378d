"""Hostile and malformed user files: every failure is a ConfigError (one positioned line per problem, each with its fix), never a crash.

Mutations start from valid files (campaign, scenario, catalogue) and corrupt them: text edits
(character insertions, deletions, line drops and duplications) and structural edits (values
replaced with other types, keys removed or renamed). Run with more examples by setting
HYPOTHESIS_PROFILE=volume.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from voice_audit.harness.planning import load_campaign
from voice_audit.personas import DEFAULT_CATALOGUE, load_catalogue
from voice_audit.scenarios import BUNDLED_LIBRARY, ConfigError, LockError, load_scenario_file

settings.register_profile(
    "ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.register_profile(
    "volume", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

CAMPAIGN = """\
name: f
seed: 3
scenarios: [refund_duplicate_charge]
agents:
  - {name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
voices: 2
tts: {name: espeak}
"""
SCENARIO = (BUNDLED_LIBRARY / "refund_duplicate_charge.yaml").read_text()
CATALOGUE = DEFAULT_CATALOGUE.read_text()

JUNK = st.text(
    alphabet=st.sampled_from([*list(":{}[]-,'\"#&*!|>%@`\t\n "), "\x00", "é", "\u2028"]), max_size=4
)


@st.composite
def text_mutation(draw: st.DrawFn, base: str) -> str:
    lines = base.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["insert", "delete_line", "dup_line", "truncate"]))
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        if op == "insert":
            j = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + draw(JUNK) + lines[i][j:]
        elif op == "delete_line":
            del lines[i]
        elif op == "dup_line":
            lines.insert(i, lines[i])
        else:
            lines = lines[: i + 1]
            lines[-1] = lines[-1][: draw(st.integers(0, len(lines[-1])))]
    return "".join(lines)


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@st.composite
def structural_mutation(draw: st.DrawFn, base: str) -> str:
    data = yaml.safe_load(base)
    for _ in range(draw(st.integers(1, 3))):
        node = data
        path: list[object] = []
        while isinstance(node, dict | list) and node and draw(st.booleans()):
            key = (
                draw(st.sampled_from(sorted(node, key=str)))
                if isinstance(node, dict)
                else draw(st.integers(0, len(node) - 1))
            )
            path.append(key)
            node = node[key]
        if not path:
            continue
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        op = draw(st.sampled_from(["replace", "remove", "rename"]))
        last = path[-1]
        if op == "replace":
            parent[last] = draw(VALUES)
        elif op == "remove":
            del parent[last]
        elif isinstance(parent, dict):
            parent[str(last) + draw(st.text(min_size=1, max_size=3))] = parent.pop(last)
    return yaml.safe_dump(data, allow_unicode=True)


def _expect_clean(fn: object, path: Path) -> None:
    """A rejected file reports each problem on its own line: the file, a line and column inside it,
    what is wrong and the fix. A lock error stays one line."""
    try:
        fn(path)  # type: ignore[operator]
    except ConfigError as exc:
        msg = str(exc)
        assert msg and "Traceback" not in msg
        lines = msg.splitlines()
        assert len(lines) == len(getattr(exc, "errors", (exc,))), msg
        last_line = len(path.read_text(encoding="utf-8", errors="surrogatepass").splitlines()) + 1
        positioned = re.compile(
            re.escape(str(path)) + r":([1-9][0-9]*):([1-9][0-9]*): (\S.*) \(fix: (\S.*)\)"
        )
        for line in lines:
            found = positioned.fullmatch(line)
            assert found, f"not a positioned one-line error with a fix: {line!r}"
            assert int(found[1]) <= last_line, f"names a line past the end of the file: {line!r}"
    except LockError as exc:
        msg = str(exc)
        assert msg and "\n" not in msg.strip(), msg
        assert "Traceback" not in msg


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(text_mutation(CAMPAIGN), structural_mutation(CAMPAIGN)))
def test_mutated_campaigns_fail_cleanly(tmp_path: Path, text: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    before = sorted(tmp_path.iterdir())
    _expect_clean(load_campaign, path)
    assert sorted(tmp_path.iterdir()) == before, "a rejected campaign must write nothing"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(text_mutation(SCENARIO), structural_mutation(SCENARIO)))
def test_mutated_scenarios_fail_cleanly(tmp_path: Path, text: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _expect_clean(load_scenario_file, path)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(text_mutation(CATALOGUE), structural_mutation(CATALOGUE)))
def test_mutated_catalogues_fail_cleanly(tmp_path: Path, text: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _expect_clean(load_catalogue, path)


def test_yaml_tags_never_execute_code(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN + "evil: !!python/object/apply:os.system ['touch pwned']\n")
    _expect_clean(load_campaign, path)
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()
