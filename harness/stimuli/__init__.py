"""The stimulus pilot (docs/method/index.md section 8, Stage 1): every line each voice of each cell can say,
rendered as the agent would receive it and read by a reference recogniser, before any call.

`run_pilot` measures a campaign's stimuli; `write_pilot` writes the record and a page where every
line can be heard; `refusal` turns failing cells into the one-line errors `voice-audit run` stops on.
"""

from voice_audit.harness.stimuli.pilot import PilotResult, refusal, run_pilot, write_pilot

__all__ = ["PilotResult", "refusal", "run_pilot", "write_pilot"]
