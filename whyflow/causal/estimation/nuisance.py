"""Nuisance models of the doubly robust estimators, chosen by cross-validated loss, fitted once per fold.

For a binary treatment: the propensity e(x) = P(T=1 | X=x) and the arm-wise outcome regressions
mu1(x), mu0(x); for a continuous treatment: E[T | X] and E[Y | X] (the partially linear model).
Each nuisance is fitted on K-1 folds and predicted on the held-out fold (cross-fitting, K >= 5),
once per candidate learner; the learner with the lower held-out loss (log loss for the
propensity, squared error for the outcome) is kept. Candidates: a linear model (logistic /
least squares), the same on a quadratic basis (squares and pairwise interactions, L2-penalised;
only while the basis stays small next to n) and a flexible one (LightGBM; for the outcome, least
squares plus boosting on its residuals, which extrapolates linearly where an arm has no data).
On nonlinear confounding (x2**2 in the propensity, x3*x4 in both models) the choice gives 95%
intervals covering the truth about 95% of the time; linear nuisances alone never cover
(``benchmarks/bench_aipw_coverage.py``). AIPW, the DR-learner, IPW,
matching, stratification and the balance diagnostics all read the one fit, so they describe the
same models; the fits are kept in the run's data folder (:mod:`whyflow.causal.estimation.nuisance_cache`), so
a later agent or round on the same rows reads them. Every (learner, fold) fit is one part of a
fan-out (:func:`whyflow.runtime.parallel.map_parts`: Prefect tasks on the run's task runner), seeded
by the run's seed, so the predictions do not depend on what runs the parts. A part copies only
the rows it fits on, from the covariate columns (:class:`Rows`), and fits on that one copy
(:func:`fit_owned`): with two parts in flight at 1M rows x 18 covariates the propensity fit
peaks at 290 MiB above the covariates, where copies of the whole matrix and of each fold's
rows (scaled, centred) took 700; every number is the plain fits' to the bit.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from whyflow.causal.estimation.fold_rows import Rows, fit_owned, predict_owned, splits_of, take_rows
from whyflow.causal.estimation.nuisance_cache import outcome_cache_path, propensity_cache_path, store
from whyflow.causal.estimation.propensity import CLIP, gbm_classifier, logistic
from whyflow.runtime.parallel import map_parts

__all__ = [
    "FOLDS",
    "MORE_FOLDS",
    "Nuisance",
    "fit_binary",
    "fit_continuous",
    "choose_propensity",
    "aipw_scores",
    "flexible_allowed",
]

FOLDS = 5
MORE_FOLDS = 10
MIN_FLEXIBLE = 100
"""Fewest training units (per arm for the outcome) for the flexible learner to be a candidate."""
PS_LEARNERS = ("logistic", "logistic-quadratic", "gbm")
OUTCOME_LEARNERS = ("linear", "quadratic", "linear+boosting")
MAX_BASIS = 300
"""Largest quadratic basis (columns) tried; it must also stay under a tenth of the training rows."""
SELECT_ROWS = 20_000
"""Above this many rows each learner is chosen by its held-out loss on a seeded sample of this
size, and only the chosen one is cross-fitted on every row: the choice costs what it costs at
20,000 rows, and the predictions are the full-data ones (identical to choosing on all rows
whenever the sample picks the same learner)."""


def quadratic_ok(p: int, n_train: int) -> bool:
    """Whether a quadratic basis on ``p`` covariates is small enough for ``n_train`` rows."""
    q = p * (p + 3) // 2
    return p >= 1 and q <= MAX_BASIS and 10 * q <= n_train


@dataclass
class Nuisance:
    """Cross-fitted nuisance predictions and how they were chosen."""

    folds: int
    e: np.ndarray | None = None
    mu1: np.ndarray | None = None
    mu0: np.ndarray | None = None
    m_t: np.ndarray | None = None
    m_y: np.ndarray | None = None
    choice: dict[str, str] = field(default_factory=dict)
    cv_loss: dict[str, dict[str, float]] = field(default_factory=dict)
    selected_on: int | None = None
    """Rows of the seeded sample the learners were chosen on (None: every row)."""

    def describe(self) -> str:
        """One sentence naming the chosen learners, their losses and the folds."""
        parts = []
        for name, chosen in self.choice.items():
            losses = ", ".join(f"{k} {v:.4g}" for k, v in self.cv_loss.get(name, {}).items())
            parts.append(f"{name}: {chosen} (held-out loss {losses})")
        where = f" on a seeded sample of {self.selected_on:,} rows" if self.selected_on else ""
        return (
            f"Nuisance models chosen by {self.folds}-fold cross-validated loss{where}, fitted once per fold on "
            "every row: " + "; ".join(parts)
        )

    def outcome_excess(self) -> float:
        """How much worse (relative held-out loss) the linear outcome model is than the chosen one."""
        loss = self.cv_loss.get("outcome", {})
        if "linear" not in loss or len(loss) < 2:
            return 0.0
        best = min(loss.values())
        return float(loss["linear"] / best - 1) if best > 0 else 0.0


def flexible_allowed(n_train: int) -> bool:
    """Whether enough units train a boosted model for it to be worth a candidate."""
    return n_train >= MIN_FLEXIBLE


def _logistic_quadratic() -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    return make_pipeline(
        PolynomialFeatures(2, include_bias=False), StandardScaler(), LogisticRegression(C=1.0, max_iter=3000)
    )


def _ridge_quadratic() -> Any:
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    # gcv_mode="svd": the same leave-one-out criterion from one SVD of the basis, where the default
    # ("eigen" on X'X for n > p) multiplies an n x p matrix again for each of the 13 alphas: 2x
    # faster on 8,000 x 189, same alpha, predictions equal to 1e-13.
    return make_pipeline(
        PolynomialFeatures(2, include_bias=False),
        StandardScaler(),
        RidgeCV(alphas=np.logspace(-3, 3, 13), gcv_mode="svd"),
    )


def _classifier(name: str, seed: int) -> Any:
    if name == "gbm":
        return gbm_classifier(seed)
    return _logistic_quadratic() if name == "logistic-quadratic" else logistic()


def _regressor(name: str, seed: int) -> Any:
    if name == "quadratic":
        return _ridge_quadratic()
    return LinearPlusBoost(seed, boost=name == "linear+boosting")


class LinearPlusBoost:
    """Least squares, then LightGBM on its residuals (linear extrapolation, nonlinear fit inside)."""

    fits_owned_copy = True  # fold_rows.fit_owned passes overwrite_X=True: the fold's own copy

    def __init__(self, seed: int = 0, boost: bool = True) -> None:
        self.seed = seed
        self.boost = boost

    def fit(self, X: np.ndarray, y: np.ndarray, *, overwrite_X: bool = False) -> LinearPlusBoost:
        """``overwrite_X``: ``X`` is the caller's own copy, which the least squares may centre in place
        (without boosting, which reads ``X`` again): the same arithmetic on one copy fewer."""
        from sklearn.linear_model import LinearRegression

        self.linear_ = LinearRegression(copy_X=not (overwrite_X and not self.boost)).fit(X, y)
        self.gbm_ = None
        if self.boost:
            from lightgbm import LGBMRegressor

            self.gbm_ = LGBMRegressor(
                n_estimators=200,
                learning_rate=0.05,
                num_leaves=15,
                min_child_samples=20,
                random_state=self.seed,
                n_jobs=1,
                verbose=-1,
            )
            self.gbm_.fit(X, y - self.linear_.predict(X))
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        out = self.linear_.predict(X)
        return out + self.gbm_.predict(X) if self.gbm_ is not None else out


def selection_rows(n: int, seed: int) -> np.ndarray | None:
    """The seeded sample learners are chosen on when ``n`` exceeds :data:`SELECT_ROWS` (else None)."""
    if n <= SELECT_ROWS:
        return None
    return np.sort(np.random.default_rng(seed + 104729).choice(n, size=SELECT_ROWS, replace=False))


def _propensity(
    Xv: np.ndarray | Rows, t: np.ndarray, splits: Sequence[Any], seed: int, candidates: tuple[str, ...]
) -> tuple[str, np.ndarray, dict[str, float]]:
    sample = selection_rows(len(t), seed) if len(candidates) > 1 else None
    if sample is not None:  # choose on the sample, then cross-fit only the chosen learner on every row
        sub_splits = splits_of(len(sample), len(splits), seed, t[sample])
        best, _, loss = _propensity(take_rows(Xv, sample), t[sample], sub_splits, seed, candidates)
        _, e, _ = _propensity(Xv, t, splits, seed, (best,))
        return best, e, loss
    preds = _assemble(
        len(t),
        splits,
        candidates,
        map_parts(partial(_ps_part, Xv, t, splits, seed), _jobs(candidates, splits), name="propensity-fold"),
    )
    loss = {k: _log_loss(t, v) for k, v in preds.items()}
    best = min(loss, key=lambda k: loss[k])
    return best, preds[best], loss


def _jobs(candidates: tuple[str, ...], splits: Sequence[Any]) -> list[tuple[str, int]]:
    """One part per (learner, fold): the unit of fan-out (:func:`whyflow.runtime.parallel.map_parts`)."""
    return [(name, k) for name in candidates for k in range(len(splits))]


def _assemble(
    n: int, splits: Sequence[Any], candidates: tuple[str, ...], parts: list[np.ndarray]
) -> dict[str, np.ndarray]:
    """Each learner's held-out predictions for every unit, from the parts in :func:`_jobs` order."""
    out: dict[str, np.ndarray] = {}
    it = iter(parts)
    for name in candidates:
        pred = np.empty(n)
        for _, test in splits:
            pred[test] = next(it)
        out[name] = pred
    return out


def _ps_part(
    Xv: np.ndarray | Rows, t: np.ndarray, splits: Sequence[Any], seed: int, job: tuple[str, int]
) -> np.ndarray:
    """One propensity learner fitted on the other folds, predicted on fold ``job[1]`` (seeded by ``seed``)."""
    name, k = job
    train, test = splits[k]
    X_fit, t_fit = take_rows(Xv, train), t[train]
    del train  # a fit holds its rows and labels, not their positions too (6 MiB at 800,000 rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit_owned(_classifier(name, seed), X_fit, t_fit)
        del X_fit, t_fit
        return predict_owned(model, take_rows(Xv, test), proba=True)


def _log_loss(t: np.ndarray, p: np.ndarray) -> float:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(t * np.log(q) + (1 - t) * np.log(1 - q)))


def _regress(
    Xv: np.ndarray | Rows,
    y: np.ndarray,
    splits: Sequence[Any],
    seed: int,
    rows: np.ndarray | None,
    candidates: tuple[str, ...],
) -> dict[str, np.ndarray]:
    """Cross-fitted predictions for every unit, training on ``rows`` (all when None) of the other folds."""
    return _regress_arms(Xv, y, splits, seed, [rows], candidates)[0]


def _regress_arms(
    Xv: np.ndarray | Rows,
    y: np.ndarray,
    splits: Sequence[Any],
    seed: int,
    arms: list[np.ndarray | None],
    candidates: tuple[str, ...],
) -> list[dict[str, np.ndarray]]:
    """:func:`_regress` for each row mask of ``arms``, every (arm, learner, fold) fit one part of one fan-out."""
    jobs = [(a, name, k) for a in range(len(arms)) for name, k in _jobs(candidates, splits)]
    parts = map_parts(partial(_reg_part, Xv, y, splits, seed, arms), jobs, name="outcome-fold")
    per = len(candidates) * len(splits)
    return [_assemble(len(y), splits, candidates, parts[a * per : (a + 1) * per]) for a in range(len(arms))]


def _reg_part(
    Xv: np.ndarray | Rows,
    y: np.ndarray,
    splits: Sequence[Any],
    seed: int,
    arms: list[np.ndarray | None],
    job: tuple[int, str, int],
) -> np.ndarray:
    """One outcome learner fitted on arm ``job[0]``'s rows of the other folds, predicted on fold ``job[2]``."""
    a, name, k = job
    train, test = splits[k]
    rows = arms[a]
    fit_on = train if rows is None else train[rows[train]]
    X_fit, y_fit = take_rows(Xv, fit_on), y[fit_on]
    del train, fit_on
    model = fit_owned(_regressor(name, seed), X_fit, y_fit)
    del X_fit, y_fit
    return predict_owned(model, take_rows(Xv, test), proba=False)


def _outcome_candidates(n_train: int, flexible: bool, p: int) -> tuple[str, ...]:
    if not flexible:
        return ("linear",)
    out = ["linear"]
    if quadratic_ok(p, n_train):
        out.append("quadratic")
    if flexible_allowed(n_train):
        out.append("linear+boosting")
    return tuple(out)


def fit_binary(
    X: pd.DataFrame,
    t: np.ndarray,
    y: np.ndarray,
    seed: int = 0,
    folds: int = FOLDS,
    ps_model: str = "auto",
    flexible: bool = True,
    cache_dir: Path | None = None,
) -> Nuisance:
    """Propensity and arm-wise outcome models, each chosen by held-out loss, cross-fitted.

    ``ps_model`` pins the propensity learner ("logistic" or "gbm"); "auto" picks by log loss.
    ``flexible=False`` keeps the outcome model linear. Without covariates the propensity is the
    treated share and the outcome models are the arm means.
    """
    n = len(y)
    t = np.asarray(t, dtype=float)  # not a copy when it is floats already: nothing here writes to it
    splits = splits_of(n, folds, seed, t)
    k = len(splits)
    if X.shape[1] == 0:
        e = np.full(n, float(t.mean()))
        mu1, mu0 = np.full(n, float(y[t == 1].mean())), np.full(n, float(y[t == 0].mean()))
        return Nuisance(k, e=e, mu1=mu1, mu0=mu0, choice={"propensity": "constant", "outcome": "arm means"})
    Xv = Rows(X)  # the columns themselves: each fold copies the rows it fits on, nothing copies them all
    smaller = int(min(t.sum(), n - t.sum()))
    ps_name, e, ps_loss = choose_propensity(X, t, seed, folds, ps_model, cache_dir, matrix=Xv)
    candidates = _outcome_candidates(int(smaller * (k - 1) / k), flexible, X.shape[1])
    treated = t == 1
    sample = selection_rows(n, seed) if len(candidates) > 1 else None
    path = outcome_cache_path(cache_dir, X, Xv, t, y, seed, folds, candidates, SELECT_ROWS)
    if path is not None and path.exists():  # the same outcome models, fitted earlier in this run
        with np.load(path) as f:
            best, loss, mu1, mu0 = str(f["best"]), json.loads(str(f["loss"])), f["mu1"].copy(), f["mu0"].copy()
    else:
        best, loss, fit1, fit0 = _arm_choice(Xv, y, t, splits, seed, candidates, sample)
        if sample is not None:  # chosen on the sample: cross-fit only the chosen learner on every row
            fit1, fit0 = _regress_arms(Xv, y, splits, seed, [treated, ~treated], (best,))
        mu1, mu0 = fit1[best], fit0[best]
        if path is not None:
            store(path, best=np.array(best), loss=np.array(json.dumps(loss)), mu1=mu1, mu0=mu0)
    return Nuisance(
        k,
        e=e,
        mu1=mu1,
        mu0=mu0,
        choice={"propensity": ps_name, "outcome": best},
        cv_loss={"propensity": ps_loss, "outcome": loss},
        selected_on=None if sample is None else len(sample),
    )


def _arm_choice(
    Xv: np.ndarray | Rows,
    y: np.ndarray,
    t: np.ndarray,
    splits: Sequence[Any],
    seed: int,
    candidates: tuple[str, ...],
    sample: np.ndarray | None,
) -> tuple[str, dict[str, float], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The arm-wise outcome learner with the least held-out squared error (on ``sample`` when given),
    its losses and every candidate's cross-fitted predictions (of the sample's rows when sampled)."""
    if sample is not None:
        Xv, y, t = take_rows(Xv, sample), y[sample], t[sample]
        splits = splits_of(len(sample), len(splits), seed, t)
    treated = t == 1
    fit1, fit0 = _regress_arms(Xv, y, splits, seed, [treated, ~treated], candidates)
    loss = {
        name: float(np.mean(np.where(treated, (y - fit1[name]) ** 2, (y - fit0[name]) ** 2))) for name in candidates
    }
    return min(loss, key=lambda k2: loss[k2]), loss, fit1, fit0


def choose_propensity(
    X: pd.DataFrame,
    t: np.ndarray,
    seed: int = 0,
    folds: int = FOLDS,
    ps_model: str = "auto",
    cache_dir: Path | None = None,
    *,
    matrix: np.ndarray | Rows | None = None,
) -> tuple[str, np.ndarray, dict[str, float]]:
    """The propensity learner chosen by held-out log loss (or the one ``ps_model`` pins), its cross-fitted
    scores and each candidate's loss: the propensity part of :func:`fit_binary` alone (same folds, same
    choice, same scores).

    ``matrix`` is ``X`` as floats (a :class:`Rows` or an array) when the caller has it.

    With ``cache_dir`` (the run's data folder) the fit is stored under a key of the data, the
    seed, the folds and the learner request, so the next agent that needs the same propensity
    (ps_diagnostics, then the effect estimator) reads it instead of fitting it again.
    """
    n = len(t)
    t = np.asarray(t, dtype=float)  # not a copy when it is floats already: nothing here writes to it
    if X.shape[1] == 0:
        return "constant", np.full(n, float(t.mean())), {}
    Xv = Rows(X) if matrix is None else matrix
    path = propensity_cache_path(cache_dir, X, Xv, t, seed, folds, ps_model, PS_LEARNERS)
    if path is not None and path.exists():
        with np.load(path) as f:
            return str(f["name"]), f["e"].copy(), json.loads(str(f["loss"]))
    splits = splits_of(n, folds, seed, t)
    smaller = int(min(t.sum(), n - t.sum()))
    cands = _ps_candidates(ps_model, smaller, X.shape[1], n)
    # The 0/1 floats themselves, not an int copy: the classifiers' classes, fits and losses are the same.
    name, e, loss = _propensity(Xv, t, splits, seed, cands)
    if path is not None:
        store(path, name=np.array(name), e=e, loss=np.array(json.dumps(loss)))
    return name, e, loss


def _ps_candidates(ps_model: str, smaller: int, p: int, n: int) -> tuple[str, ...]:
    if ps_model in PS_LEARNERS:
        return (ps_model,)
    out = ["logistic"]
    if quadratic_ok(p, n) and smaller >= 50:
        out.append("logistic-quadratic")
    if flexible_allowed(smaller):
        out.append("gbm")
    return tuple(out)


def fit_continuous(
    X: pd.DataFrame, t: np.ndarray, y: np.ndarray, seed: int = 0, folds: int = FOLDS, flexible: bool = True
) -> Nuisance:
    """E[T | X] and E[Y | X] for the partially linear model, each chosen by held-out squared error."""
    n = len(y)
    splits = splits_of(n, folds, seed, None)
    k = len(splits)
    Xv = Rows(X)
    candidates = _outcome_candidates(int(n * (k - 1) / k), flexible, X.shape[1])
    choice: dict[str, str] = {}
    losses: dict[str, dict[str, float]] = {}
    fitted: dict[str, np.ndarray] = {}
    sample = selection_rows(n, seed) if len(candidates) > 1 else None
    for label, target in (("treatment", t.astype(float)), ("outcome", y)):
        if sample is None:
            preds = _regress(Xv, target, splits, seed, None, candidates)
        else:  # choose on the sample, cross-fit only the chosen learner on every row
            sub = splits_of(len(sample), len(splits), seed, None)
            preds = _regress(take_rows(Xv, sample), target[sample], sub, seed, None, candidates)
        held = target if sample is None else target[sample]
        loss = {name: float(np.mean((held - p) ** 2)) for name, p in preds.items()}
        best = min(loss, key=lambda k2: loss[k2])
        if sample is not None:
            preds = _regress(Xv, target, splits, seed, None, (best,))
        choice[label], losses[label], fitted[label] = best, loss, preds[best]
    return Nuisance(
        k,
        m_t=fitted["treatment"],
        m_y=fitted["outcome"],
        choice=choice,
        cv_loss=losses,
        selected_on=None if sample is None else len(sample),
    )


def aipw_scores(nu: Nuisance, y: np.ndarray, t: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The AIPW (efficient influence function) scores of the ATE, with ``e`` clipped to [CLIP, 1-CLIP]."""
    assert nu.mu1 is not None and nu.mu0 is not None
    ec = np.clip(e, CLIP, 1 - CLIP)
    return nu.mu1 - nu.mu0 + t * (y - nu.mu1) / ec - (1 - t) * (y - nu.mu0) / (1 - ec)
