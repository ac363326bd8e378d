"""The caller's mouth: persona text transforms, TTS, the telephone channel, the agent's input format."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from voice_audit.harness.adapter import AudioFormat
from voice_audit.harness.audio import SpeechSynthesizer, TelephoneChannel, mulaw_encode, resample
from voice_audit.harness.audio.channel import TELEPHONE_RATE
from voice_audit.harness.caller.policy import Say
from voice_audit.harness.caller.vocabulary import clearer_speech, said_key, text_key
from voice_audit.harness.runtime.recorder import RECORDING_RATE, to_recording_rate
from voice_audit.personas import CallerCondition, Catalogue, SpeechParams, Utterance, render_utterance


@dataclass(frozen=True)
class Spoken:
    """One caller utterance: `wire` as the agent receives it, `pcm16k` for the harness's own use,
    `line` at `line_rate` as the telephone line carries it (what the call recording holds)."""

    text: str
    wire: bytes
    pcm16k: np.ndarray
    duration_ms: int
    channel: dict[str, Any]
    line: np.ndarray
    line_rate: int
    voice: dict[str, Any] = field(default_factory=dict)


class SpokenCache:
    """LRU of finished caller audio: the same words, voice, channel seed and format give the same bytes.

    The same synthetic caller meets every agent of a campaign, so its audio is reused across agents.
    """

    def __init__(self, items: int = 4096) -> None:
        self.items = items
        self._data: OrderedDict[tuple[Any, ...], Spoken] = OrderedDict()
        self._making: dict[tuple[Any, ...], asyncio.Future[Spoken]] = {}
        self.hits = 0
        self.made = 0

    def get(self, key: tuple[Any, ...]) -> Spoken | None:
        hit = self._data.get(key)
        if hit is not None:
            self._data.move_to_end(key)
            self.hits += 1
        return hit

    def put(self, key: tuple[Any, ...], value: Spoken) -> None:
        self._data[key] = value
        if len(self._data) > self.items:
            self._data.popitem(last=False)

    async def get_or_make(self, key: tuple[Any, ...], make: Callable[[], Awaitable[Spoken]]) -> Spoken:
        """The cached utterance, or make it once: calls asking for the same key meanwhile wait for
        that one (a campaign starts `concurrency` calls at once, all with the same first lines)."""
        while (hit := self.get(key)) is None and (making := self._making.get(key)) is not None:
            try:
                await asyncio.shield(making)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not making.cancelled() or (task is not None and task.cancelling()):
                    raise
            except Exception:  # the call making it failed: make it here, with our own error if any
                pass
        if hit is not None:
            return hit
        future: asyncio.Future[Spoken] = asyncio.get_running_loop().create_future()
        self._making[key] = future
        try:
            value = await make()
        except Exception as exc:
            future.set_exception(exc)
            future.exception()
            raise
        except BaseException:
            future.cancel()
            raise
        finally:
            del self._making[key]
        self.made += 1
        self.put(key, value)
        future.set_result(value)
        return value


class CallerVoice:
    """Speaks for one caller. Channel noise is seeded by (pair seed, turn), so both sides get the same noise;
    the words' disfluency by (`text_seed`, the pair's line variant, and the template), so both sides
    say the same variant and a repeat says the same words."""

    def __init__(
        self,
        synth: SpeechSynthesizer,
        catalogue: Catalogue,
        condition: CallerCondition,
        speech: SpeechParams,
        slots: dict[str, str],
        seed: int,
        channel: TelephoneChannel | None,
        target: AudioFormat,
        cache: SpokenCache | None = None,
        *,
        text_seed: int | None = None,
    ) -> None:
        self.synth = synth
        self.catalogue = catalogue
        self.condition = condition
        self.speech = speech
        self.slots = slots
        self.seed = seed
        self.text_seed = seed if text_seed is None else text_seed
        self.channel = channel
        self.target = target
        self._said: dict[str, int] = {}
        self.cache = cache if cache is not None else SpokenCache(64)

    @property
    def line_rate(self) -> int:
        """The rate of `Spoken.line`: the telephone line's, or wideband without a channel."""
        return TELEPHONE_RATE if self.channel is not None else RECORDING_RATE

    @staticmethod
    def _clearer(speech: SpeechParams, kind: str, count: int) -> SpeechParams:
        return clearer_speech(speech, kind, count)

    def _count(self, counts: dict[str, int], key: str) -> int:
        count = counts.get(key, 0)
        counts[key] = count + 1
        return count

    def _render(self, say: Say, count: int) -> Utterance:
        def one(template: str, framing: bool) -> Utterance:
            key = text_key(template, framing)
            return render_utterance(
                template,
                self.slots,
                self.condition,
                self.catalogue,
                seed=self.text_seed,
                key=key,
                framing=framing,
            )

        if len(say.parts) <= 1:
            return one(say.template, say.framing and count == 0)
        said = [one(part, False) for part in say.parts]
        return Utterance(
            text=" ".join(u.text for u in said),
            ssml="<speak>"
            + " ".join(u.ssml.removeprefix("<speak>").removesuffix("</speak>") for u in said)
            + "</speak>",
            base_text=" ".join(u.base_text for u in said),
            protected=tuple(p for u in said for p in u.protected),
        )

    async def speak(self, say: Say, turn: int) -> Spoken:
        count = self._count(self._said, said_key(say))
        utt = self._render(say, count)
        params = self._clearer(self.speech, say.kind, count)
        channel_seed = (self.seed + 7919 * turn) % (2**32)
        random_channel = self.channel is not None and (
            self.channel.snr_db is not None or self.channel.packet_loss > 0
        )
        channel_key = (self.channel.snr_db, self.channel.packet_loss) if self.channel is not None else None
        # Everything the synthesis and the channel depend on: a hit skips both (and the TTS
        # cache's hashing of the parameters), which is most turns of a campaign.
        key: tuple[Any, ...] = (
            self.synth.backend.name,
            self.synth.backend.version,
            utt.text,
            utt.ssml,
            params,
            channel_key,
            channel_seed if random_channel else None,
            self.target,
        )
        return await self.cache.get_or_make(key, lambda: self._make(utt.text, utt.ssml, params, channel_seed))

    async def _make(self, text: str, ssml: str | None, params: SpeechParams, channel_seed: int) -> Spoken:
        """Synthesis, the channel, and the agent's input format: done once per distinct utterance."""
        synth = await self.synth.speak(text, ssml, params)
        pcm, rate = np.asarray(synth.pcm), synth.sample_rate
        report: dict[str, Any] = {}
        if self.channel is not None:
            out = self.channel.apply(pcm, rate, seed=channel_seed)
            pcm, rate = np.asarray(out.pcm), out.sample_rate
            report = out.report.model_dump(mode="json")
        pcm16k = to_recording_rate(pcm, rate)
        if self.target.sample_rate == RECORDING_RATE:
            at_rate = pcm16k
        elif rate == self.target.sample_rate:
            at_rate = pcm
        else:
            at_rate = resample(pcm, rate, self.target.sample_rate)[0]
        if self.target.encoding == "mulaw":
            wire = mulaw_encode(np.asarray(at_rate, dtype=np.int16))
        else:
            wire = np.asarray(at_rate, dtype="<i2").tobytes()
        duration_ms = round(1000 * len(pcm16k) / RECORDING_RATE)
        line, line_rate = (
            (np.asarray(pcm, dtype=np.int16), rate) if self.channel is not None else (pcm16k, RECORDING_RATE)
        )
        voice = {"backend": synth.backend, "version": synth.backend_version, **synth.params}
        return Spoken(text, wire, pcm16k, duration_ms, report, line, line_rate, voice)
