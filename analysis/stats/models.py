"""Confirmatory and sensitivity models on the long episode frame (coefficients in a - b).

* ``logistic_mixed`` -- binary outcomes and safety events (docs/method/index.md section 5 confirmation):
  ``statsmodels`` ``BinomialBayesMixedGLM`` with a fixed effect for condition a (``is_a``) and
  variance components for scenario, voice, run batch and agent, each included only where it
  varies. The fit is the variational-Bayes posterior (``fit_vb``; priors: N(0, 2^2) on fixed
  effects, the statsmodels default ``vcp_p=1`` on log variance-component SDs), so the interval is
  a normal approximation to the posterior and p is the matching two-sided z probability. When the
  mixed model cannot be fitted or is degenerate (exception, non-convergence, no component that
  varies, non-finite or separated estimates) the model falls back to GEE (binomial, exchangeable
  working correlation, clustered by pair, robust SEs) and says which was used and why.
* ``linear_mixed`` -- burden metrics, as sensitivity analysis: ``MixedLM`` fitted by REML with
  crossed variance components (pair, scenario, voice, run batch, agent where they vary) inside a
  single all-episode group, the statsmodels idiom for crossed random effects. Powell then L-BFGS:
  the gradient optimisers alone often stall on the zero-variance boundary these designs produce.
  Voices are nested in condition, so the voice component makes the interval generalise over
  voices; with few voices per condition it is wider than the paired t interval by design.

The coefficient is that of ``is_a`` (1 for side a, 0 for side b), i.e. a - b: a log odds ratio of
a versus b for the logistic models, a mean difference for the linear model. A negative burden
coefficient means condition b carried more burden.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from scipy import stats
from statsmodels.genmod import cov_struct, families
from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM
from statsmodels.genmod.generalized_estimating_equations import GEE
from statsmodels.regression.mixed_linear_model import MixedLM

from voice_audit.analysis.stats.estimate import CONVENTION, CONVENTION_SENTENCE
from voice_audit.analysis.stats.pairing import complete_pairs_frame

BINARY_COMPONENTS: tuple[str, ...] = ("scenario_id", "voice_id", "run_batch", "agent")
LINEAR_COMPONENTS: tuple[str, ...] = ("pair_id", "scenario_id", "voice_id", "run_batch", "agent")
_SEPARATION_LIMIT = 10.0
_ABSORB_VARIANCE = 10.0


class ModelSummary(BaseModel):
    """A fitted confirmatory/sensitivity model reduced to the condition coefficient (a - b)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str
    family: str
    method: str
    scale: str
    coefficient: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    alpha: float = Field(gt=0.0, lt=1.0)
    converged: bool
    n_episodes: int
    n_pairs: int
    n_dropped: int
    components: tuple[str, ...] = ()
    # Variances (not SDs): posterior-mean-based for the Bayesian GLMM, REML estimates for MixedLM.
    variance_components: dict[str, float] = Field(default_factory=dict)
    fallback_reason: str | None = None
    warnings: tuple[str, ...] = ()
    convention: Literal["a - b"] = CONVENTION
    convention_text: str = CONVENTION_SENTENCE

    @property
    def excludes_zero(self) -> bool:
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low > 0.0 or self.ci_high < 0.0


def _prepare(frame: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, int]:
    data, drops = complete_pairs_frame(frame, metric)
    data = data.assign(_y=data[metric].astype(float), is_a=(data["side"] == "a").astype(float))
    return data.reset_index(drop=True), sum(drops.values())


def _varying(data: pd.DataFrame, components: Sequence[str]) -> tuple[str, ...]:
    return tuple(c for c in components if c in data.columns and data[c].nunique(dropna=False) > 1)


def _messages(caught: list[warnings.WarningMessage]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))


def _not_estimable(
    metric: str, family: str, scale: str, alpha: float, data: pd.DataFrame, dropped: int, reason: str
) -> ModelSummary:
    return ModelSummary(
        metric=metric,
        family=family,
        method="not estimable",
        scale=scale,
        coefficient=None,
        ci_low=None,
        ci_high=None,
        p_value=None,
        alpha=alpha,
        converged=False,
        n_episodes=len(data),
        n_pairs=data["pair_id"].nunique() if len(data) else 0,
        n_dropped=dropped,
        fallback_reason=reason,
    )


def _wald(coef: float, se: float, alpha: float) -> tuple[float, float, float]:
    z = float(stats.norm.ppf(1 - alpha / 2))
    return coef - z * se, coef + z * se, float(2 * stats.norm.sf(abs(coef) / se))


def _fit_bayes_glmm(
    data: pd.DataFrame, components: tuple[str, ...], seed: int
) -> tuple[float, float, bool, dict[str, float], tuple[str, ...]]:
    vc = {c: f"0 + C({c})" for c in components}
    model = BinomialBayesMixedGLM.from_formula("_y ~ is_a", vc, data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = model.fit_vb(rng=np.random.default_rng(seed))
    converged = bool(getattr(result.optim_retvals, "success", True))
    names = list(model.exog_names)
    i = names.index("is_a")
    vcs = {name: float(np.exp(2 * m)) for name, m in zip(model.vcp_names, result.vcp_mean, strict=True)}
    return float(result.fe_mean[i]), float(result.fe_sd[i]), converged, vcs, _messages(caught)


def _fit_gee(data: pd.DataFrame, family: Any) -> tuple[float, float, bool, tuple[str, ...]]:
    model = GEE.from_formula(
        "_y ~ is_a", groups="pair_id", data=data, family=family, cov_struct=cov_struct.Exchangeable()
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = model.fit()
    msgs = _messages(caught)
    converged = not any("ConvergenceWarning" in m or "IterationLimit" in m for m in msgs)
    return float(result.params["is_a"]), float(result.bse["is_a"]), converged, msgs


def logistic_mixed(
    frame: pd.DataFrame,
    metric: str,
    *,
    family: str = "terminal_outcome",
    alpha: float = 0.05,
    components: Sequence[str] = BINARY_COMPONENTS,
    seed: int = 0,
    force_gee: bool = False,
) -> ModelSummary:
    """Logistic mixed model for a binary metric, GEE fallback; coefficient = log OR of a vs b."""
    scale = "log odds ratio, condition a vs b"
    data, dropped = _prepare(frame, metric)
    if data.empty:
        return _not_estimable(metric, family, scale, alpha, data, dropped, "no complete pairs")
    values = set(data["_y"].unique())
    if not values <= {0.0, 1.0}:
        raise ValueError(f"{metric} is not a 0/1 metric")
    if len(values) == 1:
        return _not_estimable(
            metric,
            family,
            scale,
            alpha,
            data,
            dropped,
            f"outcome constant ({values.pop():g}) in every episode",
        )
    by_side = data.groupby("side")["_y"].agg(["min", "max"])
    if len(by_side) == 2 and (by_side["min"] == by_side["max"]).all():
        why = "outcome perfectly separated by condition: the log odds ratio is infinite; use the paired risk difference"
        return _not_estimable(metric, family, scale, alpha, data, dropped, why)
    n_pairs = int(data["pair_id"].nunique())
    common = dict(
        metric=metric,
        family=family,
        scale=scale,
        alpha=alpha,
        n_episodes=len(data),
        n_pairs=n_pairs,
        n_dropped=dropped,
    )
    varying = _varying(data, components)
    reason: str | None = None
    if force_gee:
        reason = "GEE requested"
    elif not varying:
        reason = "no variance component varies in these data"
    else:
        try:
            coef, se, converged, vcs, msgs = _fit_bayes_glmm(data, varying, seed)
        except Exception as exc:
            reason = f"mixed model failed: {type(exc).__name__}: {exc}"
        else:
            if not converged:
                reason = "mixed model did not converge"
            elif not (math.isfinite(coef) and math.isfinite(se) and se > 0):
                reason = "mixed model gave a non-finite coefficient or SE"
            elif abs(coef) > _SEPARATION_LIMIT:
                reason = f"mixed model coefficient |{coef:.1f}| > {_SEPARATION_LIMIT:g}: (quasi-)separation"
            else:
                lo, hi, p = _wald(coef, se, alpha)
                absorbing = [k for k, v in vcs.items() if v > _ABSORB_VARIANCE]
                if absorbing:
                    msgs = (
                        *msgs,
                        f"variance component(s) {absorbing} exceed {_ABSORB_VARIANCE:g} on the logit scale and may "
                        "absorb the condition effect (voices are nested in condition)",
                    )
                return ModelSummary(
                    **common,
                    method="BinomialBayesMixedGLM (variational Bayes, posterior mean +- z * posterior SD)",
                    coefficient=coef,
                    ci_low=lo,
                    ci_high=hi,
                    p_value=p,
                    converged=True,
                    components=varying,
                    variance_components=vcs,
                    warnings=msgs,
                )
    coef, se, converged, msgs = _fit_gee(data, families.Binomial())
    if abs(coef) > _SEPARATION_LIMIT or not (math.isfinite(coef) and math.isfinite(se)):
        msgs = (*msgs, "GEE coefficient suggests (quasi-)separation; interval unreliable")
    interval: tuple[float | None, float | None, float | None] = (None, None, None)
    if se > 0 and math.isfinite(se) and math.isfinite(coef):
        interval = _wald(coef, se, alpha)
    return ModelSummary(
        **common,
        method="GEE (binomial, exchangeable, clustered by pair, robust SE)",
        coefficient=coef,
        ci_low=interval[0],
        ci_high=interval[1],
        p_value=interval[2],
        converged=converged,
        components=("pair_id",),
        fallback_reason=reason,
        warnings=msgs,
    )


def linear_mixed(
    frame: pd.DataFrame,
    metric: str,
    *,
    family: str = "path_burden",
    alpha: float = 0.05,
    components: Sequence[str] = LINEAR_COMPONENTS,
    reml: bool = True,
) -> ModelSummary:
    """Linear mixed model with crossed variance components; coefficient = mean difference a - b."""
    scale = "mean difference, condition a - b"
    data, dropped = _prepare(frame, metric)
    if data["pair_id"].nunique() < 2:
        return _not_estimable(metric, family, scale, alpha, data, dropped, "fewer than two complete pairs")
    if data["_y"].nunique() == 1:
        return _not_estimable(
            metric, family, scale, alpha, data, dropped, "outcome constant in every episode"
        )
    varying = _varying(data, components)
    data = data.assign(_all=1)
    vc = {c: f"0 + C({c})" for c in varying}
    common = dict(
        metric=metric,
        family=family,
        scale=scale,
        alpha=alpha,
        n_episodes=len(data),
        n_pairs=int(data["pair_id"].nunique()),
        n_dropped=dropped,
        components=varying,
    )
    try:
        model = MixedLM.from_formula("_y ~ is_a", groups="_all", re_formula="0", vc_formula=vc, data=data)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = model.fit(reml=reml, method=["powell", "lbfgs"])
    except Exception as exc:
        return _not_estimable(
            metric, family, scale, alpha, data, dropped, f"MixedLM failed: {type(exc).__name__}: {exc}"
        )
    coef = float(result.params["is_a"])
    ci = result.conf_int(alpha=alpha).loc["is_a"]
    vcs = {name: float(v) for name, v in zip(model.exog_vc.names, np.atleast_1d(result.vcomp), strict=True)}
    vcs["residual"] = float(result.scale)
    return ModelSummary(
        **common,
        method=f"MixedLM ({'REML' if reml else 'ML'}, crossed variance components)",
        coefficient=coef,
        ci_low=float(ci.iloc[0]),
        ci_high=float(ci.iloc[1]),
        p_value=float(result.pvalues["is_a"]),
        converged=bool(result.converged),
        variance_components=vcs,
        warnings=_messages(caught),
    )
