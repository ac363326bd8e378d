"""Scenarios: locked, versioned service scripts (facts, caller turn anchors, acceptable outcomes),
with their own tools and outcomes, and the outcome rule table every judge reads.

Also home of what every package shares for reading user files: the positioned YAML loader, the
canonical hashing and the error types the CLI prints as one line.
"""

from voice_audit.scenarios._library import (
    BUNDLED_LIBRARY,
    LOCK_NAME,
    LockEntry,
    LockFile,
    ScenarioLibrary,
    load_scenario_file,
)
from voice_audit.scenarios._model import (
    CALLER_FACTS,
    TOOLS,
    AcceptableOutcome,
    Account,
    Anchor,
    CallerScript,
    Challenge,
    Charge,
    Facts,
    Policy,
    PriorContact,
    Scenario,
    held_facts,
)
from voice_audit.scenarios.base import Frozen, canonical_json, sha256_of
from voice_audit.scenarios.errors import (
    ConfigError,
    ConfigErrors,
    LockError,
    MissingBackendError,
    SchemaVersionError,
    VoiceAuditError,
)
from voice_audit.scenarios.vocabulary import (
    BUILTIN_OUTCOMES,
    BUILTIN_TOOLS,
    FlagRule,
    Outcome,
    OutcomeRules,
    OutcomeSpec,
    Rule,
    ToolArgument,
    ToolSpec,
    outcome_rules,
    resolve_fact,
)
from voice_audit.scenarios.yamlsrc import YamlDocument, load_yaml

__all__ = [
    "BUILTIN_OUTCOMES",
    "BUILTIN_TOOLS",
    "BUNDLED_LIBRARY",
    "CALLER_FACTS",
    "LOCK_NAME",
    "TOOLS",
    "AcceptableOutcome",
    "Account",
    "Anchor",
    "CallerScript",
    "Challenge",
    "Charge",
    "ConfigError",
    "ConfigErrors",
    "Facts",
    "FlagRule",
    "Frozen",
    "LockEntry",
    "LockError",
    "LockFile",
    "MissingBackendError",
    "Outcome",
    "OutcomeRules",
    "OutcomeSpec",
    "Policy",
    "PriorContact",
    "Rule",
    "Scenario",
    "ScenarioLibrary",
    "SchemaVersionError",
    "ToolArgument",
    "ToolSpec",
    "VoiceAuditError",
    "YamlDocument",
    "canonical_json",
    "held_facts",
    "load_scenario_file",
    "load_yaml",
    "outcome_rules",
    "resolve_fact",
    "sha256_of",
]
