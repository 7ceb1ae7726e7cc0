"""Creating a job: fetch and check the data, fingerprint it, write the first state.

Everything the user can get wrong about the input (a missing file, a wrong column, an empty or
malformed CSV, a constant treatment) is caught here with a one-line reason, before Prefect or
any agent starts. The user's file is only read.
"""

from __future__ import annotations

import hashlib
import shutil
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from whyflow.causal.specification import check_specification
from whyflow.causal.state import AnalysisState, DatasetInfo, StudyDesign
from whyflow.core.errors import DataError
from whyflow.core.job import utcnow
from whyflow.flows.jobstore.store import JobFolder, JobStore, new_job_id
from whyflow.flows.recipes.metadata import state_metadata
from whyflow.flows.recipes.nodes import Plan
from whyflow.runtime.data import check_columns, describe_read, hand_over, read_table, write_parquet
from whyflow.runtime.object_store import fetch, is_object_url, probe
from whyflow.runtime.sources import SqlSource, content_sha256, is_sql_url, read_sql_source

__all__ = ["RunRequest", "prepare_job", "fingerprint", "is_url"]


@dataclass(frozen=True)
class RunRequest:
    """What the user asked for: recipe, data, question and options."""

    recipe: str
    data: str
    treatment: str | None = None
    outcome: str | None = None
    output: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    design: StudyDesign = field(default_factory=StudyDesign)
    metadata: str | None = None
    job_id: str | None = None
    runs_dir: str | None = None
    table: str | None = None
    query: str | None = None


def is_url(text: str) -> bool:
    """Whether ``text`` is an http(s) URL."""
    return urllib.parse.urlparse(text).scheme in ("http", "https")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _download(url: str, folder: Path) -> Path:
    name = Path(urllib.parse.urlparse(url).path).name or "data.csv"
    target = folder / "data" / f"source-{name}"
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=60) as response, target.open("wb") as fh:  # noqa: S310 - http(s) only
            shutil.copyfileobj(response, fh)
    except OSError as exc:
        raise DataError(f"cannot download {url}: {exc}") from exc
    return target


def fingerprint(path: Path, frame: Any) -> dict[str, Any]:
    """The dataset's identity: content hash, shape and schema."""
    return {
        "sha256": _sha256(path),
        "rows": int(frame.shape[0]),
        "columns": int(frame.shape[1]),
        "schema": {str(c): str(t) for c, t in frame.dtypes.items()},
    }


def show(value: Any) -> str:
    """A value as the user wrote it: ``1`` not ``np.int64(1)``, text in quotes."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"'{value}'" if isinstance(value, str) else str(value)


def _levels(values: Any, limit: int = 5) -> str:
    shown = [show(v) for v in list(dict.fromkeys(values.tolist()))[:limit]]
    return ", ".join(shown) + (", ..." if values.nunique() > limit else "")


def _is_text(values: Any) -> bool:
    import pandas as pd

    from whyflow.causal.dataprep.profiling import parse_numeric_text

    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return False
    return parse_numeric_text(values) is None


def _is_identifier(name: str, values: Any) -> bool:
    from whyflow.causal.dataprep.column_names import keyword_tokens

    ids = {"id", "uuid", "guid", "identifier", "key", "index", "rowid"}
    return len(values) > 20 and values.nunique() == len(values) and bool(keyword_tokens(name) & ids)


def _check_treatment(frame: Any, treatment: str | None, outcome: str | None) -> None:
    """Bad-input checks of the question's columns, before any agent runs (one sentence each)."""
    import numpy as np
    import pandas as pd

    for role, col in (("treatment", treatment), ("outcome", outcome)):
        if col is None:
            continue
        values = frame[col].dropna()
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            values = values[np.isfinite(values.to_numpy(dtype="float64"))]
        if values.empty:
            raise DataError(f"{role} column '{col}' has no values (all missing)")
        if values.nunique() < 2:
            raise DataError(
                f"{role} column '{col}' is constant ({show(values.iloc[0])} in every row): "
                f"there is no variation to estimate an effect from"
            )
        if pd.api.types.is_datetime64_any_dtype(values):
            raise DataError(f"{role} column '{col}' holds dates: give a number or a 0/1 group as the {role}")
        if _is_identifier(col, values):
            raise DataError(
                f"{role} column '{col}' looks like an identifier (a different value in every row, "
                f"and its name says id): pass the column that holds the {role}"
            )
    if treatment is not None and treatment == outcome:
        raise DataError(f"treatment and outcome are the same column '{treatment}'")
    if treatment is not None:
        values = frame[treatment].dropna()
        if _is_text(values) and values.nunique() > 2:
            raise DataError(
                f"treatment column '{treatment}' has {values.nunique()} text levels ({_levels(values)}): "
                f"whyflow compares two groups; add a 0/1 column for the contrast you mean and pass it with --treatment"
            )
    if outcome is not None:
        values = frame[outcome].dropna()
        if _is_text(values):
            raise DataError(
                f"outcome column '{outcome}' holds text ({_levels(values)}), not numbers: code it as numbers "
                f"(for ordered labels e.g. 0, 1, 2 in their order; for two labels 0/1) and pass that column"
            )


def _check_question(frame: Any, request: RunRequest, shown: str) -> None:
    design = request.design
    check_columns(
        frame,
        {
            "treatment": request.treatment,
            "outcome": request.outcome,
            "instrument": design.instrument,
            "running variable": design.running_variable,
            "group" if design.repeated_cross_section else "unit": design.unit_column,
            "period" if design.repeated_cross_section else "time": design.time_column,
        },
        shown,
    )
    check_specification(frame, design, request.treatment, request.outcome, shown)
    for extra in design.extra_instruments:
        check_columns(frame, {"instrument": extra}, shown)
    _check_treatment(frame, request.treatment, request.outcome)


SNAPSHOT = "data/snapshot.parquet"
"""Where a job keeps the rows it read from a database: the run, a resume and the notebook read them there."""


def _sql_source(request: RunRequest) -> SqlSource | None:
    if is_sql_url(request.data):
        return SqlSource(request.data, request.table, request.query)
    if request.table or request.query:
        raise DataError(
            f"--table and --query name what to read from a database URL (sqlite:///FILE, duckdb:///FILE, "
            f"postgresql://USER@HOST/DB), and {request.data} is not one"
        )
    return None


def _snapshot(frame: Any, folder: JobFolder) -> Path:
    """The rows read from a database, written once into the job folder; the folder is removed if that fails."""
    target = folder.path / SNAPSHOT
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        return write_parquet(frame, target)
    except BaseException:
        shutil.rmtree(folder.path, ignore_errors=True)  # nothing half-written: no job without its data
        raise


def prepare_job(request: RunRequest, plan: Plan) -> JobFolder:
    """Check the data and create the job folder with its first state, ``run.json`` and recipe copy.

    Rows read from a database are kept in the job folder (:data:`SNAPSHOT`) with their
    fingerprint (the source without its password, the table or query, the row count, a hash
    of the content, the database's version), so a resume and the notebook analyse the rows this
    run read, whatever the table holds by then.
    """
    store = JobStore(request.runs_dir)
    job_id = request.job_id or new_job_id()
    source = _sql_source(request)
    shown = source.shown if source is not None else request.data
    stored = is_object_url(request.data)
    remote = is_url(request.data) or source is not None or stored
    local: Path | None = None if remote else Path(request.data)
    metadata = state_metadata(request.metadata) if request.metadata else None
    identity: dict[str, Any] = {}
    if source is not None:
        frame, identity = read_sql_source(source)  # raises SourceError before any folder is made
        _check_question(frame, request, source.describe())
    elif stored:
        identity = probe(request.data)  # a missing object or bucket, no permission: before any folder
    elif local is not None:
        frame = read_table(local)  # raises DataError before any folder is made
        _check_question(frame, request, shown)
    folder = store.create(job_id, request.output)
    if source is not None:
        local = _snapshot(frame, folder)
        frame = read_table(local)
    elif local is None:
        try:  # the object or download copied into the job folder; a failed copy or bad content removes the folder
            local = fetch(request.data, folder.path / "data") if stored else _download(request.data, folder.path)
            frame = read_table(local)
            _check_question(frame, request, shown)
        except BaseException:
            shutil.rmtree(folder.path, ignore_errors=True)
            raise
    design = request.design
    if request.metadata:
        design = design.model_copy(update={"metadata_path": str(Path(request.metadata).resolve())})
    prints = fingerprint(local, frame)
    if stored:
        prints.update(identity)
    if source is not None:  # the rows' digest identifies the data (a drift check compares it), not the file's
        rows_digest = content_sha256(frame)
        prints.update(identity, content_sha256=rows_digest, snapshot_sha256=prints["sha256"], sha256=rows_digest)
    name = (source.table or "query") if source is not None else Path(urllib.parse.urlparse(shown).path).stem
    state = AnalysisState(
        job_id=job_id,
        dataset_info=DatasetInfo(
            url=shown,
            name=name or None,
            local_path=str(local.resolve()),
            n_samples=prints["rows"],
            n_features=prints["columns"],
        ),
        treatment_variable=request.treatment,
        outcome_variable=request.outcome,
        raw_metadata=metadata,
        design=design,
        max_iterations=plan.settings.max_iterations,
    )
    shutil.copyfile(plan.source, folder.recipe_path)
    asked = {k: v for k, v in asdict(request).items() if k != "design"}
    folder.write_run(
        {
            "job_id": job_id,
            "recipe": str(Path(plan.source).resolve()),
            "recipe_name": plan.name,
            "data": source.name if source is not None else shown,  # a table's runs make its history
            "data_local_path": str(local.resolve()),
            "data_sha256": prints["sha256"],
            "fingerprint": prints,
            "treatment": request.treatment,
            "outcome": request.outcome,
            "overrides": dict(request.overrides),
            "design": design.model_dump(),
            "metadata": request.metadata,
            "seed": plan.settings.seed,
            "created_at": utcnow().isoformat(),
            "read_note": describe_read(frame),
            "request": {**asked, "data": shown},
        }
    )
    folder.attach(state)
    folder.save(state)
    hand_over(local, frame)  # the data profiler, the run's first step, reads the same file
    return folder
