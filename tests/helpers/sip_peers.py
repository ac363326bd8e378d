"""Independent SIP peers for interop tests, started on 127.0.0.1 and stopped by the test.

- `Baresip`: Debian's baresip 1.0 as an auto-answering telephone. It plays a WAV as its
  microphone (`aufile`), records each call (`sndfile`: `*-dec.wav` is what it heard, `*-enc.wav`
  what it sent) and logs received DTMF ("received event: '5'"). When its WAV ends it hangs up, so
  a short greeting makes a remote-hang-up endpoint. Pitfalls (measured): it always opens TLS on
  PORT+1, binds RTP on 0.0.0.0 whatever the config, and wants its DNS pointed at 127.0.0.1.
- `Sipp`: SIPp (Debian `sip-tester`) running one UAS scenario from tests/fixtures/sip.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import threading
import time
import wave
from pathlib import Path
from types import TracebackType

import numpy as np

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sip"


def _free(port: int) -> bool:
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def free_port_pair() -> int:
    """A port P with P and P+1 free for UDP and TCP on loopback."""
    for _ in range(200):
        p = random.randrange(20000, 60000, 2)
        if _free(p) and _free(p + 1):
            return p
    raise RuntimeError("no free port pair on 127.0.0.1")


def write_wav(path: Path, pcm: np.ndarray, rate: int = 8000) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.astype("<i2").tobytes())
    return path


def tone(freq: float, seconds: float, rate: int = 8000, amp: float = 0.3, pad_s: float = 0.0) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    x = amp * 32767 * np.sin(2 * np.pi * freq * t)
    return np.concatenate([x, np.zeros(int(rate * pad_s))]).astype(np.int16)


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2"), w.getframerate()


def dominant_hz(x: np.ndarray, rate: int) -> float:
    """The strongest frequency of the louder part of `x` (silence excluded)."""
    frames = x[: len(x) - len(x) % 160].reshape(-1, 160).astype(np.float64)
    loud = frames[np.sqrt((frames**2).mean(axis=1)) > 300]
    if loud.size == 0:
        return 0.0
    spec = np.abs(np.fft.rfft(loud.reshape(-1) * np.hanning(loud.size)))
    return float(np.argmax(spec) * rate / loud.size)


class Baresip:
    def __init__(self, workdir: Path, greeting: np.ndarray) -> None:
        if shutil.which("baresip") is None:
            raise RuntimeError("baresip is not installed (make system-deps)")
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rec = self.dir / "rec"
        self.rec.mkdir(exist_ok=True)
        self.port = free_port_pair()
        rtp = random.randrange(30000, 60000, 200)
        write_wav(self.dir / "greet.wav", greeting)
        (self.dir / "config").write_text(
            "poll_method\tepoll\n"
            f"sip_listen\t127.0.0.1:{self.port}\n"
            "sip_trans_def\tudp\n"
            f"audio_source\taufile,{self.dir / 'greet.wav'}\n"
            "audio_player\taubridge,nil\n"
            "ausrc_srate\t8000\nauplay_srate\t8000\n"
            f"rtp_ports\t{rtp}-{rtp + 100}\nrtp_timeout\t0\n"
            "dns_server\t127.0.0.1:53\nnet_interface\t127.0.0.1\n"
            "module_path\t/usr/lib/baresip/modules\n"
            "module\tg711.so\nmodule\tg722.so\nmodule\taufile.so\nmodule\taubridge.so\nmodule\tsndfile.so\n"
            "module_app\taccount.so\nmodule_app\tmenu.so\n"
            f"snd_path\t{self.rec}\n"
        )
        (self.dir / "accounts").write_text(
            "<sip:bot@127.0.0.1>;regint=0;answermode=auto\n"  # every loaded codec: G.711 and G.722
        )
        self.lines: list[str] = []
        self.proc: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"sip:bot@127.0.0.1:{self.port}"

    def __enter__(self) -> Baresip:
        self.proc = subprocess.Popen(
            ["baresip", "-f", str(self.dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        ready = threading.Event()

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.append(line)
                if "baresip is ready" in line:
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(10):
            self.__exit__(None, None, None)
            raise RuntimeError("baresip did not start:\n" + "".join(self.lines))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def log(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout_s: float = 5.0) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if text in self.log():
                return True
            time.sleep(0.05)
        return False

    def heard(self) -> Path:
        """The recording of what baresip heard on its last call."""
        return sorted(self.rec.glob("*-dec.wav"))[-1]


class Sipp:
    """`sipp -sf SCENARIO` as a UAS for exactly `calls` calls, on 127.0.0.1; `keys` fill the
    scenario's `[name]` fields (`-key name value`)."""

    def __init__(self, scenario: str, calls: int = 1, keys: dict[str, str] | None = None) -> None:
        self.calls = calls
        self.keys = dict(keys or {})
        if shutil.which("sipp") is None:
            raise RuntimeError("sipp is not installed (make system-deps: sip-tester)")
        self.scenario = FIXTURES / scenario
        self.port = free_port_pair()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"sip:agent@127.0.0.1:{self.port}"

    def __enter__(self) -> Sipp:
        self.proc = subprocess.Popen(
            [
                "sipp",
                "-sf",
                str(self.scenario),
                "-i",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-m",
                str(self.calls),
                "-mi",
                "127.0.0.1",
                "-mp",
                str(free_port_pair()),
                "-nostdin",
                *(arg for name, value in self.keys.items() for arg in ("-key", name, value)),
            ],
            cwd=FIXTURES,  # scenarios name their pcaps relative to their own folder
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.3)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def passed(self, timeout_s: float = 5.0) -> bool:
        """SIPp exits 0 when each of its calls followed the scenario to the end."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout_s) == 0
        except subprocess.TimeoutExpired:
            return False
