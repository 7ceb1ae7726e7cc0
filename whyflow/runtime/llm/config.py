"""The LLM configuration as a run sees it: the recipe's ``llm:`` block, then the environment.

Precedence, lowest first: the recipe (``settings.llm``), ``OPENAI_BASE_URL`` /
``OPENAI_API_KEY``, whyflow's own ``WHYFLOW_LLM_*`` variables, and ``WHYFLOW_LLM=on|off``
(which ``whyflow run --llm on|off`` sets). The model is off unless one of them turns it on:
an ``OPENAI_API_KEY`` in the environment alone never makes a run call a model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["LLMConfig", "resolve_config", "SWITCH_ENV", "parse_switch"]

SWITCH_ENV = "WHYFLOW_LLM"
"""``on`` / ``off``: the run-wide switch (``whyflow run --llm on|off`` sets it)."""

_ENV_FIELDS: dict[str, tuple[str, type]] = {
    "base_url": ("WHYFLOW_LLM_BASE_URL", str),
    "model": ("WHYFLOW_LLM_MODEL", str),
    "temperature": ("WHYFLOW_LLM_TEMPERATURE", float),
    "timeout_s": ("WHYFLOW_LLM_TIMEOUT_S", float),
    "max_retries": ("WHYFLOW_LLM_MAX_RETRIES", int),
    "max_tokens_per_run": ("WHYFLOW_LLM_MAX_TOKENS_PER_RUN", int),
    "cache": ("WHYFLOW_LLM_CACHE", bool),
}


def parse_switch(text: str | None) -> bool | None:
    """``on``/``true``/``1`` → True, ``off``/``false``/``0`` → False, empty → None."""
    if text is None or not text.strip():
        return None
    value = text.strip().lower()
    if value in ("on", "true", "1", "yes"):
        return True
    if value in ("off", "false", "0", "no"):
        return False
    raise ValueError(f"expected on or off, got {text!r}")


@dataclass(frozen=True)
class LLMConfig:
    """Everything the client needs; ``api_key`` is never printed or written to a trace."""

    enabled: bool = False
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    api_key: str = field(default="not-needed", repr=False)
    temperature: float = 0.0
    timeout_s: float = 60.0
    max_retries: int = 2
    max_tokens_per_run: int = 50_000
    cache: bool = True
    sources: tuple[str, ...] = ()
    """Where the settings came from (``recipe``, ``OPENAI_BASE_URL``, ``--llm``...), for ``llm check``."""

    @property
    def endpoint(self) -> str:
        """The base URL requests go to (the official client's default when none is set)."""
        return self.base_url or "https://api.openai.com/v1"

    def public(self) -> dict[str, Any]:
        """The configuration without the key, for traces and ``whyflow llm check``."""
        return {
            "enabled": self.enabled,
            "base_url": self.endpoint,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "api_key_set": self.api_key != "not-needed",
            "temperature": self.temperature,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "max_tokens_per_run": self.max_tokens_per_run,
            "cache": self.cache,
            "sources": list(self.sources),
        }


def _as_mapping(settings: Any) -> dict[str, Any]:
    if settings is None:
        return {}
    if isinstance(settings, Mapping):
        return dict(settings)
    dump = getattr(settings, "model_dump", None)
    return dict(dump()) if callable(dump) else dict(vars(settings))


def _convert(raw: str, kind: type, name: str) -> Any:
    try:
        if kind is bool:
            value = parse_switch(raw)
            if value is None:
                raise ValueError("empty")
            return value
        return kind(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r}: not a valid {kind.__name__}") from exc


def resolve_config(settings: Any = None, env: Mapping[str, str] | None = None, switch: bool | None = None) -> LLMConfig:
    """Combine the recipe's ``llm:`` block, the environment and an explicit on/off switch.

    Raises ValueError naming the variable when an environment value cannot be read.
    """
    env = os.environ if env is None else env
    raw = _as_mapping(settings)
    known = {f for f in LLMConfig.__dataclass_fields__ if f not in ("api_key", "sources")}
    cfg = LLMConfig(**{k: v for k, v in raw.items() if k in known})
    sources = ["recipe"] if raw.get("enabled") else []
    updates: dict[str, Any] = {}
    if env.get("OPENAI_BASE_URL"):
        updates["base_url"] = env["OPENAI_BASE_URL"]
        sources.append("OPENAI_BASE_URL")
    for name, (var, kind) in _ENV_FIELDS.items():
        if env.get(var, "").strip():
            updates[name] = _convert(env[var].strip(), kind, var)
            sources.append(var)
    key = env.get("WHYFLOW_LLM_API_KEY") or env.get(cfg.api_key_env) or env.get("OPENAI_API_KEY")
    if key:
        updates["api_key"] = key
    env_switch = parse_switch(env.get(SWITCH_ENV))
    if env_switch is not None:
        updates["enabled"] = env_switch
        sources.append(f"{SWITCH_ENV}={'on' if env_switch else 'off'}")
    if switch is not None:
        updates["enabled"] = switch
        sources.append(f"--llm {'on' if switch else 'off'}")
    return replace(cfg, **updates, sources=tuple(sources))
