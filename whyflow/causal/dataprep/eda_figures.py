"""The EDA's figures: histograms, a correlation heat map and a balance (love) plot, as PNGs.

:func:`planned` names the files :func:`draw_all` writes for the same inputs, so the EDA agent
can report them while :mod:`whyflow.runtime.figures` draws them in its worker process.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["SHOWN_COLUMNS", "draw_all", "planned"]

SHOWN_COLUMNS = 16
"""Histograms drawn at most (the first continuous columns)."""


def planned(
    plots_dir: Path, cols: list[str], matrix: dict[str, dict[str, float]], balance: dict[str, dict[str, float]]
) -> dict[str, str]:
    """The figures :func:`draw_all` writes for these inputs: name -> path."""
    paths: dict[str, str] = {}
    if cols:
        paths["distributions"] = str(plots_dir / "distributions.png")
    if len(matrix) > 1:
        paths["correlation_heatmap"] = str(plots_dir / "correlation_heatmap.png")
    if balance:
        paths["balance"] = str(plots_dir / "balance.png")
    return paths


def draw_all(
    plots_dir: Path,
    sample: pd.DataFrame,
    cols: list[str],
    matrix: dict[str, dict[str, float]],
    balance: dict[str, dict[str, float]],
    threshold: float,
    n_rows: int,
) -> dict[str, str]:
    """Draw every figure :func:`planned` names (``sample`` holds the histograms' columns, of ``n_rows`` rows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = planned(plots_dir, cols, matrix, balance)
    if "distributions" in paths:
        shown = cols[:SHOWN_COLUMNS]
        n = len(shown)
        ncol = min(4, n)
        nrow = int(np.ceil(n / ncol))
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 2.8 * nrow), squeeze=False)
        for ax, col in zip(axes.flat, shown, strict=False):
            ax.hist(sample[col].dropna(), bins=40, color="#4C72B0", histtype="stepfilled")
            ax.set_title(col, fontsize=10)
            ax.set_xlabel("value")
            ax.set_ylabel("count")
        for ax in list(axes.flat)[n:]:
            ax.axis("off")
        fig.suptitle(f"Distributions of numeric columns (n = {n_rows:,})")
        fig.tight_layout()
        _save(fig, paths["distributions"])
    if "correlation_heatmap" in paths:
        names = list(matrix)[:30]
        values = np.array([[matrix[a][b] for b in names] for a in names])
        size = max(5.0, 0.4 * len(names) + 2)
        fig, ax = plt.subplots(figsize=(size + 1, size))
        im = ax.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1)
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=8)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        fig.colorbar(im, ax=ax, label="Pearson r")
        ax.set_title("Correlation between numeric columns")
        fig.tight_layout()
        _save(fig, paths["correlation_heatmap"])
    if "balance" in paths:
        names = sorted(balance, key=lambda c: abs(balance[c]["smd"]))
        fig, ax = plt.subplots(figsize=(6, max(2.5, 0.3 * len(names) + 1)))
        smds = [abs(balance[c]["smd"]) for c in names]
        ax.scatter(smds, range(len(names)), color=["#C44E52" if s > threshold else "#4C72B0" for s in smds])
        ax.axvline(threshold, color="grey", linestyle="--", label=f"|SMD| = {threshold:g}")
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.set_xlabel("absolute standardized mean difference (treated vs control)")
        ax.set_title("Covariate balance before adjustment")
        ax.legend(loc="lower right")
        fig.tight_layout()
        _save(fig, paths["balance"])
    return paths


def _save(fig: Any, path: str) -> None:
    import matplotlib.pyplot as plt

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module=r"matplotlib\..*")
        fig.savefig(path, dpi=110)
    plt.close(fig)
