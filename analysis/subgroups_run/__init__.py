"""Subgroup discovery on run folders (docs/method/index.md section 7): attributes, mining, gaps, follow-up, CI narrowing.

The mining engine itself, on any table, is `voice_audit.analysis.subgroups`; this package feeds it a run's episodes.

`run_subgroups(run_dir)` writes into the run folder:

* subgroups.parquet: one row per (itemset, metric): the engine's `Subgroups.table()` columns (itemset,
  length, support, support_count, outcome, n, mean, divergence, t, p_value, t_beta, p_beta, itemset_id)
  plus p_directional, q_value (BH over the tested itemsets), bound, rank (NaN when not tested),
  redundant, direction.
* subgroups_gap.parquet (with gaps): `GapResult.table()` rows with m1 / m2 labels ("run:agent").
* plots/subgroups_<metric>_global.svg, plots/subgroups_<metric>_top<r>.svg, plots/gap_<m1>_vs_<m2>_<metric>_top<r>.svg.
* subgroups.json, schema "voice-audit/subgroups" version 1:
  {schema, schema_version, run_id, parameters{...MiningOptions, min_support_used, min_count_used},
   episodes{total, completed, not_completed, note},
   attributes{used[], dropped{name: reason}, levels{attr: [..]}, discretised{attr: {labels, cut_points}},
              pre_treatment[], realised[]},
   n_itemsets, strategy,
   metrics[{metric, family, kind, higher_is_worse, direction, description, global_mean, n, epsilon,
            n_candidates, n_pruned, n_tested, n_significant, test,
            top[{rank, itemset, items{attr: value}, length, support, support_count, n, mean, divergence,
                 test_estimate, se, t, bound, p_value, q_value, significant, shapley{item: value},
                 shapley_plot|null}],
            global_item_divergence{item: value}, global_divergence_plot|null}],
   dropped_metrics{name: reason},
   gaps[{m1{run_id, agent}, m2{run_id, agent}, definition, n_matched, n_only_m1, n_only_m2, min_support,
         n_itemsets, attributes[], dropped_attributes{}, dropped_metrics{},
         metrics[{metric, direction, higher_is_worse, overall{gap, t, p_value}, n_tested, n_significant,
                  top[{rank, itemset, items, support, n_pairs, mean_m1, mean_m2, gap, se, t, bound,
                       p_value, q_value, significant, shapley{}, shapley_plot|null}]}]}],
   comparison: null | {original_run, followup_run, batch, metric, targets_from, confidence, definition,
                       subgroups[{itemset, items, metric, before{episodes, n, mean, ci[lo, hi], ci_width,
                                  divergence, divergence_ci_width}, after{...}, added_episodes,
                                  ci_narrowing, divergence_ci_narrowing}]},
   notes[], files{parquet, gap_parquet|null, plots}}
  Paths are relative to the run folder; NaN/inf are null. "divergence" is f(I) - f(D); "test_estimate"
  is the estimate the test ranked (DivExplorer's Beta-posterior difference for binary metrics).
  "direction" says which sign is harm: negative (higher is better), positive (higher is worse), both.

`plan_followup(run_dir, output)` writes a campaign YAML and <run>/followups/<batch>.json (the targets).
"""

from voice_audit.analysis.subgroups_run.agent_gaps import GapReport, compare_agents, gaps_against, gaps_within
from voice_audit.analysis.subgroups_run.api import run_subgroups
from voice_audit.analysis.subgroups_run.attributes import (
    ALL_ATTRIBUTES,
    discretise_attributes,
    episode_attributes,
)
from voice_audit.analysis.subgroups_run.compare import (
    compare_followup,
    compare_tables,
    divergence_interval,
    mean_interval,
)
from voice_audit.analysis.subgroups_run.followup import (
    FollowupOptions,
    FollowupPlan,
    derived_seed,
    plan_followup,
)
from voice_audit.analysis.subgroups_run.options import MiningOptions
from voice_audit.analysis.subgroups_run.outputs import Written, write_outputs
from voice_audit.analysis.subgroups_run.run_mining import EpisodeTable, RunMining, load_table, mine_run
from voice_audit.analysis.subgroups_run.signals import SIGNAL_COLUMNS, signal_measures

__all__ = [
    "ALL_ATTRIBUTES",
    "SIGNAL_COLUMNS",
    "EpisodeTable",
    "FollowupOptions",
    "FollowupPlan",
    "GapReport",
    "MiningOptions",
    "RunMining",
    "Written",
    "compare_agents",
    "compare_followup",
    "compare_tables",
    "derived_seed",
    "discretise_attributes",
    "divergence_interval",
    "episode_attributes",
    "gaps_against",
    "gaps_within",
    "load_table",
    "mean_interval",
    "mine_run",
    "plan_followup",
    "run_subgroups",
    "signal_measures",
    "write_outputs",
]
