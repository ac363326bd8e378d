"""Which reader the caller acts on, and the second reader that runs beside it.

The caller acts on the rule reader unless the campaign chooses the model reader; when a model
reader is configured, the other reader reads every turn too and its reading is logged next to
the decision (`caller_reading`), so disagreement between the two observers is visible per turn.
A failure of the acting reader is the caller's own failure (`caller_error`); a failure of the
other reader is logged with that turn and the call goes on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voice_audit.harness.caller.classify import RuleReader
from voice_audit.harness.caller.model_reader import ModelReader, ReaderError
from voice_audit.harness.caller.reading import Reader, Reading
from voice_audit.harness.llm import LLMError, LocalChatClient, OpenAIChatClient, packaged_model
from voice_audit.harness.model.campaign import ModelReaderSpec, ReaderSpec
from voice_audit.scenarios import ConfigError, Scenario

AnyReader = Reader | ModelReader


async def _read(reader: AnyReader, text: str, scenario: Scenario) -> Reading:
    if isinstance(reader, ModelReader):
        return await reader.aread(text, scenario)
    return reader.read(text, scenario)


@dataclass(frozen=True)
class TurnReadings:
    """The acting reading (what the caller reacts to) and the other reader's, if one runs."""

    acting: Reading
    acting_reader: str
    other: Reading | None = None
    other_reader: str | None = None
    other_error: str | None = None
    other_ms: float = 0.0

    def event_fields(self) -> dict[str, Any] | None:
        """Fields of the `caller_reading` event for this turn (None when no second reader runs)."""
        if self.other_reader is None:
            return None
        r = self.other
        return {
            "reader": self.other_reader,
            "acting_reader": self.acting_reader,
            "classification": r.classification if r else None,
            "acts": r.act_names if r else (),
            "rule": r.rule if r else None,
            "challenge_fact": (",".join(r.challenge_facts) or None) if r else None,
            "error": self.other_error,
            "elapsed_ms": round(self.other_ms, 1),
        }


class ReadAhead:
    """The `Reader` the caller policy is given: it returns the acting reading `Readers.read` already
    made for this turn, so an asynchronous reader (a model endpoint) decides without blocking."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._ahead: tuple[str, Reading] | None = None

    def put(self, text: str, reading: Reading) -> None:
        self._ahead = (text, reading)

    def read(self, text: str, scenario: Scenario) -> Reading:
        if self._ahead is None or self._ahead[0] != text:
            raise RuntimeError("the policy read a turn that Readers.read did not read first")
        reading = self._ahead[1]
        self._ahead = None
        return reading


class Readers:
    """The readers of one call: `await read(text)` gives both readings of an agent turn and hands the
    acting one to `policy_reader` (pass it as `CallerPolicy(scenario, reader=readers.policy_reader)`)."""

    def __init__(self, scenario: Scenario, acting: AnyReader, other: AnyReader | None = None) -> None:
        self.scenario = scenario
        self.acting = acting
        self.other = other
        self.policy_reader = ReadAhead(acting.name)

    async def read(self, text: str) -> TurnReadings:
        try:
            acting = await _read(self.acting, text, self.scenario)
        except ReaderError as exc:
            raise ReaderError(exc.reader, exc.kind, f"the acting reader failed: {exc}") from None
        self.policy_reader.put(text, acting)
        if self.other is None:
            return TurnReadings(acting, self.acting.name)
        start = time.perf_counter()
        try:
            other: Reading | None = await _read(self.other, text, self.scenario)
            error = None
        except ReaderError as exc:
            other, error = None, f"{exc.kind}: {exc}"
        return TurnReadings(
            acting, self.acting.name, other, self.other.name, error, (time.perf_counter() - start) * 1000
        )


def model_reader(spec: ModelReaderSpec) -> ModelReader:
    """The campaign's model reader; its backend (HTTP client or local model) is shared by all calls."""
    backend: OpenAIChatClient | LocalChatClient
    if spec.backend == "openai":
        assert spec.base_url is not None  # the spec validates this
        backend = OpenAIChatClient(
            spec.base_url,
            spec.model,
            api_key_env=spec.api_key_env,
            timeout_s=spec.timeout_s,
            structured=spec.structured,
        )
    elif spec.model_path is not None:
        backend = LocalChatClient(Path(spec.model_path), sha256=spec.sha256, n_threads=spec.threads)
    else:
        backend = LocalChatClient(packaged_model(spec.model), n_threads=spec.threads)
    return ModelReader(backend, seed=spec.seed, max_tokens=spec.max_tokens)


class ReaderSet:
    """Campaign-wide: builds each call's `Readers` from the campaign's reader choice."""

    def __init__(self, spec: ReaderSpec) -> None:
        self.spec = spec
        self.rules = RuleReader()
        try:
            self.model = model_reader(spec.model) if spec.model is not None else None
        except LLMError as exc:
            raise ConfigError(
                f"campaign reader.model: {exc}", fix="see the reader section of the campaign"
            ) from None

    def for_call(self, scenario: Scenario) -> Readers:
        if self.model is None:
            return Readers(scenario, self.rules)
        if self.spec.acting == "model":
            return Readers(scenario, self.model, self.rules)
        return Readers(scenario, self.rules, self.model)

    async def close(self) -> None:
        if self.model is not None:
            await self.model.close()
