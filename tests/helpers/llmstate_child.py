"""Requests to the in-process SmolLM2 backend for the on-disk system-state tests: run in a fresh
process (`python -m tests.helpers.llmstate_child '{"system": ...}'`, prints one JSON line) or in
the test's own. The state folder is `VOICE_AUDIT_LLM_STATES`, set by the caller.

A run makes two requests on one system message: a grammar-constrained JSON answer, and a
conversation whose tail is evaluated on top of the system state. It reports the full answers
(text, tool calls, finish reason, usage with cached tokens) and the tokens llama.cpp evaluated
(counted at `Llama.eval`, which every prompt and generated token goes through).
"""

from __future__ import annotations

import json
import sys
from typing import Any

SYSTEM = (
    "You are the billing assistant of Northwind Telecom. You help callers with charges on their "
    "bill. Before any refund, confirm the caller's full name and date of birth against the account. "
    "Account ACC-40817 belongs to Jordan Avery Lee, born 14 March 1986. The March bill shows a "
    "duplicate charge of 24.99 for the streaming add-on. Refunds go back to the card on file within "
    "five working days. Never promise anything the policy does not allow, and answer briefly."
)
OTHER = SYSTEM + " Always end by asking whether there is anything else."
SCHEMA = {
    "type": "object",
    "properties": {"say": {"type": "string"}, "action": {"enum": ["ask", "refund", "transfer"]}},
    "required": ["say", "action"],
}


def run(system: str = SYSTEM, n_ctx: int = 4096) -> dict[str, Any]:
    from voice_audit.harness.llm import ChatRequest, LocalChatClient, Message, packaged_model

    client = LocalChatClient(packaged_model("smollm2-135m"), n_ctx=n_ctx, n_threads=1)
    llm = client._model(0)
    counted: list[int] = []
    evaluate = llm.eval

    def eval_counted(tokens: Any) -> None:
        counted.append(len(tokens))
        evaluate(tokens)

    llm.eval = eval_counted
    sysmsg = Message(role="system", content=system)
    user = Message(role="user", content="Hi, I was charged twice for the streaming add-on.")
    requests = [
        ChatRequest(messages=(sysmsg, user), json_schema=SCHEMA, max_tokens=24, seed=7),
        ChatRequest(
            messages=(
                sysmsg,
                user,
                Message(role="assistant", content="I can help. What is your full name?"),
                Message(role="user", content="Jordan Avery Lee, born March fourteenth 1986."),
            ),
            max_tokens=16,
            seed=7,
        ),
    ]
    answers = [client.chat_sync(r).model_dump(mode="json", exclude={"elapsed_ms"}) for r in requests]
    system_tokens = client._tokens(llm, client._kwargs(requests[0])["messages"][:1])
    client.unload()
    return {"answers": answers, "evaluated": sum(counted), "system_tokens": len(system_tokens or ())}


if __name__ == "__main__":
    print(json.dumps(run(**json.loads(sys.argv[1]))))
