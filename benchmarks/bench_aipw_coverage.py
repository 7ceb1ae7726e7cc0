"""Coverage of the cross-fitted AIPW interval on nonlinear confounding, over many seeds.

Data: four confounders; the propensity depends on x2**2 and x3*x4, the outcome on x2**2, x3*x4 and
sin(x1); constant effect 2.5. For each seed the nuisances are chosen by cross-validated loss
(linear vs gradient boosting, 5 folds), as the effect estimator does, and a linear-only AIPW is
run for contrast. Prints the share of 95% intervals covering the truth, the mean bias and the
mean interval width.

    .venv/bin/python benchmarks/bench_aipw_coverage.py --seeds 100 --n 2000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd


def nonlinear(n: int, seed: int, effect: float = 2.5) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    logit = 0.8 * (x[:, 1] ** 2 - 1) + 0.5 * x[:, 0] + 0.6 * x[:, 2] * x[:, 3]
    t = rng.binomial(1, 1 / (1 + np.exp(-logit))).astype(float)
    y = effect * t + x[:, 0] + x[:, 1] ** 2 + 1.5 * x[:, 2] * x[:, 3] + np.sin(2 * x[:, 0]) + rng.normal(size=n)
    return pd.DataFrame(x, columns=["x1", "x2", "x3", "x4"]), t, y


def main() -> None:
    from whyflow.causal.estimation.backdoor import aipw
    from whyflow.causal.estimation.nuisance import fit_binary

    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()
    truth = 2.5
    rows = []
    start = time.time()
    for seed in range(args.seeds):
        X, t, y = nonlinear(args.n, seed)
        for label, flexible in (("cv-chosen", True), ("linear only", False)):
            nu = fit_binary(X, t, y, seed, ps_model="auto" if flexible else "logistic", flexible=flexible)
            assert nu.e is not None
            est = aipw(X, y, t, nu.e, seed, nuisance=nu)
            rows.append(
                {
                    "nuisances": label,
                    "covers": est.ci[0] <= truth <= est.ci[1],
                    "bias": est.estimate - truth,
                    "width": est.ci[1] - est.ci[0],
                    "outcome_model": nu.choice["outcome"],
                    "propensity": nu.choice["propensity"],
                }
            )
    df = pd.DataFrame(rows)
    print(
        f"AIPW on nonlinear confounding, n = {args.n}, {args.seeds} seeds, truth {truth} ({time.time() - start:.0f} s)"
    )
    for label, g in df.groupby("nuisances", sort=False):
        chosen = g["outcome_model"].value_counts().to_dict()
        ps = g["propensity"].value_counts().to_dict()
        print(
            f"  {label:<12} coverage {g['covers'].mean():.1%}  mean bias {g['bias'].mean():+.3f}  "
            f"mean CI width {g['width'].mean():.3f}  outcome models {chosen}  propensity {ps}"
        )


if __name__ == "__main__":
    main()
