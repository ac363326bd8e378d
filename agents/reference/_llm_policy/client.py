"""The chat model behind the LLM reference agent: which model (`LLMConfig`), one loaded client per
configuration in the process, and the compute its tokens cost on the virtual clock."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Literal, Protocol

from pydantic import Field

from voice_audit.harness.llm import (
    PACKAGED,
    ChatRequest,
    ChatResponse,
    LLMError,
    LocalChatClient,
    OpenAIChatClient,
    packaged_model,
)
from voice_audit.scenarios.base import Frozen


class LLMConfig(Frozen):
    """Which model the agent talks to. The key is never here: `api_key_env` names its variable."""

    backend: Literal["local", "openai"] = "local"
    model: str = "qwen2.5-coder-1.5b"
    """A packaged model (`voice_audit.harness.llm.PACKAGED`) for `local`, the endpoint's model name for `openai`."""
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Z_][A-Z0-9_]{2,}$")
    structured: Literal["json_schema", "json_object", "none"] = "json_schema"
    """How an endpoint is asked for the JSON step (`json_object` for llama.cpp's server)."""
    model_path: str | None = None
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    threads: int | None = Field(default=1, ge=1, le=64)
    """In-process threads; one by default (OpenMP threads busy-wait on a shared, loaded machine)."""
    seed: int = 0
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=80, ge=16, le=2048)
    """A step is compact JSON with a spoken line of at most `SAY_CHARS` characters (about 60 tokens)."""
    max_steps: int = Field(default=3, ge=1, le=8)
    """Model steps per caller turn (a tool call, its result, then a reply)."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Per request to an endpoint (the in-process model is waited for: its thread cannot be stopped)."""
    prompt_ms_per_token: float | None = Field(default=None, ge=0)
    completion_ms_per_token: float | None = Field(default=None, ge=0)
    """The in-process model's compute as reported to the virtual clock, per evaluated prompt token
    (a cached prefix costs nothing) and per generated token; unset, the packaged model's measured
    figures (`voice_audit.harness.llm.PackagedModel`), so a call's latency does not depend on a shared
    machine's load. An endpoint's latency is its measured response time."""

    @property
    def label(self) -> str:
        return f"{self.backend}:{self.model}"


class ChatBackend(Protocol):
    name: str

    async def chat(self, req: ChatRequest) -> ChatResponse: ...


_lock = threading.Lock()
_clients: dict[str, ChatBackend] = {}


def shared_chat_client(cfg: LLMConfig) -> ChatBackend:
    """One client (one loaded model) per configuration in this process."""
    key = cfg.model_dump_json(
        include={
            "backend",
            "model",
            "base_url",
            "api_key_env",
            "structured",
            "model_path",
            "sha256",
            "threads",
            "timeout_s",
        }
    )
    with _lock:
        if key not in _clients:
            _clients[key] = _make_client(cfg)
        return _clients[key]


def _make_client(cfg: LLMConfig) -> ChatBackend:
    if cfg.backend == "openai":
        if not cfg.base_url:
            raise LLMError("llm_unreachable", "llm.base_url is required for the openai backend")
        return OpenAIChatClient(
            cfg.base_url,
            cfg.model,
            api_key_env=cfg.api_key_env,
            timeout_s=cfg.timeout_s,
            structured=cfg.structured,
        )
    if cfg.model_path is not None:
        return LocalChatClient(Path(cfg.model_path), sha256=cfg.sha256, n_threads=cfg.threads)
    return LocalChatClient(packaged_model(cfg.model), n_threads=cfg.threads)


def _token_costs(cfg: LLMConfig) -> tuple[float, float]:
    known = PACKAGED.get(cfg.model) if cfg.backend == "local" and cfg.model_path is None else None
    prompt = (
        cfg.prompt_ms_per_token
        if cfg.prompt_ms_per_token is not None
        else (known.prompt_ms_per_token if known else 14.0)
    )
    completion = (
        cfg.completion_ms_per_token
        if cfg.completion_ms_per_token is not None
        else (known.completion_ms_per_token if known else 77.0)
    )
    return prompt, completion
