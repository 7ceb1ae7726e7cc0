"""Building real states for agent tests: data written to a job folder, a basic profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from whyflow.causal.state import AnalysisState, DataProfile, DatasetInfo


def basic_profile(frame: pd.DataFrame, treatment: str | None = None, outcome: str | None = None) -> DataProfile:
    """A plain DataProfile of ``frame`` (types, missing counts, stats) without heuristics."""
    types: dict[str, str] = {}
    numeric: dict[str, dict[str, float]] = {}
    categorical: dict[str, dict[str, int]] = {}
    for col in frame.columns:
        s = frame[col]
        if pd.api.types.is_numeric_dtype(s):
            types[col] = "binary" if s.dropna().nunique() == 2 else "numeric"
            numeric[col] = {
                "mean": float(s.mean()),
                "std": float(s.std()),
                "min": float(s.min()),
                "max": float(s.max()),
            }
        else:
            types[col] = "binary" if s.dropna().nunique() == 2 else "categorical"
            categorical[col] = {str(k): int(v) for k, v in s.value_counts().items()}
    others = [c for c in frame.columns if c not in (treatment, outcome)]
    return DataProfile(
        n_samples=len(frame),
        n_features=frame.shape[1],
        feature_names=[str(c) for c in frame.columns],
        feature_types=types,
        missing_values={c: int(frame[c].isna().sum()) for c in frame.columns},
        numeric_stats=numeric,
        categorical_stats=categorical,
        treatment_candidates=[treatment] if treatment else [],
        outcome_candidates=[outcome] if outcome else [],
        potential_confounders=others,
    )


def make_state(
    frame: pd.DataFrame,
    job_dir: Path,
    treatment: str | None = None,
    outcome: str | None = None,
    *,
    profile: bool = True,
) -> AnalysisState:
    """A state whose input CSV and analysis parquet live in ``job_dir``."""
    data_dir = job_dir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    csv = job_dir / "input.csv"
    frame.to_csv(csv, index=False)
    parquet = data_dir / "analysis.parquet"
    frame.to_parquet(parquet, index=False)
    state = AnalysisState(
        job_id="test-job",
        dataset_info=DatasetInfo(
            url=str(csv), name="test", local_path=str(csv), n_samples=len(frame), n_features=frame.shape[1]
        ),
        treatment_variable=treatment,
        outcome_variable=outcome,
    )
    if profile:
        state.data_profile = basic_profile(frame, treatment, outcome)
        state.dataframe_path = str(parquet)
    return state


def cell_stream(cell: Any) -> str:
    """The text an executed notebook cell printed."""
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def tagged_cell(nb: Any, tag: str) -> Any:
    """The one cell of ``nb`` carrying ``tag``."""
    (cell,) = [c for c in nb.cells if tag in c.metadata.get("tags", [])]
    return cell
