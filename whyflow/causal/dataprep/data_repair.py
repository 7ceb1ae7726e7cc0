"""Data repair: a Great Expectations suite built from the profile, then the repairs that are safe.

Each failed expectation and each repair becomes one ``data_repairs`` entry with counts, so the
critique and the report can say exactly what was changed. Safe repairs: numbers stored as text
parsed, label spelling variants unified, exact duplicate rows dropped, rows missing the
treatment or outcome dropped (never imputed), constant and all-empty columns dropped, other
missing values imputed (median / mode) with a ``<col>_missing`` indicator when the share is material.
Outliers are reported, not changed: trimming them would change the estimand silently.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from pydantic import Field

from whyflow.causal.dataprep.expectations import expectation_suites, fmt_value, run_expectations
from whyflow.causal.dataprep.frame_checks import DuplicateVerdict, at_most_distinct, duplicate_rows, duplicate_verdict
from whyflow.causal.dataprep.profiling import (
    NUMERIC_TYPES,
    build_profile,
    decimal_comma,
    label_variants,
    parse_numeric_text,
)
from whyflow.causal.dataprep.repair_rules import (
    infinite_to_missing,
    overflowing_to_missing,
    parse_date_columns,
    recheck_expectations,
    recording_errors,
    unrepaired,
)
from whyflow.causal.dataprep.unit_rows import one_row_per_unit, repeated_unit_rows
from whyflow.causal.diagnostics import ExpectationFailure, RepairAction
from whyflow.causal.knowledge import ColumnMetadata, Metadata
from whyflow.causal.state import AnalysisState, DataProfile
from whyflow.causal.view import AnalysisView
from whyflow.core.agent import Agent, AgentContext, AgentParams, AgentResult
from whyflow.core.errors import AgentError
from whyflow.core.status import JobStatus
from whyflow.core.view import required

__all__ = ["DataRepairAgent", "DataRepairParams"]


def _short(entry: RepairAction) -> str:
    """A repair in a few words for the console: "x2: 6 recording errors set to missing"."""
    where = f"{entry.column}: " if entry.column else ""
    return f"{where}{entry.issue} ({entry.detail})"


def _repair(column: str | None, issue: str, action: str, n_before: int, n_after: int, detail: str) -> RepairAction:
    return RepairAction(
        kind="repair",
        column=column,
        issue=issue,
        action=action,
        n_before=int(n_before),
        n_after=int(n_after),
        detail=detail,
    )


class DataRepairParams(AgentParams):
    """Options of the repair step."""

    indicator_threshold: float = Field(
        0.05, ge=0, le=1, description="missing share above which an imputed column gets a <col>_missing indicator"
    )
    drop_duplicates: bool = Field(
        True, description="drop exact duplicate rows where a continuous column shows they are copies"
    )
    impute: bool = Field(True, description="impute missing covariate values")
    one_row_per_unit: bool = Field(
        True,
        description="keep one row per unit when the treatment, outcome and most columns repeat on a unit's rows",
    )
    recording_errors: bool = Field(
        True,
        description="set values entered at the wrong scale (x100...) to missing (whyflow.causal.dataprep.repair_rules)",
    )


class DataRepairAgent(Agent[DataRepairParams]):
    """Validates the data against expectations built from its profile and repairs what is safe."""

    STATE_MODEL = AnalysisState
    NAME = "data_repair"
    DESCRIPTION = "Great Expectations checks, then safe repairs (types, duplicates, missing values), each recorded."
    REQUIRED_STATE_FIELDS = ("data_profile", "dataframe_path")
    OPTIONAL_STATE_FIELDS = ("domain_knowledge",)
    WRITES_STATE_FIELDS = ("data_repairs", "dataframe_path", "data_profile")
    JOB_STATUS = JobStatus.PROFILING
    PRELOAD_MODULES = ("great_expectations",)
    PROGRESS_WEIGHT = 1.5

    Params = DataRepairParams

    def run(self, view: AnalysisView, params: DataRepairParams, ctx: AgentContext) -> AgentResult:
        """Validate, repair, write ``repaired.parquet`` and re-profile."""
        from whyflow.runtime.data import read_table, write_parquet

        profile = required(view.data_profile, "data_profile")
        raw = read_table(required(view.dataframe_path, "dataframe_path"))
        treatment, outcome, why = self._pair(view)
        for role, col in (("treatment", treatment), ("outcome", outcome)):
            if col and col not in raw.columns:
                raise AgentError(f"the {role} column '{col}' is not in the analysis data")
        ids = [c for c, k in profile.feature_types.items() if k == "id" and c in raw.columns]
        ctx.progress(f"checking {raw.shape[0]:,} rows against expectations")
        repairs: list[RepairAction] = []
        frame = self._parse_numbers(raw, profile, ids, repairs)
        on_raw, on_parsed = expectation_suites(frame, raw, profile, ids)
        on_parsed_failed = run_expectations(frame, on_parsed)
        failures = run_expectations(raw, on_raw) + on_parsed_failed
        self._infinities_and_dates(frame, profile, raw.attrs, repairs)
        frame = self._fix_labels(frame, profile, repairs)
        if profile.duplicates_dropped and profile.duplicate_rows:  # the profiler's copy holds none of them
            n = profile.duplicate_rows
            repairs.append(
                _repair(
                    None,
                    "exact duplicate rows",
                    "dropped the repeats, kept the first (data profiler)",
                    len(raw) + n,
                    len(raw),
                    f"{n:,} duplicate rows removed; {profile.duplicates_note}",
                )
            )
        design = view.design
        kept_whole = {  # the design's own columns: a filled-in value would move a unit across the cutoff or panel
            "instrument": design.instrument,
            "running variable": design.running_variable,
            "unit": design.unit_column,
            "time": design.time_column,
            **{f"instrument {k + 2}": c for k, c in enumerate(design.extra_instruments)},
        }
        frame, dropped = self._drop_rows(frame, treatment, outcome, params, repairs, kept_whole)
        if params.one_row_per_unit and not (design.unit_column or design.time_column or design.cluster):
            # a stated panel or cluster says how the rows depend on each other: the rows stand
            frame = self._one_row_per_unit(frame, treatment, outcome, design, kept_whole, repairs)
        protected = {c for c in kept_whole.values() if c}
        frame = self._drop_constants(frame, treatment, outcome, repairs)
        if params.recording_errors:
            self._recording_errors(frame, profile, {treatment, outcome, *ids, *protected}, repairs)
        if params.impute:
            frame = self._impute(
                frame, profile, {treatment, outcome, *ids, *protected}, params.indicator_threshold, repairs
            )
        frame = frame.reset_index(drop=True)
        unchanged = None if repairs else (on_parsed, on_parsed_failed)  # no repair: the data validated above
        still = recheck_expectations(frame, profile, run_expectations, unchanged)
        left = {(f["expectation"], f["column"]) for f in still}
        rescaled = {r.column for r in repairs if r.issue == "recording errors"}
        for failure in failures:
            failure["repaired"] = (failure["expectation"], failure["column"]) not in left
            if failure["expectation"] == "expect_column_values_to_be_between" and failure["column"] not in rescaled:
                failure.update(repaired=False, kept="outliers are reported, not changed; not a data error")
        checked = [ExpectationFailure.model_validate(f) for f in failures]
        open_issues = unrepaired(still)
        path = write_parquet(frame, ctx.data_dir / "repaired.parquet")
        metadata = self._metadata(view)
        design = view.design
        report = build_profile(
            frame,
            treatment,
            outcome,
            metadata,
            instrument=design.instrument if design.instrument in frame.columns else None,
            running_variable=design.running_variable if design.running_variable in frame.columns else None,
            time_column=design.time_column if design.time_column in frame.columns else None,
        )
        duplicates = {k: getattr(profile, k) for k in ("duplicate_rows", "duplicates_dropped", "duplicates_note")}
        if dropped is not None:  # dropped here: the profiler was told to keep them
            duplicates = {
                "duplicate_rows": dropped.rows,
                "duplicates_dropped": True,
                "duplicates_note": dropped.sentence(),
            }
        report.profile = report.profile.model_copy(update={**duplicates, "subgroup": profile.subgroup})
        entries = [*checked, *repairs, *open_issues]
        summary = (
            f"{len(failures)} failed expectations, {len(repairs)} repairs"
            + "".join(f"; {_short(e)}" for e in repairs)
            + (
                f"; still failing after repair: {', '.join(str(e.column or 'table') for e in open_issues)}"
                if open_issues
                else ""
            )
            + f"; {raw.shape[0]:,} -> {frame.shape[0]:,} rows, {raw.shape[1]} -> {frame.shape[1]} columns"
        )
        reasoning = "\n".join(
            [why, "Failed expectations:"]
            + [f"- {e.expectation} [{e.column}]: {e.detail}" for e in checked]
            + ["Repairs:"]
            + [f"- {e.issue} [{e.column}]: {e.action} ({e.detail})" for e in repairs]
            + ["Checked again with Great Expectations after the repairs; still failing:"]
            + [f"- [{e.column}] {', '.join(e.expectations)}: {e.detail}" for e in open_issues]
            + ["Other outliers are reported, not changed: trimming them would silently change the estimand."]
        )
        return AgentResult(
            updates={"data_repairs": entries, "dataframe_path": str(path), "data_profile": report.profile},
            summary=summary,
            reasoning=reasoning,
            outputs={
                "n_failed_expectations": len(failures),
                "n_repairs": len(repairs),
                "rows": [int(raw.shape[0]), int(frame.shape[0])],
                "columns": [int(raw.shape[1]), int(frame.shape[1])],
                "unrepaired_columns": [e.column for e in open_issues if e.column is not None],
            },
            tools_called=["great_expectations"],
        )

    @staticmethod
    def _pair(view: AnalysisView) -> tuple[str | None, str | None, str]:
        found = view.maybe_pair()
        if found is None:
            return None, None, "no pair chosen yet and no candidates in the profile"
        t, y = found.treatment, found.outcome
        return t, y, f"{found.note}: {t} -> {y}" if found.note else f"pair under study: {t} -> {y}"

    @staticmethod
    def _metadata(view: AnalysisView) -> Metadata | None:
        """Roles from the domain knowledge, in the metadata shape the profiler understands."""
        dk = view.domain_knowledge
        if not dk:
            return None
        columns: dict[str, ColumnMetadata] = {c: ColumnMetadata(role=r) for c, r in dk.roles.items()}
        for c in dk.post_treatment:
            columns.setdefault(c, ColumnMetadata()).measured = "post"
        return Metadata(columns=dict(columns))

    @staticmethod
    def _parse_numbers(
        raw: pd.DataFrame, profile: DataProfile, ids: list[str], repairs: list[RepairAction]
    ) -> pd.DataFrame:
        frame = raw.copy(deep=False)  # copy-on-write: a replaced column never reaches ``raw``
        for col in frame.columns:
            if col in ids or profile.feature_types.get(col) not in NUMERIC_TYPES:
                continue
            parsed = parse_numeric_text(frame[col])
            if parsed is None:
                continue
            n_text = int(frame[col].notna().sum())
            n_ok = int(parsed.notna().sum())
            comma = decimal_comma(frame[col])
            frame[col] = parsed
            repairs.append(
                _repair(
                    col,
                    "numbers stored as text",
                    "parsed as numbers ("
                    + ("decimal commas read as decimal points" if comma else "removed thousands separators")
                    + ", spaces, currency and % signs)",
                    n_text,
                    n_ok,
                    f"{n_text:,} text values, {n_ok:,} parsed, {n_text - n_ok:,} unparseable set to missing",
                )
            )
        return frame

    @staticmethod
    def _infinities_and_dates(
        frame: pd.DataFrame, profile: DataProfile, earlier: dict, repairs: list[RepairAction]
    ) -> None:
        # The profiler already read the infinite and the overflowing values of its float columns as
        # missing in the analysis copy (``earlier``: the copy's attrs); here those of numbers as text.
        counts = dict(earlier.get("whyflow_infinite") or {})
        for col, n in infinite_to_missing(frame).items():
            counts[col] = counts.get(col, 0) + n
        huge = dict(earlier.get("whyflow_overflowing") or {})
        for col, n in overflowing_to_missing(frame).items():
            huge[col] = huge.get(col, 0) + n
        for col, n in huge.items():
            repairs.append(
                _repair(
                    col,
                    "implausibly large values",
                    "set to missing (a sum of the column's squares would overflow: not measurements)",
                    n,
                    0,
                    f"{n:,} implausibly large values set to missing",
                )
            )
        for col, n in counts.items():
            repairs.append(
                _repair(
                    col,
                    "infinite values",
                    "set to missing (inf/-inf are not measurements)",
                    n,
                    0,
                    f"{n:,} infinite values set to missing",
                )
            )
        for col, (n, bad) in parse_date_columns(frame, profile).items():
            repairs.append(
                _repair(
                    col,
                    "dates stored as text",
                    "parsed as dates: a time axis, not a covariate",
                    n,
                    n - bad,
                    f"{n:,} values parsed, {bad:,} unparseable set to missing",
                )
            )

    @staticmethod
    def _recording_errors(
        frame: pd.DataFrame, profile: DataProfile, protected: set, repairs: list[RepairAction]
    ) -> None:
        for col in list(frame.columns):
            if col in protected or profile.feature_types.get(col) != "numeric":
                continue
            found = recording_errors(frame[col])
            if found is None:
                continue
            mask, factor = found
            examples = ", ".join(fmt_value(v) for v in frame.loc[mask, col].head(3))
            frame[col] = frame[col].mask(mask)
            n = int(mask.sum())
            repairs.append(
                _repair(
                    col,
                    "recording errors",
                    f"set to missing (values about x{factor} the rest, e.g. {examples})",
                    n,
                    0,
                    f"{n:,} values at the wrong scale set to missing, then imputed like other gaps",
                )
            )

    @staticmethod
    def _fix_labels(frame: pd.DataFrame, profile: DataProfile, repairs: list[RepairAction]) -> pd.DataFrame:
        for col in frame.columns:
            if profile.feature_types.get(col) not in ("categorical", "binary"):
                continue
            if pd.api.types.is_numeric_dtype(frame[col]):
                continue
            mapping = label_variants(frame[col])
            if not mapping:
                continue
            n_changed = int(frame[col].astype(str).isin(mapping).sum())
            before = int(frame[col].nunique())
            frame[col] = frame[col].where(frame[col].isna(), frame[col].astype(str).replace(mapping))
            repairs.append(
                _repair(
                    col,
                    "label spelling variants",
                    "unified case/space variants to the most frequent spelling",
                    before,
                    int(frame[col].nunique()),
                    f"{n_changed:,} values relabelled: "
                    + ", ".join(f"{k!r}->{v!r}" for k, v in list(mapping.items())[:5]),
                )
            )
        return frame

    @staticmethod
    def _drop_rows(
        frame: pd.DataFrame,
        treatment: str | None,
        outcome: str | None,
        params: Any,
        repairs: list[RepairAction],
        design: dict[str, str | None] | None = None,
    ) -> tuple[pd.DataFrame, DuplicateVerdict | None]:
        n = len(frame)
        dropped = None
        if params.drop_duplicates:
            dup = duplicate_rows(frame)
            verdict = duplicate_verdict(frame, dup)
            if verdict.drop:  # copies; repeats of all-discrete rows are kept (the profile says so)
                dropped = verdict
                frame = frame.loc[~dup]
                repairs.append(
                    _repair(
                        None,
                        "exact duplicate rows",
                        "dropped the repeats, kept the first",
                        n,
                        len(frame),
                        f"{n - len(frame):,} duplicate rows removed",
                    )
                )
        for role, col in (("treatment", treatment), ("outcome", outcome), *(design or {}).items()):
            if not col or col not in frame.columns:
                continue
            missing = frame[col].isna()
            if missing.any():
                before = len(frame)
                frame = frame.loc[~missing]
                repairs.append(
                    _repair(
                        col,
                        f"missing {role}",
                        f"dropped the rows (the {role} is never imputed)",
                        before,
                        len(frame),
                        f"{before - len(frame):,} rows without {'an' if role[0] in 'aeiou' else 'a'} {role} value removed",
                    )
                )
        if frame.empty:
            raise AgentError("no rows left after dropping duplicates and rows missing the treatment or outcome")
        return frame, dropped

    @staticmethod
    def _one_row_per_unit(
        frame: pd.DataFrame,
        treatment: str | None,
        outcome: str | None,
        design: Any,
        kept_whole: dict[str, str | None],
        repairs: list[RepairAction],
    ) -> pd.DataFrame:
        """One row per unit when the file writes each unit on several rows (whyflow.causal.dataprep.unit_rows)."""
        if not treatment or not outcome:
            return frame
        keep = tuple(c for c in kept_whole.values() if c)
        found = repeated_unit_rows(frame, treatment, outcome, keep, tuple(design.controls or ()))
        if found is None:
            return frame
        before = len(frame)
        frame = one_row_per_unit(frame, found)
        for column, issue, action, detail in found.records(before, len(frame)):
            repairs.append(_repair(column, issue, action, before, len(frame), detail))
        return frame

    @staticmethod
    def _drop_constants(
        frame: pd.DataFrame, treatment: str | None, outcome: str | None, repairs: list[RepairAction]
    ) -> pd.DataFrame:
        constants = [c for c in frame.columns if at_most_distinct(frame[c], 1)]
        for role, col in (("treatment", treatment), ("outcome", outcome)):
            if col in constants:
                raise AgentError(f"the {role} '{col}' takes a single value in the data: no effect can be estimated")
        for col in constants:
            n_cols = frame.shape[1]
            empty = not frame[col].notna().any()  # all-empty, not a column of one value: say which
            detail = "no value in any row" if empty else f"every row holds {fmt_value(frame[col].dropna().iloc[0])}"
            frame = frame.drop(columns=[col])
            repairs.append(
                _repair(
                    col,
                    "empty column" if empty else "constant column",
                    "dropped from the analysis",
                    n_cols,
                    frame.shape[1],
                    f"{detail}: no information (n_before/n_after count columns)",
                )
            )
        return frame

    @staticmethod
    def _impute(
        frame: pd.DataFrame, profile: DataProfile, protected: set, threshold: float, repairs: list[RepairAction]
    ) -> pd.DataFrame:
        frame = frame.copy(deep=False)  # copy-on-write: columns are replaced, never written into
        n = len(frame)
        for col in list(frame.columns):
            kind = profile.feature_types.get(col, "categorical")
            missing = frame[col].isna()
            n_missing = int(missing.sum())
            if not n_missing or col in protected or kind in ("id", "datetime", "text"):
                continue
            numeric = pd.api.types.is_numeric_dtype(frame[col]) and kind == "numeric"  # ordinal: the mode
            fill = frame[col].median() if numeric else frame[col].mode(dropna=True).iloc[0]
            share = n_missing / n
            if share > threshold:
                frame[f"{col}_missing"] = missing.astype("int8")
            frame[col] = frame[col].fillna(fill)
            method = "median" if numeric else "most frequent value"
            indicator = f"; indicator {col}_missing added ({share:.1%} missing)" if share > threshold else ""
            repairs.append(
                _repair(
                    col,
                    "missing values",
                    f"imputed with the {method} ({fmt_value(fill)}){indicator}",
                    n_missing,
                    int(frame[col].isna().sum()),
                    f"{n_missing:,} of {n:,} values ({share:.1%}) imputed",
                )
            )
        return frame
