"""Analysis: turns run folders into metrics, gates, paired statistics, subgroups and reports.

It reads run folders and imports only the data model (`harness.model`, `harness.rundir`) and pure
signal code (`harness.audio.dsp`); it never imports the runtime.
"""
