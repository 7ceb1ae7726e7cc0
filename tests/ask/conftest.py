"""Generated data with a known truth for the ask tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="session")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """300 orders: region (4 levels), year (3), price with region-specific means, and quantity."""
    rng = np.random.default_rng(11)
    n = 300
    region = rng.choice(["north", "south", "east", "west"], size=n)
    base = {"north": 20.0, "south": 35.0, "east": 50.0, "west": 65.0}
    price = np.array([base[r] for r in region]) + rng.normal(0, 4, size=n)
    frame = pd.DataFrame(
        {
            "region": region,
            "year": rng.choice([2021, 2022, 2023], size=n),
            "price": price.round(2),
            "quantity": rng.integers(1, 10, size=n),
        }
    )
    path = tmp_path_factory.mktemp("shop") / "orders.csv"
    frame.to_csv(path, index=False)
    return path, frame
