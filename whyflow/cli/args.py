"""Helpers the `whyflow` command handlers share: command-line values into the objects they mean.

They live apart from :mod:`whyflow.cli.main` (the parser and the dispatch) so that the handlers in
:mod:`whyflow.cli.commands`, :mod:`whyflow.cli.ask` and :mod:`whyflow.deployments` use them without importing
the module that imports them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from whyflow.causal.state import StudyDesign
from whyflow.core.errors import WhyflowError

__all__ = [
    "BadOptions",
    "add_specification_options",
    "specification_from_args",
    "design_from_args",
    "overrides_from_args",
    "prepare_environment",
    "resolve_path",
]


def prepare_environment(verbose: bool = False) -> None:
    """Quiet, offline-friendly defaults for Prefect and the notebook stack (user settings win)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO" if verbose else "WARNING")
    os.environ.setdefault("PREFECT_LOGGING_LOG_PRINTS", "false")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # The first ephemeral start creates Prefect's database; on a busy 2-core machine that
    # can take longer than Prefect's 20 s default.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    if not verbose:
        # Libraries that log warnings for every estimate (dowhy) or every figure (traitlets):
        # their findings reach the user through the agents' summaries and traces instead.
        import logging

        for name in ("dowhy", "traitlets", "causalml", "py.warnings"):
            logging.getLogger(name).setLevel(logging.ERROR)


class BadOptions(WhyflowError):
    """Command-line options that are malformed or contradict each other: one line, exit 2, before any job exists."""


def overrides_from_args(items: Sequence[str] | None) -> dict[str, str]:
    """The ``--set KEY=VALUE`` options as a dict (a malformed one ends the command)."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadOptions(f"--set expects KEY=VALUE, got '{item}'")
        out[key.strip()] = value.strip()
    return out


def design_from_args(args: Any) -> StudyDesign:
    """The study-design facts given on the command line."""
    if (args.running_variable is None) != (args.cutoff is None):
        raise BadOptions("--running-variable and --cutoff go together")
    fuzzy = bool(getattr(args, "fuzzy", False))
    if fuzzy and args.running_variable is None:
        raise BadOptions("--fuzzy is a regression discontinuity's form: give it with --running-variable and --cutoff")
    if (args.unit is None) != (args.time is None):
        raise BadOptions("--unit and --time go together")
    group, period = getattr(args, "group", None), getattr(args, "period", None)
    if (group is None) != (period is None):
        raise BadOptions("--group and --period go together")
    if group is not None and args.unit is not None:
        raise BadOptions(
            "give --unit/--time (a panel of units followed over time) or --group/--period "
            "(a repeated cross-section), not both"
        )
    instruments = [c.strip() for c in args.instrument.split(",")] if args.instrument else []
    if any(not c for c in instruments) or len(set(instruments)) < len(instruments):
        raise BadOptions(f"--instrument expects COLUMN or COLUMN,COLUMN,..., got '{args.instrument}'")
    return StudyDesign(
        estimand=args.estimand,
        instrument=instruments[0] if instruments else None,
        extra_instruments=instruments[1:],
        running_variable=args.running_variable,
        cutoff=args.cutoff,
        fuzzy=fuzzy,
        unit_column=args.unit or group,
        time_column=args.time or period,
        repeated_cross_section=group is not None,
        **specification_from_args(args),
    )


# ---- the analyst's specification: --controls, --cluster, --where ---------------------------------


def add_specification_options(parser: Any) -> None:
    """``--controls``, ``--cluster`` and ``--where``: the analyst's specification, kept as stated."""
    parser.add_argument(
        "--controls",
        metavar="A,B,C",
        help="adjust for exactly these columns in every estimator ('none' or '': no controls); the recipe's own "
        "choice is computed and shown beside them, never used instead",
    )
    parser.add_argument("--cluster", metavar="COL", help="cluster-robust standard errors on this column")
    parser.add_argument(
        "--where",
        metavar="EXPR",
        help="analyse a subgroup, e.g. \"age >= 18 and region == 'north'\" (columns, values, comparisons, "
        "in [...], and/or/not; `odd name` in backticks)",
    )


def specification_from_args(args: Any) -> dict[str, Any]:
    """The StudyDesign fields of ``--controls``, ``--cluster`` and ``--where`` (unreadable ones raise a DataError)."""
    from whyflow.causal.specification import controls_from_text, where_from_text

    return {
        "controls": controls_from_text(getattr(args, "controls", None)),
        "cluster": getattr(args, "cluster", None),
        "where": where_from_text(getattr(args, "where", None)),
    }


def resolve_path(text: str) -> str:
    """An absolute path for local files; URLs unchanged."""
    from whyflow.flows.jobstore.jobs import is_url
    from whyflow.runtime.object_store import is_object_url
    from whyflow.runtime.sources import is_sql_url

    if is_url(text) or is_sql_url(text) or is_object_url(text):
        return text
    return str(Path(text).expanduser().resolve())


def add_source_options(parser: Any, rows_are: str) -> None:
    """``--table`` / ``--query`` (one of them) for a database ``--data``; ``rows_are`` says what its rows are for."""
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--table", help=f"the table (or view, SCHEMA.NAME) of a database --data whose rows {rows_are}")
    what.add_argument("--query", help=f"a SELECT on a database --data whose rows {rows_are}")
