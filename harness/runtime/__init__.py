"""The call runtime: campaign runner, episode runner (the attempt lifecycle), the call log every
transport writes through, the conversation loop over turn-based and streaming transports, clocks."""

from voice_audit.harness.runtime.campaign import CampaignRunner
from voice_audit.harness.runtime.clock import RealClock, VirtualClock
from voice_audit.harness.runtime.episode import EpisodeContext, EpisodeRunner
from voice_audit.harness.runtime.inprocess import build_adapter
from voice_audit.harness.runtime.progress import RunSummary
from voice_audit.harness.runtime.provenance import new_run_id
from voice_audit.harness.runtime.resume import resume_campaign_path

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
