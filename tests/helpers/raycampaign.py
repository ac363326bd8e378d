"""The campaign the Ray tests and benchmarks place: the scripted agent, one accent pair, espeak voices.

Accelerated and deterministic, so two runs of it on any executor must match call for call; each
replicate is 6 calls (3 voices x the pair's two sides).
"""

from __future__ import annotations

SCRIPTED = '"voice_audit.agents.fakes.scripted:scripted"'
CALLS_PER_REPLICATE = 6


def scripted_campaign(
    *, name: str = "rc", seed: int = 17, replicates: int = 4, concurrency: int = 4, agent: str = SCRIPTED
) -> str:
    """The campaign's YAML; `agent` is the adapter entry (flow style), e.g. a trap agent with options."""
    return f"""\
name: {name}
seed: {seed}
scenarios: [refund_duplicate_charge]
agents: [{{name: s, adapter: {agent}}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: l2_spanish}}
voices: 3
replicates: {replicates}
concurrency: {concurrency}
tts: {{name: espeak}}
"""
