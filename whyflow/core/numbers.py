"""The one number formatter for sentences, the terminal summary and the notebook."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["fmt_number"]


def fmt_number(value: Any, digits: int = 3) -> str:
    """A number for prose: thousands separators at 1,000 and above, else about ``digits`` significant digits.

    ``1386.7`` -> ``1,387``; ``2.5`` -> ``2.50``; ``0.001234`` -> ``0.00123``; ``0`` -> ``0``;
    ``None`` -> ``n/a``; NaN and infinities as Python writes them; anything else as ``str``.
    """
    if value is None:
        return "n/a"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return f"{x:,.{decimals}f}"
