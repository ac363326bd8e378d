"""Chat models for the harness: any OpenAI-compatible endpoint, or a small packaged model in-process.

Both backends take a `ChatRequest` (messages, tools, temperature 0 and a seed by default, an
optional JSON schema or grammar for the answer) and return a `ChatResponse`, so a reader of agent
turns or an LLM agent is written once against `chat()`.
"""

from voice_audit.harness.llm.local import LocalChatClient
from voice_audit.harness.llm.openai import OpenAIChatClient, parse_response, request_body, wait_ready
from voice_audit.harness.llm.types import (
    ChatRequest,
    ChatResponse,
    LLMError,
    LLMFailure,
    Message,
    Tool,
    ToolCall,
    Usage,
)
from voice_audit.harness.llm.weights import (
    PACKAGED,
    PackagedFile,
    PackagedModel,
    packaged_model,
    resolve_weights,
    sha256_file,
)

__all__ = [
    "PACKAGED",
    "ChatRequest",
    "ChatResponse",
    "LLMError",
    "LLMFailure",
    "LocalChatClient",
    "Message",
    "OpenAIChatClient",
    "PackagedFile",
    "PackagedModel",
    "Tool",
    "ToolCall",
    "Usage",
    "packaged_model",
    "parse_response",
    "request_body",
    "resolve_weights",
    "sha256_file",
    "wait_ready",
]
