"""`whyflow doctor` names the active sandbox layers and warns when only limits are left."""

from __future__ import annotations

import io

import pytest

from whyflow.cli.main import main
from whyflow.runtime.sandbox.doctor import doctor
from whyflow.runtime.sandbox.probe import probe


def test_doctor_lists_layers_of_a_real_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "trial run: ok" in out
    assert "warm run: ok" in out or "warm run: not available here" in out
    assert "active layers: rlimits, scrubbed-env, scratch-dir" in out
    caps = probe()
    if caps.bwrap:
        assert "bwrap" in out.split("active layers:")[1]
    if caps.landlock_abi and caps.seccomp:
        assert "landlock" in out and "warning" not in out


def test_doctor_warns_when_only_limits_are_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WHYFLOW_SANDBOX_ISOLATION", "limits-only")
    buffer = io.StringIO()
    assert doctor(buffer, warm_check=False) == 0
    out = buffer.getvalue()
    assert "warning: generated code runs with limits only" in out
    assert "bwrap" not in out.split("active layers:")[1].splitlines()[0]
