"""Shared test helpers (hand-built event logs, whole reference-agent calls, tiny model builders),
imported as `tests.helpers.<module>` so no test edits `sys.path`."""
