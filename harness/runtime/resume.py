"""Resuming a run: the campaign reloaded from its file, checked to plan exactly what the run planned."""

from __future__ import annotations

from pathlib import Path

from voice_audit.harness.model.episode import RunManifest
from voice_audit.harness.planning import LoadedCampaign, load_campaign
from voice_audit.harness.runlog import RunFolderError, RunReader


def resume_campaign_path(run_dir: Path) -> LoadedCampaign:
    """The campaign of an existing run, reloaded from its file and checked against the stored hash."""
    manifest = RunReader(run_dir).manifest
    loaded = load_campaign(manifest.campaign_file)
    if loaded.campaign.sha256 != manifest.campaign_sha256:
        raise RunFolderError(
            f"{manifest.campaign_file}: campaign file changed since run {manifest.run_id} started; "
            "restore it or start a new run"
        )
    return loaded


def resumable_manifest(run_dir: Path, loaded: LoadedCampaign) -> RunManifest:
    """The manifest of a run folder that `loaded` may resume: same campaign, same plan."""
    manifest = RunReader(run_dir).manifest
    c = loaded.campaign
    if manifest.campaign_sha256 != c.sha256 or manifest.plan_sha256 != loaded.plan.sha256:
        raise RunFolderError(
            f"{run_dir}: the campaign or its plan changed since this run started "
            f"(campaign {c.sha256[:12]} vs {manifest.campaign_sha256[:12]}); start a new run instead"
        )
    return manifest
