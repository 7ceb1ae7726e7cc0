"""The view an analysis agent gets, as the type checker sees it: every field of
:class:`~whyflow.causal.state.AnalysisState` with its type.

At run time ``AnalysisView`` is :class:`whyflow.core.view.StateView` itself: a deep copy that raises on
a field the agent did not declare and on any assignment. For the type checker it is the state
model plus the view's pair helpers, so ``view.ps_diagnostics.overlap_ok`` is checked like any
attribute. Only the fields and the helpers below may be used; the model's own methods are not
part of the view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from whyflow.causal.state import AnalysisState
from whyflow.core.view import Pair, StateView

__all__ = ["AnalysisView"]

if TYPE_CHECKING:

    class AnalysisView(AnalysisState):
        """The fields of :class:`AnalysisState`, read through a :class:`StateView`."""

        def pair(self, purpose: str = "") -> Pair: ...

        def maybe_pair(self) -> Pair | None: ...

else:
    AnalysisView = StateView
