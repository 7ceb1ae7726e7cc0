"""The bad-input battery's fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bad_inputs.common import study


@pytest.fixture(scope="module")
def good_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("good") / "study.csv"
    study().to_csv(path, index=False)
    return path
