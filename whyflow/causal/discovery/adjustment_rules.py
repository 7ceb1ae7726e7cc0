"""Data tests behind the adjustment set: association, pre-treatment rules, bad-control signatures.

Why: a graph learned without domain knowledge can orient a mediator or a collider into the
treatment, and causal discovery skips multi-level categoricals. These tests give confounder
discovery evidence that does not depend on the graph:

* association of a variable (numeric, or a categorical as a joint block of dummies) with the
  treatment (likelihood-ratio test in a logit for a 0/1 treatment, F-test in OLS otherwise) and
  with the outcome given the treatment (F-test);
* the disjunctive cause criterion (VanderWeele 2019) for variables known to precede the
  treatment: a verdict per variable (a possible cause, instrument-like, or no association
  found); confounder discovery keeps all of them and flags the instrument-like ones;
* two signatures of a descendant of the treatment, for variables whose position is unknown
  (see :func:`screen_unknown`): flags for a with/without comparison, never reasons to drop.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.column_names import outcome_baseline
from whyflow.causal.knowledge import DomainKnowledge

__all__ = [
    "DataChecks",
    "PreVerdict",
    "assoc_pvalue",
    "collider_signature",
    "data_checks",
    "design",
    "design_block",
    "disjunctive_cause",
    "known_pre_treatment",
    "looks_like_id",
    "screen_unknown",
    "screened_by_treatment",
]

MAX_LEVELS = 20


@dataclass
class DataChecks:
    """Per-variable evidence from the data (p-values of association tests, R² on the treatment)."""

    p_treatment: dict[str, float] = field(default_factory=dict)
    p_outcome_given_t: dict[str, float] = field(default_factory=dict)
    r2_from_treatment: dict[str, float] = field(default_factory=dict)
    unusable: dict[str, str] = field(default_factory=dict)


def design_block(s: pd.Series) -> np.ndarray | None:
    """Design columns for one variable: itself if numeric, dummies if categorical (else None)."""
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
        return s.to_numpy(dtype=float, na_value=np.nan).reshape(-1, 1)
    if s.nunique(dropna=True) > MAX_LEVELS:
        return None
    dummies = pd.get_dummies(s.astype("string"), drop_first=True, dtype=float)
    values = dummies.to_numpy(copy=True)
    values[s.isna().to_numpy()] = np.nan
    return values if dummies.shape[1] else None


def design(frame: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """The stacked design blocks of ``cols`` (unusable columns skipped); shape (n, k), k may be 0."""
    blocks = [b for c in cols if (b := design_block(frame[c])) is not None]
    return np.column_stack(blocks) if blocks else np.empty((len(frame), 0))


def _is_binary(v: np.ndarray) -> bool:
    return bool(np.isin(np.unique(v), (0.0, 1.0)).all())


def _f_pvalue(target: np.ndarray, block: np.ndarray, base: np.ndarray) -> float:
    """p-value that ``block`` adds to an OLS of ``target`` on ``base`` (statsmodels F-test)."""
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import SingularMatrixWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", SingularMatrixWarning)
        full = sm.OLS(target, np.column_stack([base, block])).fit()
        restricted = sm.OLS(target, base).fit()
        if full.ssr <= 1e-12 * max(restricted.ssr, 1e-300):
            return 0.0
        _, p, _ = full.compare_f_test(restricted)
    return float(p) if np.isfinite(p) else 1.0


def _lr_pvalue(target: np.ndarray, block: np.ndarray, base: np.ndarray) -> float | None:
    """Likelihood-ratio test of ``block`` in a logit of a 0/1 ``target`` (None if a fit fails)."""
    import statsmodels.api as sm
    from scipy.stats import chi2
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", PerfectSeparationWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            full = sm.Logit(target, np.column_stack([base, block])).fit(disp=0, maxiter=100)
            restricted = sm.Logit(target, base).fit(disp=0, maxiter=100)
        except (np.linalg.LinAlgError, ValueError, PerfectSeparationWarning):
            return None
    stat = 2 * (full.llf - restricted.llf)
    if not (np.isfinite(stat) and full.mle_retvals.get("converged", False)):
        return None
    return float(chi2.sf(max(stat, 0.0), block.shape[1]))


def assoc_pvalue(target: np.ndarray, block: np.ndarray, controls: np.ndarray | None = None) -> float:
    """p-value that ``block`` (one variable, maybe several dummies) predicts ``target`` given ``controls``.

    A 0/1 target gets a logit likelihood-ratio test (the F-test of a linear probability model is
    the fallback when the logit cannot be fitted); any other target an OLS F-test. Rows with a
    missing value are dropped.
    """
    n = len(target)
    controls = np.empty((n, 0)) if controls is None else controls.reshape(n, -1)
    ok = ~(np.isnan(target) | np.isnan(block).any(axis=1) | np.isnan(controls).any(axis=1))
    if ok.sum() < 30 or np.nanstd(block[ok], axis=0).max() == 0:
        return 1.0
    base = np.column_stack([np.ones(int(ok.sum())), controls[ok]])
    if _is_binary(target[ok]):
        p = _lr_pvalue(target[ok], block[ok], base)
        if p is not None:
            return p
    return _f_pvalue(target[ok], block[ok], base)


def _r2_from(x: np.ndarray, t: np.ndarray) -> float:
    """How well a flexible function of the treatment predicts ``x`` (max of several R²)."""
    from scipy.stats import spearmanr

    x = x.ravel()
    if np.std(x) == 0:
        return 1.0
    levels = np.unique(t)
    if len(levels) <= 20:
        dm = (t.reshape(-1, 1) == levels[1:].reshape(1, -1)).astype(float)
    else:
        z = (t - t.mean()) / t.std()
        dm = np.column_stack([z, z**2, z**3])
    dm = np.column_stack([np.ones(len(x)), dm])
    coef, *_ = np.linalg.lstsq(dm, x, rcond=None)
    r2 = 1 - np.var(x - dm @ coef) / np.var(x)
    if len(levels) > 2:
        rho = spearmanr(x, t).statistic
        r2 = max(r2, float(rho) ** 2 if np.isfinite(rho) else 0.0)
    return float(r2)


def data_checks(frame: pd.DataFrame, t: str, y: str, candidates: list[str]) -> DataChecks:
    """Association of each candidate with the treatment, with the outcome given the treatment,
    and R² of each candidate as a function of the treatment. Categoricals are tested as one
    block of dummies (joint test), never skipped unless they have more than 20 levels."""
    out = DataChecks()
    tv = frame[t].to_numpy(dtype=float)
    yv = frame[y].to_numpy(dtype=float)
    for c in candidates:
        block = design_block(frame[c])
        if block is None:
            out.unusable[c] = f"categorical with more than {MAX_LEVELS} levels: too many for the association tests"
            continue
        ok = ~(np.isnan(block).any(axis=1) | np.isnan(tv) | np.isnan(yv))
        if ok.sum() < 30 or np.nanstd(block[ok], axis=0).max() == 0:
            out.unusable[c] = "constant or too few complete rows"
            continue
        out.p_treatment[c] = assoc_pvalue(tv[ok], block[ok])
        out.p_outcome_given_t[c] = assoc_pvalue(yv[ok], block[ok], tv[ok])
        out.r2_from_treatment[c] = max(_r2_from(block[ok][:, j], tv[ok]) for j in range(block.shape[1]))
    return out


def known_pre_treatment(
    domain: DomainKnowledge | None, tiers: dict[str, int], t: str, candidates: list[str], outcome: str | None = None
) -> dict[str, str]:
    """Candidates that domain knowledge places before the treatment, with where that comes from.

    Sources: an earlier ``temporal_order`` tier than the treatment (the metadata's
    ``measured: pre`` flags become such a tier when no order is given), a ``pre_treatment`` list
    (if domain knowledge provides one), the role ``confounder`` (the user asserts a common cause,
    hence something that precedes the treatment), and, where knowledge says nothing about a
    column's timing, a name that makes it an earlier measurement of ``outcome`` (``prior_earnings``,
    ``re74`` for ``re78``: see :func:`~whyflow.causal.dataprep.column_names.outcome_baseline`).
    Such a baseline is the strongest confounder of a before/after comparison; a graph learnt from
    the data can orient its edge with the treatment either way, so the name decides.
    """
    roles = domain.roles if domain else {}
    flagged = set(domain.pre_treatment if domain else [])
    stated_post = set(domain.post_treatment if domain else [])
    out: dict[str, str] = {}
    for c in candidates:
        if t in tiers and c in tiers and tiers[c] < tiers[t]:
            out[c] = f"temporal tier {tiers[c] + 1}, before the treatment's tier {tiers[t] + 1}"
        elif c in flagged:
            out[c] = "domain knowledge says it is measured before the treatment"
        elif roles.get(c) == "confounder":
            out[c] = "domain knowledge gives it the role 'confounder'"
        elif outcome and c not in tiers and c not in stated_post and roles.get(c) is None:
            why = outcome_baseline(c, outcome)
            if why:
                out[c] = (
                    f"a baseline of the outcome by its name ({why}); if it was measured after the treatment, say so in the metadata"
                )
    return out


@dataclass(frozen=True)
class PreVerdict:
    """The disjunctive-cause decision for one known pre-treatment variable."""

    decision: str  # "adjust" | "instrument" | "unrelated"
    p_t: float  # association with the treatment given the other pre-treatment variables
    p_y: float  # association with the outcome given the treatment and the rest
    reason: str


def disjunctive_cause(
    frame: pd.DataFrame, t: str, y: str, pre: list[str], rest: list[str], checks: DataChecks, alpha: float
) -> dict[str, PreVerdict]:
    """VanderWeele's disjunctive cause criterion on the known pre-treatment variables ``pre``.

    A variable measured before the treatment cannot be a mediator or a collider of the effect, so
    adjusting for it is safe whenever it may cause the treatment or the outcome (association,
    marginal or given the other pre-treatment variables ``pre + rest``). The exception is an
    instrument-like variable: associated with the treatment but not with the outcome given the
    treatment and the rest; adjusting for it only adds variance (and amplifies any bias from
    hidden confounding).
    """
    tv, yv = frame[t].to_numpy(float), frame[y].to_numpy(float)
    out: dict[str, PreVerdict] = {}
    for c in pre:
        block = design_block(frame[c])
        if block is None or c not in checks.p_treatment:
            continue
        others = design(frame, [o for o in dict.fromkeys(pre + rest) if o != c])
        p_t = assoc_pvalue(tv, block, others)
        p_y = assoc_pvalue(yv, block, np.column_stack([tv, others]))
        pt_any = min(p_t, checks.p_treatment[c])
        py_any = min(p_y, checks.p_outcome_given_t[c])
        facts = (
            f"treatment p={checks.p_treatment[c]:.2g} (given the other pre-treatment variables p={p_t:.2g}); "
            f"outcome given the treatment p={checks.p_outcome_given_t[c]:.2g} (and given the rest p={p_y:.2g})"
        )
        if pt_any < alpha and p_y >= alpha:
            out[c] = PreVerdict("instrument", p_t, p_y, f"instrument-like: {facts}")
        elif pt_any < alpha or py_any < alpha:
            out[c] = PreVerdict("adjust", p_t, p_y, facts)
        else:
            out[c] = PreVerdict("unrelated", p_t, p_y, f"associated with neither: {facts}")
    return out


def collider_signature(
    frame: pd.DataFrame, t: str, y: str, v: str, others: list[str], alpha: float, alpha_dep: float
) -> str | None:
    """Evidence that ``v`` is a common effect of treatment and outcome (a collider), or None.

    Test (local Markov blanket): a collider's blanket is {treatment, outcome}, so given both it is
    independent of every other variable, while a cause of the treatment or of the outcome is not:
    conditioning on their common effect makes it depend on the other causes ("explaining away").
    Signature: in OLS(v ~ t + y + others) both t and y are significant and the block ``others``
    adds nothing (F-test p >= ``alpha_dep``, a stricter level: the signature rests on independence,
    so only clear dependence rules it out). Needs numeric ``v`` and other measured causes in ``others``.
    """
    import statsmodels.api as sm

    vv = frame[v].to_numpy(float) if pd.api.types.is_numeric_dtype(frame[v]) else None
    rest = design(frame, others)
    if vv is None or rest.shape[1] == 0:
        return None
    tv, yv = frame[t].to_numpy(float), frame[y].to_numpy(float)
    ok = ~(np.isnan(vv) | np.isnan(tv) | np.isnan(yv) | np.isnan(rest).any(axis=1))
    base = np.column_stack([np.ones(int(ok.sum())), tv[ok], yv[ok]])
    fit = sm.OLS(vv[ok], base).fit()
    if max(fit.pvalues[1], fit.pvalues[2]) >= alpha:
        return None
    p_rest = _f_pvalue(vv[ok], rest[ok], base)
    if p_rest < alpha_dep:
        return None
    return (
        f"collider signature: predicted by treatment (p={fit.pvalues[1]:.2g}) and outcome (p={fit.pvalues[2]:.2g}) "
        f"jointly, and independent of the {len(others)} other variables given both (F-test p={p_rest:.2g}); "
        "a cause of the treatment or outcome would depend on their other causes given them"
    )


def screened_by_treatment(frame: pd.DataFrame, t: str, v: str, anchors: list[str]) -> float | None:
    """p-value that ``anchors`` add to OLS(v ~ t), or None when it cannot be computed.

    Why: a cause of the treatment becomes dependent on the treatment's other causes once the
    treatment is given (explaining away); a variable caused only by the treatment does not. A
    large p-value (the treatment screens ``v`` off from the anchors) is the signature of a
    descendant of the treatment; a small one the signature of a cause (or of a variable with
    other causes besides the treatment).
    """
    vv = frame[v].to_numpy(float) if pd.api.types.is_numeric_dtype(frame[v]) else None
    anc = design(frame, anchors)
    if vv is None or anc.shape[1] == 0:
        return None
    tv = frame[t].to_numpy(float)
    ok = ~(np.isnan(vv) | np.isnan(tv) | np.isnan(anc).any(axis=1))
    if ok.sum() < 30:
        return None
    return _f_pvalue(vv[ok], anc[ok], np.column_stack([np.ones(int(ok.sum())), tv[ok]]))


def screen_unknown(
    frame: pd.DataFrame,
    t: str,
    y: str,
    adjusted: list[str],
    checks: DataChecks,
    doubt: dict[str, tuple[str, float]],
    exclude_from_anchors: set[str],
    alpha: float,
) -> tuple[dict[str, str], dict[str, str]]:
    """(drops, flags): variable -> reason, for adjusted variables whose position relative to the
    treatment is unknown.

    ``doubt``: why each one's edge with the treatment is uncertain (with that edge's bootstrap
    confidence); ``exclude_from_anchors``: variables that must not serve as anchors (known
    post-treatment, functions of the treatment, graph descendants).

    1. Associated with both and the collider signature: dropped only when the evidence is
       positive and the test has power: the treatment and the outcome each predict it given the
       other (p < ``alpha / 5``), and at least two other treatment-associated variables, which a
       cause would depend on given treatment and outcome, show no such dependence. Without that
       power it is a flag.
    2. Associated with the treatment: the descendant-of-treatment signature (given the treatment,
       no detectable dependence on the other treatment-associated variables). A failure to reject
       is no evidence (a true confounder can show p=0.16 as well), so this is only a flag.
    3. Otherwise an uncertain orientation of its edge with the treatment: a flag.
    """
    p_t, p_y = checks.p_treatment, checks.p_outcome_given_t
    dep = alpha / 5
    others = [c for c in p_t if c not in exclude_from_anchors]
    out: dict[str, str] = {}
    drops: dict[str, str] = {}
    for c in adjusted:
        if p_t.get(c, 1) < alpha and p_y.get(c, 1) < alpha:
            why = collider_signature(frame, t, y, c, [o for o in others if o != c], dep, dep)
            if not why:
                continue
            powered = sum(1 for o in others if o != c and p_t.get(o, 1) < dep) >= 2
            if powered:
                drops[c] = why
                out[c] = f"left out on the {why}; if it precedes the treatment, adjust for it"
            else:
                out[c] = (
                    f"kept, but {why}. With fewer than two other clear causes of the treatment the test has little "
                    "power and a confounder can show the same signature: re-estimate without it to compare"
                )
    anchors = [c for c in others if p_t[c] < alpha and c not in out]
    for c in adjusted:
        if c in out:
            continue
        rest = [a for a in anchors if a != c]
        p = screened_by_treatment(frame, t, c, rest) if p_t.get(c, 1) < alpha and rest else None
        if p is not None and p >= alpha and any(p_t.get(a, 1) < dep for a in rest):
            out[c] = (
                f"kept, but descendant-of-treatment signature: associated with the treatment (p={p_t[c]:.2g}) but, "
                f"given the treatment, no detectable dependence on the other treatment-associated variables "
                f"(F-test p={p:.2g}), as a cause of the treatment would have; a failure to reject is not evidence, "
                "so it stays adjusted: re-estimate without it to compare"
            )
        elif c in doubt:
            out[c] = _kept(doubt[c][0])
    return drops, out


def _kept(doubt: str) -> str:
    return (
        f"kept as a possible confounder, but {doubt}; if the treatment causes it (a mediator or collider), "
        "adjusting for it biases the effect: re-estimate without it"
    )


def looks_like_id(s: pd.Series, n: int) -> bool:
    """Text with a distinct value per row, or integers that are distinct per row and named like an id."""
    if pd.api.types.is_float_dtype(s) or pd.api.types.is_bool_dtype(s):
        return False
    unique = s.nunique(dropna=True)
    if not pd.api.types.is_numeric_dtype(s):
        return unique >= 0.95 * n
    tokens = str(s.name).lower().replace("-", "_").split("_")
    return unique == n and ("id" in tokens or str(s.name).lower().endswith("id"))
