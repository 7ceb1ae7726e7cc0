"""The randomised-treatment check: where adjustment should not move the estimate, who moves it.

Why: in an experiment a pre-treatment covariate is balanced between the arms up to chance, so
adjusting for it changes the effect by little (it buys precision). Where the treatment looks
randomised (balanced on every covariate and a propensity model no better than a coin, or domain
knowledge says so), an adjustment that moves the estimate by more than its standard error, and
well beyond what chance imbalance explains, is evidence that some adjusted column was measured
after the treatment (a second outcome, a mediator). Leave-one-out on the adjusted regression names
the columns that carry the move, so they can be left out with the reason.

A treatment balanced on every covariate but one or two is also randomised-looking when the
balanced ones predict the outcome (so their balance is evidence, not noise) and each exception
depends on them as the outcome does (a copy or report of the outcome, a downstream outcome): a
confounder of a treatment balanced on them would have to be unrelated to them, or they would be
out of balance too. Such an exception is named only if it carries the move (then the estimate is
recomputed without it); otherwise the move stays a doubt and the answer is refused.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.dataprep.column_names import ColumnRole
from whyflow.causal.knowledge import DomainKnowledge

__all__ = ["MoveCheck", "randomised_move", "says_randomised"]

MIN_BALANCED = 3
"""Fewest other covariates that must be balanced before a few out-of-balance columns count as moved by a
randomised treatment."""
OTHERS_SMD = 0.2
"""Largest |SMD| of those other covariates (the conventional bound of a negligible imbalance)."""
OTHERS_AUC = 0.6
"""Largest cross-validated AUC of a propensity model on those other covariates (0.5: a coin)."""
STANDS_OUT = 2.0
"""How many times the others' largest |SMD| each out-of-balance column must reach."""
SIGNATURE_P = 1e-3
"""F-test p-value below which the balanced covariates predict the outcome (so their balance is evidence) and
an out-of-balance column (so it can follow the outcome's pattern)."""
SIGNATURE_CORR = 0.5
"""Least correlation between the column's and the outcome's covariate indexes for it to follow the outcome."""
_RANDOMISED_WORDS = re.compile(r"randomi[sz]|random assignment|experiment|\brct\b|\btrial\b|lottery", re.I)


@dataclass(frozen=True)
class MoveCheck:
    """The randomised-treatment check: was it run, the estimates, and the columns that carry a move."""

    applies: bool
    why: str
    unadjusted: float = float("nan")
    adjusted: float = float("nan")
    se_adjusted: float = float("nan")
    carriers: tuple[ColumnRole, ...] = ()
    resolved: bool = True

    def unresolved_note(self) -> str:
        """What to say when the move stays after the carriers are out."""
        return (
            f"the treatment looks randomised ({self.why}) but adjusting still moves the estimate from "
            f"{self.unadjusted:.4g} to {self.adjusted:.4g} (SE {self.se_adjusted:.2g}) and no single column "
            "carries the move: some adjusted columns may be measured after the treatment"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON form (the carriers as role dicts)."""
        d = asdict(self)
        d["carriers"] = [c.as_dict() for c in self.carriers]
        return d


def says_randomised(domain: DomainKnowledge | None) -> bool:
    """Whether domain knowledge (description, tags, notes) says the treatment was randomised."""
    dk = domain or DomainKnowledge()
    text = " ".join([dk.description, dk.domain or "", *dk.tags, *dk.notes])
    return bool(_RANDOMISED_WORDS.search(text))


def _ols_t(y: np.ndarray, t: np.ndarray, X: np.ndarray) -> tuple[float, float]:
    """The treatment's OLS coefficient and HC1 standard error in y ~ 1 + t + X."""
    D = np.column_stack([np.ones(len(y)), t, X])
    coef, *_ = np.linalg.lstsq(D, y, rcond=None)
    e = y - D @ coef
    bread = np.linalg.pinv(D.T @ D)
    meat = (D * (e**2)[:, None]).T @ D
    n, k = D.shape
    cov = bread @ meat @ bread * n / max(n - k, 1)
    return float(coef[1]), float(np.sqrt(max(cov[1, 1], 0.0)))


def _auc(score: np.ndarray, t: np.ndarray) -> float:
    ranks = pd.Series(score).rank().to_numpy()
    n1 = float(t.sum())
    n0 = len(t) - n1
    return float((ranks[t == 1].sum() - n1 * (n1 + 1) / 2) / max(n1 * n0, 1.0))


def _cv_auc(X: np.ndarray, t: np.ndarray, seed: int) -> float:
    """Cross-validated AUC of a logistic propensity model (5 folds)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    score = np.zeros(len(t))
    Z = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    for train, test in StratifiedKFold(5, shuffle=True, random_state=seed).split(Z, t):
        model = LogisticRegression(max_iter=500).fit(Z[train], t[train])
        score[test] = model.decision_function(Z[test])
    return _auc(score, t)


def _max_smd(block: np.ndarray, t: np.ndarray) -> float:
    """Largest |standardised mean difference| between the arms over one variable's design columns."""
    sd = np.sqrt((block[t == 1].var(axis=0) + block[t == 0].var(axis=0)) / 2)
    gap = np.abs(block[t == 1].mean(axis=0) - block[t == 0].mean(axis=0))
    return float(np.max(gap / np.where(sd > 0, sd, 1.0), initial=0.0))


def _signature(target: np.ndarray, t: np.ndarray, X: np.ndarray) -> tuple[float, np.ndarray]:
    """How ``target`` depends on the covariates ``X`` given the treatment: the F-test p-value of ``X`` in
    ``target ~ 1 + t + X`` and the fitted covariate index ``X @ coef`` (its direction)."""
    from scipy import stats

    base = np.column_stack([np.ones(len(t)), t])
    full = np.column_stack([base, X])
    coef, *_ = np.linalg.lstsq(full, target, rcond=None)
    rss1 = float(np.sum((target - full @ coef) ** 2))
    rss0 = float(np.sum((target - base @ np.linalg.lstsq(base, target, rcond=None)[0]) ** 2))
    df1, df2 = X.shape[1], len(t) - full.shape[1]
    if df1 == 0 or df2 <= 0 or rss1 <= 0:
        return 1.0, np.zeros(len(t))
    f = ((rss0 - rss1) / df1) / (rss1 / df2)
    return float(stats.f.sf(f, df1, df2)), X @ coef[2:]


def _inherits(m: np.ndarray, y_p: float, y_index: np.ndarray, t: np.ndarray, X: np.ndarray) -> tuple[bool, float]:
    """Whether column ``m`` depends on the balanced covariates as the outcome does (a descendant of the
    outcome inherits its covariate signature; a confounder of a treatment balanced on them cannot be related
    to them, or they would be out of balance too), and the correlation of the two covariate indexes."""
    m_p, m_index = _signature(m, t, X)
    if np.std(m_index) == 0 or np.std(y_index) == 0:
        return False, 0.0
    r = float(np.corrcoef(m_index, y_index)[0, 1])
    return y_p < SIGNATURE_P and m_p < SIGNATURE_P and r >= SIGNATURE_CORR, r


def _balanced_but_for(
    smd: dict[str, float],
    blocks: dict[str, np.ndarray],
    t: np.ndarray,
    y: np.ndarray,
    seed: int,
    protected: Collection[str],
    most: int,
) -> tuple[set[str], str] | None:
    """The few columns out of balance where every other covariate is balanced, with the evidence in words.

    Positive evidence of randomisation with a few exceptions: at least :data:`MIN_BALANCED` other
    covariates, each within :data:`OTHERS_SMD`, a propensity model on them no better than
    :data:`OTHERS_AUC`, and the exceptions (at most ``most``, none known to precede the treatment)
    each at least :data:`STANDS_OUT` times the largest imbalance of the others and at least
    :data:`OTHERS_SMD` themselves. In a trial only what the treatment moved is out of balance; in
    observational data the treatment's causes are rarely one or two columns among balanced ones.
    Two more conditions make the balance evidence and tell a descendant of the outcome from a lone
    confounder (:func:`_inherits`): the balanced covariates predict the outcome, and each exception
    depends on them as the outcome does. None when the pattern is not there.
    """
    ranked = sorted(smd, key=lambda c: -smd[c])
    for k in range(1, most + 1):
        out, rest = ranked[:k], ranked[k:]
        top = max((smd[c] for c in rest), default=1.0)
        if len(rest) < MIN_BALANCED or top >= OTHERS_SMD:
            continue
        if any(c in protected or smd[c] < max(STANDS_OUT * top, OTHERS_SMD) for c in out):
            return None
        X = np.column_stack([blocks[c] for c in rest])
        auc = _cv_auc(X, t, seed)
        if auc >= OTHERS_AUC or any(blocks[c].shape[1] != 1 for c in out):
            return None
        y_p, y_index = _signature(y, t, X)
        signs = {c: _inherits(blocks[c][:, 0], y_p, y_index, t, X) for c in out}
        if not all(ok for ok, _ in signs.values()):
            return None
        why = (
            f"balanced on the {len(rest)} other covariates (max |SMD| {top:.2f}, propensity AUC {auc:.2f}), which "
            f"predict the outcome (p = {y_p:.1g}), but for "
            + ", ".join(
                f"{c} (|SMD| {smd[c]:.2f}; it follows the outcome's covariate pattern, r = {signs[c][1]:.2f})"
                for c in out
            )
        )
        return set(out), why
    return None


def randomised_move(
    frame: pd.DataFrame,
    treatment: str,
    outcome: str,
    adjust: list[str],
    *,
    stated_randomised: bool = False,
    protected: Collection[str] = (),
    max_rows: int = 20000,
    seed: int = 0,
    max_carriers: int = 3,
) -> MoveCheck:
    """Where a 0/1 treatment looks randomised, name the adjusted columns that carry a large move.

    Randomised-looking: ``stated_randomised`` (domain knowledge says so), or every covariate has
    |SMD| < 0.1 and a cross-validated logistic propensity model has AUC < 0.55, or it is balanced on
    every covariate but a few that follow the outcome (:func:`_balanced_but_for`; only those few may
    then be named, and only if they carry the move). The move is the
    adjusted minus the unadjusted OLS effect; it is large when it exceeds the adjusted standard
    error and is more than 3 times the standard deviation chance imbalance gives it under
    randomisation (sqrt of the difference of the two variances). Leave-one-out on the adjusted
    regression then removes, one at a time (at most ``max_carriers``), the column whose removal
    brings the estimate closest to the unadjusted one. ``protected`` columns are never removed.
    """
    from whyflow.causal.discovery.adjustment_rules import design, design_block

    t_raw = frame[treatment]
    if not pd.api.types.is_numeric_dtype(t_raw) or set(t_raw.dropna().unique()) - {0, 1} or not adjust:
        return MoveCheck(False, "needs a 0/1 treatment and a non-empty adjustment set")
    cols = [c for c in adjust if c in frame.columns and design_block(frame[c]) is not None]
    sub = frame[[treatment, outcome, *cols]].dropna()
    if len(sub) > max_rows:
        sub = sub.sample(n=max_rows, random_state=seed)
    if len(sub) < 100 or not cols:
        return MoveCheck(False, "too few complete rows")
    t = sub[treatment].to_numpy(dtype=float)
    y = sub[outcome].to_numpy(dtype=float)
    blocks = {c: design(sub, [c]) for c in cols}
    X = np.column_stack(list(blocks.values()))
    smd = {c: _max_smd(blocks[c], t) for c in cols}
    auc = _cv_auc(X, t, seed) if min(t.sum(), len(t) - t.sum()) >= 10 else 1.0
    top = max(smd.values())
    suspects: set[str] = set()
    if stated_randomised:
        why = "domain knowledge says randomised"
    elif top < 0.1 and auc < 0.55:
        why = f"balanced on every covariate (max |SMD| {top:.2f}, propensity AUC {auc:.2f})"
    else:
        found = _balanced_but_for(smd, blocks, t, y, seed, protected, max_carriers)
        if found is None:
            return MoveCheck(False, f"the treatment does not look randomised (max |SMD| {top:.2f}, AUC {auc:.2f})")
        suspects, why = found
    protected = {*protected, *(c for c in cols if suspects and c not in suspects)}
    unadj, se_u = _ols_t(y, t, np.empty((len(y), 0)))
    live = list(cols)
    carriers: list[ColumnRole] = []

    def fit(use: list[str]) -> tuple[float, float]:
        M = np.column_stack([blocks[c] for c in use]) if use else np.empty((len(y), 0))
        return _ols_t(y, t, M)

    def large(est: float, se: float) -> bool:
        move = abs(est - unadj)
        chance = max(np.sqrt(abs(se_u**2 - se**2)), 0.5 * se)
        return move > se and move > 3 * chance

    adj, se_a = fit(live)
    first = (adj, se_a)
    while large(adj, se_a) and len(carriers) < max_carriers:
        options = [c for c in live if c not in protected]
        if not options:
            break
        trials = {c: fit([k for k in live if k != c]) for c in options}
        c = min(trials, key=lambda k: (abs(trials[k][0] - unadj), str(k)))
        if abs(trials[c][0] - unadj) > 0.5 * abs(adj - unadj):
            break  # no single column carries the move
        reason = (
            f"post-treatment by the data: the treatment looks randomised ({why}), yet adjusting for it moves "
            f"the effect from {trials[c][0]:.4g} to {adj:.4g} (unadjusted {unadj:.4g}, adjusted SE {se_a:.2g}); "
            "a pre-treatment covariate cannot do that in an experiment"
        )
        carriers.append(ColumnRole(c, "post_treatment_move", reason))
        live.remove(c)
        adj, se_a = trials[c]
    return MoveCheck(True, why, unadj, first[0], first[1], tuple(carriers), resolved=not large(adj, se_a))
