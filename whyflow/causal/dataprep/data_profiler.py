"""Data profiler: column types, statistics and candidate causal roles of the input table."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import Field

from whyflow.causal.dataprep.frame_checks import duplicate_rows, duplicate_verdict, save_findings
from whyflow.causal.dataprep.implausible import overflowing
from whyflow.causal.dataprep.profiling import build_profile
from whyflow.causal.dataprep.subgroup import parse_where
from whyflow.causal.state import AnalysisState
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.errors import AgentError
from whyflow.core.status import JobStatus
from whyflow.runtime.data import check_columns, describe_read, read_table, write_parquet

__all__ = ["DataProfilerAgent", "DataProfilerParams", "write_parquet"]  # write_parquet: from whyflow.runtime.data


class DataProfilerParams(AgentParams):
    """The profile is determined by the data and the user's choices; one option on what the analysis copy keeps."""

    drop_duplicates: bool = Field(
        True,
        description="drop exact duplicate rows from the analysis copy where a continuous column shows they are "
        "copies (repeats of all-discrete rows are always kept); either way the count is said",
    )


class DataProfilerAgent(Agent[DataProfilerParams]):
    """Profiles the job's copy of the data and proposes treatment, outcome and covariate roles."""

    STATE_MODEL = AnalysisState
    NAME = "data_profiler"
    DESCRIPTION = "Column types, missingness, summary statistics and candidate causal roles."
    REQUIRED_STATE_FIELDS = ("dataset_info",)
    OPTIONAL_STATE_FIELDS = ("raw_metadata",)
    WRITES_STATE_FIELDS = ("data_profile", "dataframe_path")
    JOB_STATUS = JobStatus.PROFILING
    PROGRESS_WEIGHT = 1.0

    Params = DataProfilerParams

    def run(self, view: AnalysisView, params: DataProfilerParams, ctx: AgentContext) -> AgentResult:
        """Read the input, profile it and write the analysis copy."""
        info = view.dataset_info
        if not info.local_path:
            raise AgentError("the dataset has no local copy (dataset_info.local_path is empty): fetch it first")
        frame = read_table(info.local_path)
        treatment, outcome = view.treatment_variable, view.outcome_variable
        design = view.design
        check_columns(
            frame,
            {
                "treatment": treatment,
                "outcome": outcome,
                "instrument": design.instrument,
                "running variable": design.running_variable,
                "time": design.time_column,
            },
            f"the dataset {Path(info.local_path).name}",
        )
        if treatment and treatment == outcome:
            raise AgentError(f"the treatment and the outcome are the same column '{treatment}'")
        ctx.progress(f"profiling {frame.shape[0]:,} rows x {frame.shape[1]} columns")
        with contextlib.suppress(OSError):  # the EDA's look at the file as received, without reading it again
            save_findings(frame, info.local_path, ctx.data_dir)
        subgroup = ""
        if design.where is not None:  # the stated subgroup: every later step reads only its rows
            frame, subgroup = parse_where(design.where).apply(frame)
            ctx.progress(subgroup)
        duplicates = duplicate_verdict(frame)  # every recipe analyses the same rows, and says so
        if not params.drop_duplicates:
            duplicates = dataclasses.replace(duplicates, drop=False, column=None, kept_by_request=True)
        if duplicates.drop:
            frame = frame.loc[~duplicate_rows(frame).to_numpy()].reset_index(drop=True)
        report = build_profile(
            frame,
            treatment,
            outcome,
            view.raw_metadata,
            instrument=design.instrument,
            running_variable=design.running_variable,
            time_column=design.time_column,
        )
        if report.infinite:  # the analysis copy holds them as missing; the user's file is untouched
            frame[list(report.infinite)] = frame[list(report.infinite)].replace([np.inf, -np.inf], np.nan)
            frame.attrs["whyflow_infinite"] = dict(report.infinite)  # data repair records the repair
        huge = {c: n for c, n in report.overflowing.items() if pd.api.types.is_float_dtype(frame[c])}
        for col in huge:  # values too large to be measurements, likewise (numbers as text: data repair's)
            frame[col] = frame[col].mask(overflowing(frame[col].to_numpy(dtype="float64", na_value=np.nan)))
        if huge:
            frame.attrs["whyflow_overflowing"] = huge
        path = write_parquet(frame, ctx.data_dir / "analysis.parquet")
        prof = report.profile.model_copy(
            update={
                "duplicate_rows": duplicates.rows,
                "duplicates_dropped": duplicates.drop,
                "duplicates_note": duplicates.sentence(),
                "subgroup": subgroup,
            }
        )
        t = prof.treatment_candidates[0] if prof.treatment_candidates else None
        y = prof.outcome_candidates[0] if prof.outcome_candidates else None
        counts: dict[str, int] = {}
        for kind in prof.feature_types.values():
            counts[kind] = counts.get(kind, 0) + 1
        n_missing = sum(prof.missing_values.values())
        summary = (
            (f"{subgroup}; " if subgroup else "")
            + f"{prof.n_samples:,} rows x {prof.n_features} columns ("
            + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            + f"); treatment {t or '?'}, outcome {y or '?'}, {len(prof.potential_confounders)} potential confounders"
            + (f", {n_missing:,} missing cells" if n_missing else "")
            + (f"; {duplicates.sentence()}" if duplicates.rows else "")
            + "".join(f"; {n:,} infinite values in {c} read as missing" for c, n in report.infinite.items())
            + "".join(
                f"; {n:,} implausibly large values in {c} (a sum of squares would overflow) read as missing"
                for c, n in report.overflowing.items()
            )
            + "".join(
                f"; {c} holds dates (time axis, not a covariate)"
                for c, k in prof.feature_types.items()
                if k == "datetime" and c not in (treatment, outcome)
            )
        )
        read_note = describe_read(frame)
        if duplicates.rows:
            report.reasons.insert(0, f"duplicates: {duplicates.sentence()}")
        if read_note:
            report.reasons.insert(0, f"reading the file: {read_note}")
        return AgentResult(
            updates={"data_profile": prof, "dataframe_path": str(path)},
            summary=summary,
            reasoning="\n".join(report.reasons),
            outputs={
                "n_samples": prof.n_samples,
                "n_features": prof.n_features,
                "type_counts": counts,
                "treatment": t,
                "outcome": y,
                "text_numeric_columns": report.text_numeric,
                "id_columns": report.id_columns,
                "constant_columns": report.constant_columns,
                "infinite_values": report.infinite,
                "overflowing_values": report.overflowing,
                "date_columns": [c for c, k in prof.feature_types.items() if k == "datetime"],
                "read": dict(frame.attrs.get("whyflow_read") or {}),
                "duplicates": {"rows": duplicates.rows, "dropped": duplicates.drop, "column": duplicates.column},
            },
        )
