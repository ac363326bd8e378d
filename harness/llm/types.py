"""Chat request and response shapes shared by every backend, in the OpenAI chat-completions vocabulary.

One vocabulary for a remote endpoint and the in-process model, so a caller (a reader of agent
turns, an LLM agent) is written once and the backend is a campaign choice.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from voice_audit.scenarios.base import Frozen

Role = Literal["system", "user", "assistant", "tool"]
LLMFailure = Literal[
    "llm_unreachable", "llm_timeout", "llm_http_error", "llm_bad_response", "llm_model_error"
]


class ToolCall(Frozen):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Message(Frozen):
    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


class Tool(Frozen):
    """A function the model may call; `parameters` is a JSON schema object."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ChatRequest(Frozen):
    """Deterministic by default: temperature 0 and a fixed seed.

    `json_schema` asks for one JSON object matching the schema (OpenAI structured output; a grammar
    in the local backend); `grammar` is a GBNF grammar, honoured by llama.cpp servers and the local
    backend only.
    """

    messages: tuple[Message, ...] = Field(min_length=1)
    tools: tuple[Tool, ...] = ()
    tool_choice: Literal["auto", "none", "required"] | str | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int = 0
    max_tokens: int = Field(default=256, ge=1, le=32768)
    json_schema: dict[str, Any] | None = None
    schema_name: str = Field(default="answer", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    grammar: str | None = None
    stop: tuple[str, ...] = ()


class Usage(Frozen):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens served from a reused prefix (not evaluated for this request)."""
    reported: bool = True
    """False when the endpoint's answer carried no usage: the counts above are then unknown, not zero."""


class ChatResponse(Frozen):
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    model: str = ""
    usage: Usage = Usage()
    elapsed_ms: float = Field(default=0.0, ge=0)


class LLMError(RuntimeError):
    """A failure of the model side, with a machine-readable kind; never carries a credential."""

    def __init__(self, kind: LLMFailure, message: str) -> None:
        super().__init__(message)
        self.kind: LLMFailure = kind
