"""The call runtime: episode runner (turn-based and streaming), clocks, playback, campaign runner."""

from harness.runtime.campaign import (
    CampaignRunner,
    RunSummary,
    build_adapter,
    new_run_id,
    resume_campaign_path,
)
from harness.runtime.clock import RealClock, VirtualClock
from harness.runtime.episode import EpisodeContext, EpisodeRunner

__all__ = [
    "CampaignRunner",
    "EpisodeContext",
    "EpisodeRunner",
    "RealClock",
    "RunSummary",
    "VirtualClock",
    "build_adapter",
    "new_run_id",
    "resume_campaign_path",
]
