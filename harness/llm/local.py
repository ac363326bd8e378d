"""The offline backend: a GGUF model from a registry package, run in-process by llama-cpp-python.

The same chat vocabulary as the HTTP client. Calls are serialised on one model (llama.cpp contexts
are not thread-safe) and run off the event loop. Every request starts from the same state: the
saved KV state of its prefix (every message but the last, e.g. a reader's instructions), computed
once the first time that prefix is seen, or an empty cache. So an answer depends only on its
request, identical across processes and call orders, and a long shared prompt is evaluated once.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from harness.llm.openai import parse_response, request_body
from harness.llm.types import ChatRequest, ChatResponse, LLMError
from harness.llm.weights import PackagedModel, resolve_weights

PREFIX_STATES = 8
INSTALL_HINT = "pip install 'voice-audit[llm]' (llama-cpp-python, built portable: see the README)"


def _load_llama(path: Path, n_ctx: int, n_threads: int, seed: int) -> Any:
    try:
        from llama_cpp import Llama
    except ImportError:
        raise LLMError("llm_model_error", f"the local model backend needs llama-cpp-python: {INSTALL_HINT}") from None
    try:
        return Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False)
    except (ValueError, RuntimeError) as exc:
        raise LLMError("llm_model_error", f"{path}: llama.cpp could not load the model ({exc})") from None


class LocalChatClient:
    """A packaged model (checked against its pinned sha256 at load) or a GGUF file with a given sha256."""

    def __init__(
        self,
        model: PackagedModel | Path,
        *,
        sha256: str | None = None,
        n_ctx: int = 2048,
        n_threads: int | None = None,
    ) -> None:
        self.path, self.sha256 = resolve_weights(model, sha256)
        self.name = f"local:{model.name if isinstance(model, PackagedModel) else self.path.name}"
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, min(4, os.cpu_count() or 1))
        self._llm: Any = None
        self._lock = threading.Lock()
        self._prefixes: OrderedDict[str, Any] = OrderedDict()

    def __repr__(self) -> str:
        return f"LocalChatClient({self.name!r}, sha256={self.sha256[:12]}...)"

    def _model(self, seed: int) -> Any:
        if self._llm is None:
            self._llm = _load_llama(self.path, self.n_ctx, self.n_threads, seed)
        return self._llm

    def _kwargs(self, req: ChatRequest) -> dict[str, Any]:
        body = request_body(self.name, req, "none")
        kw: dict[str, Any] = {
            "messages": body["messages"],
            "temperature": req.temperature,
            "top_k": 1 if req.temperature == 0 else 40,
            "top_p": 1.0,
            "seed": req.seed,
            "max_tokens": req.max_tokens,
        }
        for key in ("tools", "tool_choice", "stop"):
            if key in body:
                kw[key] = body[key]
        grammar = req.grammar
        if grammar is None and req.json_schema is not None:
            from llama_cpp.llama_grammar import json_schema_to_gbnf

            grammar = json_schema_to_gbnf(json.dumps(req.json_schema))
        if grammar is not None:
            from llama_cpp import LlamaGrammar

            kw["grammar"] = LlamaGrammar.from_string(grammar, verbose=False)
        return kw

    def _prefix_state(self, llm: Any, messages: list[dict[str, Any]]) -> Any | None:
        """The saved state after the chat template's rendering of all messages but the last."""
        template = llm.metadata.get("tokenizer.chat_template")
        if template is None or len(messages) < 2:
            return None
        key = json.dumps(messages[:-1], sort_keys=True)
        if key in self._prefixes:
            self._prefixes.move_to_end(key)
            return self._prefixes[key]
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def text(token: int) -> str:
            return llm.detokenize([token], special=True).decode("utf-8", "replace") if token >= 0 else ""

        fmt = Jinja2ChatFormatter(
            template=template, eos_token=text(llm.token_eos()), bos_token=text(llm.token_bos()),
            add_generation_prompt=False,
        )  # fmt: skip
        rendered = fmt(messages=messages[:-1])  # type: ignore[arg-type]
        tokens = llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
        llm.reset()
        llm.eval(tokens)
        state = llm.save_state()
        self._prefixes[key] = state
        while len(self._prefixes) > PREFIX_STATES:
            self._prefixes.popitem(last=False)
        return state

    def chat_sync(self, req: ChatRequest) -> ChatResponse:
        """One completion; blocking (the async `chat` runs it in a worker thread)."""
        with self._lock:
            llm = self._model(req.seed)
            start = time.perf_counter()
            try:
                kw = self._kwargs(req)
                state = self._prefix_state(llm, kw["messages"])
                if state is None:
                    llm.reset()
                else:
                    llm.load_state(state)
                llm.set_seed(req.seed)
                out = llm.create_chat_completion(**kw)
            except (ValueError, RuntimeError) as exc:
                raise LLMError("llm_model_error", f"{self.name}: {type(exc).__name__}: {exc}") from None
            elapsed = (time.perf_counter() - start) * 1000.0
        return parse_response(out, elapsed)

    async def chat(self, req: ChatRequest) -> ChatResponse:
        return await asyncio.to_thread(self.chat_sync, req)

    async def close(self) -> None:
        """Nothing bound to an event loop; the model stays loaded (see `unload`)."""

    def unload(self) -> None:
        """Free the model's memory; the next request loads it again."""
        with self._lock:
            llm, self._llm = self._llm, None
            self._prefixes.clear()
        if llm is not None:
            llm.close()

    async def __aenter__(self) -> LocalChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
