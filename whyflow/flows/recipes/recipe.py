"""Recipe specs: frozen, typed models that mirror the YAML exactly (phase one of two).

A recipe is parsed strictly (:mod:`whyflow.flows.recipes.yamlload`), ``--set`` overrides are applied to the
raw document, and the result is validated into :class:`RecipeSpec`. Unknown keys are errors.
Resolving the spec against the agent registry happens in :mod:`whyflow.flows.recipes.plan`.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError

from whyflow.flows.errors import RecipeIssue, RecipeValidationError
from whyflow.flows.recipes.builtin import find_recipe
from whyflow.flows.recipes.yamlload import LocDict, LocList, load_yaml, locate

__all__ = [
    "AgentStepSpec",
    "CritiqueLoopSpec",
    "CritiqueLoopStepSpec",
    "LLMSettings",
    "LoopSpec",
    "LoopStepSpec",
    "ParallelStepSpec",
    "RecipeSpec",
    "Settings",
    "DriftThresholds",
    "load_recipe",
    "apply_overrides",
    "issues_from_validation_error",
    "step_label",
]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class LLMSettings(_Spec):
    """An optional OpenAI-compatible model for the agents' LLM modes (off unless enabled).

    Environment variables override these (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
    ``WHYFLOW_LLM=on|off``, ``WHYFLOW_LLM_MODEL``, ...), and ``whyflow run --llm on|off``
    overrides both; see :mod:`whyflow.runtime.llm.config`. Every agent also works without it.
    """

    enabled: bool = False
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    model: str | None = Field(None, description="model name; without one, the first model the endpoint lists")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable that holds the API key")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    timeout_s: float = Field(60.0, gt=0, description="seconds per request before it counts as timed out")
    max_retries: int = Field(2, ge=0, description="retries on timeouts, 429 and 5xx, with exponential backoff")
    max_tokens_per_run: int = Field(50_000, ge=0, description="token budget of one run; 0 = no model calls")
    cache: bool = Field(True, description="cache replies in the job folder so resume and re-runs never ask twice")


class DriftThresholds(_Spec):
    """When a rerun on refreshed data should flag that the answer moved."""

    estimate_change: float = Field(0.25, ge=0, description="relative change of the headline estimate")
    quality_drop: float = Field(10.0, ge=0, description="drop of the data quality score, in points")


class Settings(_Spec):
    """Run-wide settings of a recipe."""

    max_iterations: int = Field(3, ge=1, description="default critique rounds for critique loops")
    task_runner: Literal["threads", "dask", "sequential"] = "threads"
    dask_address: str | None = Field(None, description="scheduler address of an existing Dask cluster")
    max_workers: int | None = Field(None, ge=1)
    retries: int = Field(0, ge=0, description="Prefect task retries for every agent")
    retry_delay_seconds: float = Field(0.0, ge=0)
    seed: int = 0
    llm: LLMSettings = LLMSettings()
    drift: DriftThresholds = DriftThresholds()


class AgentStepSpec(_Spec):
    """One agent, its ``with:`` parameters and optional narrowed reads/writes."""

    agent: str
    name: str | None = Field(None, description="step name, needed when an agent appears twice")
    with_: dict[str, Any] = Field(default_factory=dict, alias="with")
    reads: tuple[str, ...] | None = None
    writes: tuple[str, ...] | None = None
    retries: int | None = Field(None, ge=0)
    when: str | None = Field(None, description="run the step only if this condition on the state holds")

    @property
    def key(self) -> str:
        """The step's unique name within the recipe."""
        return self.name or self.agent


class ParallelStepSpec(_Spec):
    """Agents that run concurrently on independent views of the same state."""

    parallel: tuple[AgentStepSpec, ...] = Field(min_length=2)


def _inner_kind(value: Any) -> str | None:
    if isinstance(value, AgentStepSpec):
        return "agent"
    if isinstance(value, ParallelStepSpec):
        return "parallel"
    if isinstance(value, dict):
        for kind in ("agent", "parallel"):
            if kind in value:
                return kind
    return None


def _step_kind(value: Any) -> str | None:
    if isinstance(value, CritiqueLoopStepSpec):
        return "critique_loop"
    if isinstance(value, LoopStepSpec):
        return "loop"
    if isinstance(value, dict):
        for kind in ("critique_loop", "loop"):
            if kind in value:
                return kind
    return _inner_kind(value)


InnerStep = Annotated[
    Annotated[AgentStepSpec, Tag("agent")] | Annotated[ParallelStepSpec, Tag("parallel")],
    Discriminator(
        _inner_kind,
        custom_error_type="invalid_step",
        custom_error_message="a step inside a critique loop needs 'agent' or 'parallel' (loops do not nest)",
    ),
]


class CritiqueLoopSpec(_Spec):
    """Steps repeated until the critique approves, rejects, or the round limit is reached."""

    max_iterations: int | None = Field(None, ge=1)
    steps: tuple[InnerStep, ...] = Field(min_length=1)


class CritiqueLoopStepSpec(_Spec):
    """A ``critique_loop:`` step."""

    critique_loop: CritiqueLoopSpec


class LoopSpec(_Spec):
    """Steps repeated until a condition on the state holds, at most ``max_iterations`` rounds.

    When the rounds run out with the condition still false, the ``on_exhausted`` step runs and
    the run ends there (the ask recipe's ``error_reporter``); without one the recipe goes on. A
    critique loop is this loop with ``until: critique_history[-1].decision != "ITERATE"``.
    """

    until: str = Field(description="exit condition, checked after each round (e.g. execution_success)")
    max_iterations: int | None = Field(None, ge=1)
    steps: tuple[InnerStep, ...] = Field(min_length=1)
    on_exhausted: AgentStepSpec | None = None
    when: str | None = Field(None, description="run the loop only if this condition on the state holds")


class LoopStepSpec(_Spec):
    """A ``loop:`` step."""

    loop: LoopSpec


Step = Annotated[
    Annotated[AgentStepSpec, Tag("agent")]
    | Annotated[ParallelStepSpec, Tag("parallel")]
    | Annotated[CritiqueLoopStepSpec, Tag("critique_loop")]
    | Annotated[LoopStepSpec, Tag("loop")],
    Discriminator(
        _step_kind,
        custom_error_type="invalid_step",
        custom_error_message="a step needs one of 'agent', 'parallel', 'loop' or 'critique_loop'",
    ),
]


class RecipeSpec(_Spec):
    """A recipe exactly as written: which agents run, in what shape, with which options."""

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_\-]*$")
    description: str = ""
    inputs: tuple[str, ...] = ("dataset_info", "treatment_variable", "outcome_variable")
    state: Literal["analysis", "ask"] = Field(
        "analysis", description="the state model the recipe runs on: a causal analysis, or a question (ask)"
    )
    settings: Settings = Settings()
    steps: tuple[Step, ...] = Field(min_length=1)


# ---- errors in the user's terms ---------------------------------------------------------------
_TAGS = {"agent", "parallel", "critique_loop", "loop"}


def step_label(document: Any, loc: tuple[Any, ...]) -> str:
    """Name the step that ``loc`` points into as the user wrote it, e.g. ``step 'critique'``."""
    node, label = document, ""
    for part in loc:
        if isinstance(node, LocDict) and part in node:
            node = node[part]
        elif isinstance(node, LocList) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            continue
        if isinstance(node, dict):
            if "agent" in node and isinstance(node["agent"], str):
                label = f"step '{node.get('name') or node['agent']}'"
            elif "critique_loop" in node:
                label = "step 'critique_loop'"
            elif "loop" in node:
                label = "step 'loop'"
            elif "parallel" in node:
                label = "parallel group"
    return label


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop pydantic's union tags (a tag directly follows a list index)."""
    out: list[Any] = []
    for i, part in enumerate(loc):
        if part in _TAGS and i > 0 and isinstance(loc[i - 1], int):
            continue
        out.append(part)
    return tuple(out)


def _where(error: dict[str, Any], field: str) -> str:
    """The field, with the list position when the error is about one item (``flip_probabilities[1]``)."""
    loc = _clean_loc(tuple(error["loc"]))
    if loc and isinstance(loc[-1], int) and field:
        return f"{field}[{loc[-1]}]"
    return field


def _message(error: dict[str, Any], model_fields: list[str]) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    field = next((str(p) for p in reversed(_clean_loc(tuple(error["loc"]))) if isinstance(p, str)), "")
    if kind == "extra_forbidden":
        close = difflib.get_close_matches(field, model_fields, n=1)
        return f"{field}: unknown key" + (f" (did you mean '{close[0]}'?)" if close else "")
    if kind == "missing":
        return f"{field}: required key is missing"
    bounds = {
        "greater_than_equal": ("≥", "ge"),
        "greater_than": (">", "gt"),
        "less_than_equal": ("≤", "le"),
        "less_than": ("<", "lt"),
    }
    if kind in bounds:
        sign, key = bounds[kind]
        return f"{_where(error, field)}: must be {sign} {ctx.get(key)} (got {error.get('input')!r})"
    if kind == "too_short":
        return f"{field}: needs at least {ctx.get('min_length')} item(s)"
    if kind == "literal_error":
        return f"{field}: must be one of {ctx.get('expected')} (got {error.get('input')!r})"
    return f"{field}: {error['msg']}" if field else error["msg"]


_ALL_KEYS = sorted(
    {
        *RecipeSpec.model_fields,
        *Settings.model_fields,
        *LLMSettings.model_fields,
        *DriftThresholds.model_fields,
        *AgentStepSpec.model_fields,
        "with",
        "parallel",
        "critique_loop",
        *CritiqueLoopSpec.model_fields,
        "loop",
        *LoopSpec.model_fields,
    }
)


def issues_from_validation_error(
    path: str, document: Any, exc: ValidationError, prefix: tuple[Any, ...] = (), known: list[str] | None = None
) -> list[RecipeIssue]:
    """Turn pydantic's errors into located :class:`RecipeIssue` objects."""
    issues = []
    for error in exc.errors():
        loc = _clean_loc(prefix + tuple(error["loc"]))
        pos = locate(document, loc)
        where = step_label(document, loc)
        issues.append(
            RecipeIssue(
                path, pos[0] if pos else None, pos[1] if pos else None, where, _message(dict(error), known or _ALL_KEYS)
            )
        )
    return issues


# ---- loading ----------------------------------------------------------------------------------
_SETTING_KEYS = set(Settings.model_fields)


def apply_overrides(document: Any, overrides: dict[str, str], path: str) -> None:
    """Apply ``--set key=value`` overrides to the raw document in place.

    ``key`` is a setting (``max_iterations=2``, ``task_runner=dask``) or ``STEP.PARAM`` where
    STEP is a step name or agent name (``causal_discovery.method=ges``). Values are parsed as
    YAML scalars, so ``2`` is an int and ``true`` a bool.
    """
    issues = []
    for key, raw in overrides.items():
        value = yaml.safe_load(raw) if raw != "" else ""
        if key in _SETTING_KEYS:
            document.setdefault("settings", LocDict())[key] = value
            continue
        step_key, _, param = key.partition(".")
        steps = [
            s for s in _iter_agent_steps(document.get("steps") or []) if step_key in (s.get("name"), s.get("agent"))
        ]
        if not param or not steps:
            names = sorted(
                {str(s.get("name") or s.get("agent")) for s in _iter_agent_steps(document.get("steps") or [])}
            )
            close = difflib.get_close_matches(step_key, names + sorted(_SETTING_KEYS), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            issues.append(
                RecipeIssue(path, None, None, f"--set {key}", f"not a setting or STEP.PARAM of this recipe{hint}")
            )
            continue
        for step in steps:
            step.setdefault("with", LocDict())[param] = value
    if issues:
        raise RecipeValidationError(path, issues)


def _iter_agent_steps(steps: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for step in steps:
        if not isinstance(step, dict):
            continue
        if "agent" in step:
            out.append(step)
        elif isinstance(step.get("parallel"), list):
            out.extend(_iter_agent_steps(step["parallel"]))
        elif isinstance(step.get("critique_loop"), dict):
            out.extend(_iter_agent_steps(step["critique_loop"].get("steps") or []))
        elif isinstance(step.get("loop"), dict):
            body = step["loop"]
            exhausted = [body["on_exhausted"]] if isinstance(body.get("on_exhausted"), dict) else []
            out.extend(_iter_agent_steps([*(body.get("steps") or []), *exhausted]))
    return out


def load_recipe(path: str | Path, overrides: dict[str, str] | None = None) -> tuple[RecipeSpec, Any]:
    """Load and validate a recipe (a file, or a built-in recipe by name); return the spec and the raw,
    position-carrying document."""
    path = find_recipe(path)
    p = str(path)
    document = load_yaml(path)
    if not isinstance(document, LocDict):
        raise RecipeValidationError(
            p, [RecipeIssue(p, 1, 1, "", "a recipe must be a YAML mapping with 'name' and 'steps'")]
        )
    if overrides:
        apply_overrides(document, overrides, p)
    try:
        spec = RecipeSpec.model_validate(document)
    except ValidationError as exc:
        error = RecipeValidationError(p, issues_from_validation_error(p, document, exc))
        error.document = document
        raise error from exc
    return spec, document
