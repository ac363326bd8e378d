"""The shared adapter shell: options, shared engines, one `TurnSession` per call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from voice_audit.agents.reference._audio import AgentEar, AgentMouth, shared_recognizer, shared_synthesizer
from voice_audit.agents.reference._knobs import make_detector
from voice_audit.agents.reference._options import AgentOptions, parse_options
from voice_audit.agents.reference._policy import DialoguePolicy, PolicyConfig
from voice_audit.agents.reference._session import ArchitectureExposure, Perceive, TurnSession
from voice_audit.harness.adapter import AudioFormat, CallInfo, Capabilities
from voice_audit.harness.audio import SpeechRecognizer, SpeechSynthesizer
from voice_audit.harness.model.campaign import Architecture
from voice_audit.harness.tools import ToolFixture


class ReferenceAdapter:
    """Base of the three reference agents; subclasses choose perception, exposure and policy defaults."""

    architecture: ClassVar[Architecture]
    default_name: ClassVar[str]
    exposure: ClassVar[ArchitectureExposure]
    policy_defaults: ClassVar[Mapping[str, Any]] = {}

    def __init__(
        self,
        options: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        synthesizer: SpeechSynthesizer | None = None,
        recognizer: SpeechRecognizer | None = None,
    ) -> None:
        self.options: AgentOptions
        self.options, runtime = parse_options(options or {})
        self.name = name or self.default_name
        self.policy_config: PolicyConfig = self.options.policy_config(self.policy_defaults)
        self._runtime = runtime
        self._synth = synthesizer
        self._recognizer = recognizer
        self.capabilities = Capabilities(
            architecture=self.architecture,
            turn_based=True,
            streaming=False,
            transcripts=self.exposure.transcripts,
            tool_trace=self.exposure.tools,
            fact_provisioning=True,
            input_format=AudioFormat("pcm16", 16000),
            protocol="in-process",
        )

    @property
    def synthesizer(self) -> SpeechSynthesizer:
        if self._synth is None:
            o = self.options
            self._synth = shared_synthesizer(o.tts_backend, o.tts_options, o.tts_pool_size)
        return self._synth

    @property
    def recognizer(self) -> SpeechRecognizer:
        if self._recognizer is None:
            self._recognizer = shared_recognizer(self.options.asr_backend, self.options.asr_options)
        return self._recognizer

    def perceiver(self, ear: AgentEar) -> Perceive:
        raise NotImplementedError

    async def connect(self, call: CallInfo) -> TurnSession:
        policy = DialoguePolicy(call.facts, ToolFixture(call.facts), self.policy_config, call_id=call.call_id)
        detector = make_detector({"detector": self.options.detector, **self._runtime}, call.oracle)
        mouth = AgentMouth(self.synthesizer, self.options.voice, self.options.output_rate)
        session = TurnSession(
            call,
            policy,
            mouth,
            self.perceiver(AgentEar(self.recognizer)),
            detector,
            self.exposure,
            self.policy_config.knobs.service_failure,
        )
        await session.start()
        return session

    async def aclose(self) -> None:
        """Engines are shared per process (see `_audio`), so there is nothing per adapter to release."""
