"""Where a run came from: its id, the software that ran it, and the campaign as run.json keeps it.

Credentials never reach the run folder: the manifest's campaign has them masked, and the redactor
built here scrubs them from every line the run writes.
"""

from __future__ import annotations

import datetime as dt
import platform
import secrets
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from voice_audit.harness.model.campaign import Campaign
from voice_audit.harness.model.episode import BackendInfo, RunManifest
from voice_audit.harness.model.secrets import Redactor, mask_options, mask_url, secret_values
from voice_audit.harness.planning import LoadedCampaign


def new_run_id(name: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{name}-{stamp}-{secrets.token_hex(3)}"


def git_sha() -> str | None:
    try:
        res = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=Path(__file__).parent
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


def package_version() -> str:
    try:
        return version("voice-audit")
    except PackageNotFoundError:
        return "0+unknown"


def without_credentials(campaign: Campaign) -> Campaign:
    """The campaign as run.json keeps it: credentials in agent options and URLs masked (the hash
    recorded beside it is the real campaign's, so a resumed run is still checked against it)."""
    agents = tuple(
        a.model_copy(update={"options": mask_options(a.options), "url": mask_url(a.url) if a.url else None})
        for a in campaign.agents
    )
    return campaign.model_copy(update={"agents": agents})


def campaign_redactor(campaign: Campaign) -> Redactor:
    """Scrubs every credential of the campaign's agents (options and URLs) from what a run writes."""
    return Redactor(
        set().union(*(secret_values({"options": a.options, "url": a.url or ""}) for a in campaign.agents))
        | secret_values(campaign.reader.model_dump())
    )


def build_manifest(
    loaded: LoadedCampaign, run_id: str, tts: BackendInfo, asr: BackendInfo | None, executor: str = "local"
) -> RunManifest:
    c = loaded.campaign
    backends = {"tts": tts} | ({"asr": asr} if asr else {})
    return RunManifest(
        run_id=run_id,
        created_at=dt.datetime.now(dt.UTC),
        voice_audit_version=package_version(),
        git_sha=git_sha(),
        python=sys.version.split()[0],
        platform=platform.platform(),
        executor=executor,
        campaign_file=str(loaded.path.resolve()),
        campaign=without_credentials(c),
        campaign_sha256=c.sha256,
        scenario_hashes={sid: sc.sha256 for sid, sc in loaded.scenarios.items()},
        facts_hashes={sid: sc.facts_sha256 for sid, sc in loaded.scenarios.items()},
        catalogue_sha256=loaded.catalogue.sha256,
        plan_sha256=loaded.plan.sha256,
        n_planned_episodes=len(loaded.plan.episodes),
        backends=backends,
    )
