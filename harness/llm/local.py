"""The offline backend: a GGUF model from a registry package, run in-process by llama-cpp-python.

The same chat vocabulary as the HTTP client. Calls are serialised on one model (llama.cpp contexts
are not thread-safe) and run off the event loop.

Prefix reuse, as llama.cpp deployments do it, without giving up determinism. A request's prefix
(every message but the last) is evaluated message by message on top of the saved KV state of the
message before it, and the state after the last prefix message is kept (as is the state after the
leading system message: an agent's prompt with its tools and facts, or a reader's instructions).
The next request of the same conversation starts from that state and evaluates only its new
messages. Because the chunks are always the messages themselves, a prefix's state is the same
whether it came from the cache, from another conversation with the same start, or was recomputed
after an eviction: an answer depends only on its own messages, identical across processes, call
orders and interleaved conversations (re-using whatever the context last evaluated, as a bare
llama.cpp context does, is not: batch boundaries change the floating-point sums).

The state after a leading system message is also kept on disk (`voice_audit.harness.llm.states`,
folder `VOICE_AUDIT_LLM_STATES`, by default under the models cache): being canonical, its bytes are
the same in every process, so a fresh process loads it instead of evaluating the prompt again, and
its answers are bit-identical to those of the process that computed it.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import hashlib
import json
import os
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voice_audit.harness.llm import states
from voice_audit.harness.llm.openai import parse_response, request_body
from voice_audit.harness.llm.types import ChatRequest, ChatResponse, LLMError, Usage
from voice_audit.harness.llm.weights import PackagedModel, resolve_weights

PREFIX_STATES = 48
"""Saved prefix states kept (least recently used dropped): a few system prompts and the tails of
the conversations in flight. A state holds only the KV cells of its tokens (about 28 KB a token
for the 1.5B model), not the logits."""
INSTALL_HINT = "pip install 'voice-audit[llm]' (llama-cpp-python, built portable: see the README)"


def _load_llama(path: Path, n_ctx: int, n_threads: int, seed: int, batch_threads: int | None = None) -> Any:
    """`batch_threads` evaluates prompts (llama-cpp-python's default: every core, busy-waiting
    OpenMP threads that cost CPU on a loaded machine and change no result, which is bit-identical
    whatever the thread count)."""
    try:
        from llama_cpp import Llama
    except ImportError:
        raise LLMError(
            "llm_model_error", f"the local model backend needs llama-cpp-python: {INSTALL_HINT}"
        ) from None
    try:
        return Llama(
            model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=batch_threads,
            seed=seed, verbose=False,
        )  # fmt: skip
    except (ValueError, RuntimeError) as exc:
        raise LLMError("llm_model_error", f"{path}: llama.cpp could not load the model ({exc})") from None


class _GrammarLast:
    """Greedy sampling under a grammar the way llama.cpp's own sampler does it (`common_sampler`):
    the unconstrained argmax, checked against the grammar alone, and the grammar applied to the
    whole vocabulary only when it refuses that token. The same token every time (the argmax over
    the tokens the grammar allows is the overall argmax whenever the grammar allows that, ties to
    the lowest id either way; measured: the same tokens), for a fraction of the work: checking
    all 150k tokens of the vocabulary against the grammar cost about 15 ms of CPU a generated token
    (about a tenth of it, with the 1.5B model on one thread); the grammar refuses the argmax for a
    few tokens in a hundred."""

    def __init__(self, llm: Any, chain: Any, grammar: Any) -> None:
        from llama_cpp._internals import LlamaSampler

        self.chain = chain
        """llama-cpp-python's own chain (no-op penalties, the grammar, greedy): the fallback, kept in step."""
        self.grammar = LlamaSampler()
        self.grammar.add_grammar(llm._model, grammar)
        self.n_vocab = int(llm.n_vocab())

    def sample(self, ctx: Any, idx: int = -1) -> int:
        import ctypes

        import llama_cpp
        import numpy as np

        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx.ctx, idx), shape=(self.n_vocab,))
        token = int(np.argmax(logits))  # the first of equal maxima, as the greedy sampler picks
        if np.isfinite(logits[token]):
            one = llama_cpp.llama_token_data(token, 1.0, 0.0)
            cur = llama_cpp.llama_token_data_array(ctypes.pointer(one), 1, -1, False)
            llama_cpp.llama_sampler_apply(self.grammar.sampler, ctypes.byref(cur))
            if one.logit != float("-inf"):
                self.chain.accept(token)
                self.grammar.accept(token)
                return token
        token = int(self.chain.sample(ctx, idx))
        self.grammar.accept(token)
        return token


def _init_sampler(llm: Any, **kw: Any) -> Any:
    """llama-cpp-python's sampler, with greedy decoding under a grammar sped up (`_GrammarLast`)."""
    chain = type(llm)._init_sampler(llm, **kw)
    if (
        kw.get("grammar") is not None
        and kw.get("temp") == 0.0
        and kw.get("logits_processor") is None
        and kw.get("repeat_penalty", 1.0) == 1.0
        and kw.get("frequency_penalty", 0.0) == 0.0
        and kw.get("presence_penalty", 0.0) == 0.0
    ):
        return _GrammarLast(llm, chain, kw["grammar"])
    return chain


@dataclass(frozen=True)
class _Saved:
    tokens: tuple[int, ...]
    state: Any


def _unload_at_exit(ref: weakref.ref[LocalChatClient]) -> None:
    client = ref()
    if client is not None:
        client.unload()


def _key(messages: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


class LocalChatClient:
    """A packaged model (checked against its pinned sha256 at load) or a GGUF file with a given sha256."""

    def __init__(
        self,
        model: PackagedModel | Path,
        *,
        sha256: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
    ) -> None:
        self.path, self.sha256 = resolve_weights(model, sha256)
        self.name = f"local:{model.name if isinstance(model, PackagedModel) else self.path.name}"
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, min(4, os.cpu_count() or 1))
        self.batch_threads = n_threads
        """Threads for prompt evaluation too when a count was asked for (one thread means one)."""
        self._llm: Any = None
        self._lock = threading.Lock()
        self._prefixes: OrderedDict[str, _Saved] = OrderedDict()
        self._formatter: Any = None
        self._state_config: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"LocalChatClient({self.name!r}, sha256={self.sha256[:12]}...)"

    def _model(self, seed: int) -> Any:
        if self._llm is None:
            self._llm = _load_llama(self.path, self.n_ctx, self.n_threads, seed, self.batch_threads)
            self._llm._init_sampler = functools.partial(_init_sampler, self._llm)
            # freed before interpreter teardown: llama.cpp's own finaliser then finds its library
            # functions already gone and prints a traceback at every exit
            atexit.register(_unload_at_exit, weakref.ref(self))
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

    def _tokens(self, llm: Any, messages: list[dict[str, Any]]) -> tuple[int, ...] | None:
        """The chat template's rendering of `messages` (no generation prompt), tokenized."""
        if self._formatter is None:
            template = llm.metadata.get("tokenizer.chat_template")
            if template is None:
                return None
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def text(token: int) -> str:
                return llm.detokenize([token], special=True).decode("utf-8", "replace") if token >= 0 else ""

            self._formatter = Jinja2ChatFormatter(
                template=template, eos_token=text(llm.token_eos()), bos_token=text(llm.token_bos()),
                add_generation_prompt=False,
            )  # fmt: skip
        rendered = self._formatter(messages=messages)
        return tuple(
            llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
        )

    def _save(self, llm: Any, key: str, tokens: tuple[int, ...]) -> _Saved:
        """`Llama.save_state` without its copy of the logits rows (n_batch x vocabulary floats,
        300 MB for a 150k vocabulary): the request's own suffix is evaluated before sampling."""
        import ctypes

        import llama_cpp

        size = llama_cpp.llama_state_get_size(llm._ctx.ctx)
        buf = (ctypes.c_uint8 * int(size))()
        n = int(llama_cpp.llama_state_get_data(llm._ctx.ctx, buf, size))
        if n > int(size):
            raise RuntimeError("failed to copy the llama state")
        state = self._state(llm, llm.input_ids.copy(), llm.n_tokens, bytes(buf)[:n])
        return self._keep(key, _Saved(tokens, state))

    @staticmethod
    def _state(llm: Any, input_ids: Any, n_tokens: int, data: bytes) -> Any:
        import numpy as np
        from llama_cpp.llama import LlamaState

        scores = np.zeros((1, llm.n_vocab()), dtype=np.single)
        return LlamaState(input_ids, scores, n_tokens, data, len(data), llm._seed)

    def _keep(self, key: str, saved: _Saved) -> _Saved:
        self._prefixes[key] = saved
        while len(self._prefixes) > PREFIX_STATES:
            self._prefixes.popitem(last=False)
        return saved

    def _state_key(self, llm: Any, tokens: tuple[int, ...]) -> str:
        """The on-disk key of the state after `tokens` evaluated from a reset context: the model's
        bytes, llama.cpp's build and CPU features, every context setting but the thread counts
        (results are bit-identical whatever the thread count), the tokens."""
        if self._state_config is None:
            import llama_cpp

            params = llm.context_params
            config: dict[str, Any] = {
                name: getattr(params, name)
                for name, *_ in type(params)._fields_
                if name not in ("n_threads", "n_threads_batch")
                and isinstance(getattr(params, name), (int, float, bool))
            }
            config["llama_cpp"] = llama_cpp.__version__
            config["system"] = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
            config["n_gpu_layers"] = int(llm.model_params.n_gpu_layers)
            self._state_config = config
        return states.state_key(self.sha256, self._state_config, tokens)

    def _stored(self, llm: Any, first: dict[str, Any], key: str) -> _Saved | None:
        """The leading system message's state from disk, loaded into `llm` and kept, or None."""
        folder = states.states_dir()
        if folder is None or first.get("role") != "system":
            return None
        tokens = self._tokens(llm, [first])
        if not tokens:
            return None
        data = states.load(folder, self._state_key(llm, tokens), tokens)
        if data is None:
            return None
        import numpy as np

        input_ids = np.zeros(llm.input_ids.shape, dtype=llm.input_ids.dtype)
        input_ids[: len(tokens)] = tokens
        state = self._state(llm, input_ids, len(tokens), data)
        try:
            llm.load_state(state)
        except RuntimeError:  # not this context's layout after all: computed as if absent
            llm.reset()
            return None
        return self._keep(key, _Saved(tokens, state))

    def _store(self, llm: Any, first: dict[str, Any], saved: _Saved) -> None:
        folder = states.states_dir()
        if folder is not None and first.get("role") == "system":
            states.store(folder, self._state_key(llm, saved.tokens), saved.tokens, saved.state.llama_state)

    def _prefix(self, llm: Any, messages: list[dict[str, Any]]) -> tuple[_Saved | None, int]:
        """The state after all messages but the last, computed message by message from the
        deepest saved one (see the module docstring), and the number of tokens evaluated for it."""
        prefix = messages[:-1]
        if not prefix or self._tokens(llm, prefix[:1]) is None:
            return None, 0
        keys = [_key(prefix[: j + 1]) for j in range(len(prefix))]
        start = next((j for j in range(len(prefix), 0, -1) if keys[j - 1] in self._prefixes), 0)
        saved = self._prefixes[keys[start - 1]] if start else None
        done: tuple[int, ...] = ()
        if saved is not None:
            self._prefixes.move_to_end(keys[start - 1])
            llm.load_state(saved.state)
            done = saved.tokens
        elif (saved := self._stored(llm, prefix[0], keys[0])) is not None:
            start, done = 1, saved.tokens  # loaded from disk: the same bytes as computing it
        else:
            llm.reset()
        warm = len(self._tokens(llm, prefix[:1]) or ())
        evaluated = 0  # beyond the leading system message, the warm prefix (see `chat_sync`)
        for j in range(start + 1, len(prefix) + 1):
            tokens = self._tokens(llm, prefix[:j])
            assert tokens is not None
            if done and tokens[: len(done)] == done:
                new = tokens[len(done) :]
            else:  # a template that is not prefix-stable: this prefix from scratch, still canonical
                llm.reset()
                done, new = (), tokens
            llm.eval(list(new))
            evaluated += max(0, len(tokens) - max(len(done), warm))
            done = tokens
            if j == 1 or j == len(prefix):
                saved = self._save(llm, keys[j - 1], tokens)
                if j == 1:
                    self._store(llm, prefix[0], saved)
        return saved, evaluated

    def chat_sync(self, req: ChatRequest) -> ChatResponse:
        """One completion; blocking (the async `chat` runs it in a worker thread)."""
        with self._lock:
            llm = self._model(req.seed)
            start = time.perf_counter()
            try:
                kw = self._kwargs(req)
                saved, evaluated = self._prefix(llm, kw["messages"])
                if saved is None:
                    llm.reset()
                    reused = 0
                else:
                    llm.load_state(saved.state)
                    reused = len(saved.tokens)
                llm.set_seed(req.seed)
                out = llm.create_chat_completion(**kw)
            except (ValueError, RuntimeError) as exc:
                raise LLMError("llm_model_error", f"{self.name}: {type(exc).__name__}: {exc}") from None
            elapsed = (time.perf_counter() - start) * 1000.0
        resp = parse_response(out, elapsed)
        u = resp.usage
        # What this request evaluated: its new prefix messages and the tokens after the prefix. The
        # leading system message (an agent's prompt with its tools and facts) counts as cached even
        # on its first use, as a deployment evaluates it once at start-up: a call's reported compute
        # then depends only on its own messages, never on whether it ran first in this process.
        cached = max(0, min(u.prompt_tokens, reused) - evaluated)
        return resp.model_copy(
            update={
                "usage": Usage(
                    prompt_tokens=u.prompt_tokens,
                    completion_tokens=u.completion_tokens,
                    cached_tokens=cached,
                    reported=u.reported,
                )
            }
        )

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
