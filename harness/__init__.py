"""The runtime: campaign planning, callers, clocks, transports, artifact logs and the CLI.

Importing `harness` stays light: the data model lives in `harness.model`, run folders in
`harness.rundir`; audio backends (`harness.audio`) and the call runtime load on use.
"""

from harness.planning import LoadedCampaign, Plan, PlannedEpisode, load_campaign
from harness.rundir import RunFolderError, RunReader, RunWriter

__all__ = ["LoadedCampaign", "Plan", "PlannedEpisode", "RunFolderError", "RunReader", "RunWriter", "load_campaign"]
