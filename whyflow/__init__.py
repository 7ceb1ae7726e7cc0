"""whyflow: ask a tabular dataset a question and get an answer you can check.

The package's layers, bottom to top (``docs/architecture.md``; import contracts in
``pyproject.toml`` keep them one-way): :mod:`whyflow.core` (the agent contract and job lifecycle),
:mod:`whyflow.runtime` (data, the model client, the sandbox), the two families
:mod:`whyflow.causal` and :mod:`whyflow.ask`, their composition (:mod:`whyflow.registry`,
:mod:`whyflow.states`), the orchestration (:mod:`whyflow.flows`) and the entry points
(:mod:`whyflow.cli`, :mod:`whyflow.web`, :mod:`whyflow.deployments`). The shipped recipes are
package data under ``whyflow/recipes/`` (:mod:`whyflow.flows.recipes.builtin` finds them by name).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("whyflow")
except PackageNotFoundError:  # a checkout on sys.path without an install
    __version__ = "0+unknown"

__all__ = ["__version__"]
