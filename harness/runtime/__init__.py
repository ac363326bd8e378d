"""The call runtime: campaign runner, episode runner (the attempt lifecycle), the call log every
transport writes through, the conversation loop over turn-based and streaming transports, clocks."""

from harness.runtime.campaign import CampaignRunner
from harness.runtime.clock import RealClock, VirtualClock
from harness.runtime.episode import EpisodeContext, EpisodeRunner
from harness.runtime.inprocess import build_adapter
from harness.runtime.progress import RunSummary
from harness.runtime.provenance import new_run_id
from harness.runtime.resume import resume_campaign_path

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
