"""The ``--metadata`` spec: every failure mode one fixture file, one located line; valid files unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.synthetic import linear_confounding
from whyflow.causal.state import StudyDesign
from whyflow.cli.main import main
from whyflow.flows.errors import MetadataError
from whyflow.flows.jobstore.jobs import RunRequest, prepare_job
from whyflow.flows.recipes.metadata import MetadataSpec, load_metadata, read_metadata, state_metadata
from whyflow.flows.recipes.plan import load_plan

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "metadata"
QUICK = "quick_estimate"
EXAMPLES = sorted((ROOT / "examples").glob("*.meta.yaml"))

INVALID = [
    ("misspelt_key.yaml", 5, "unknown metadata key 'forbiden_edges' (did you mean 'forbidden_edges'?)"),
    ("misspelt_column_key.yaml", 5, "columns.skills_score: unknown key 'mesured' (did you mean 'measured'?)"),
    ("misspelt_key.json", 3, "unknown metadata key 'temporal_ordre' (did you mean 'temporal_order'?)"),
    ("duplicate_key.yaml", 4, "metadata: duplicate key 'forbidden_edges' (first defined on line 1)"),
    ("duplicate_key.json", 4, "metadata: duplicate key 'columns' (first defined on line 3)"),
    ("edge_not_a_pair.yaml", 4, "required_edges[1]: must be a [cause, effect] pair of columns"),
    ("notes_not_a_list.yaml", 2, "notes: must be a list, got 'collected by the programme office'"),
]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame, _ = linear_confounding(200, effect=2.0, seed=3)
    path = tmp_path_factory.mktemp("data") / "study.csv"
    frame.to_csv(path, index=False)
    return path


# ---- invalid files ------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "line", "message"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_metadata_is_one_located_line(name: str, line: int, message: str) -> None:
    path = FIXTURES / name
    with pytest.raises(MetadataError) as info:
        read_metadata(path)
    text = str(info.value)
    assert text.startswith(f"{path}:{line}") and message in text, text
    assert len(text.splitlines()) == 1 and info.value.line == line


def test_misspelt_key_through_run_is_bad_input(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    meta = tmp_path / "meta.yaml"
    meta.write_bytes((FIXTURES / "misspelt_key.yaml").read_bytes())
    before = meta.read_bytes()
    argv = ["run", QUICK, "--data", str(data), "-t", "treated", "-y", "outcome", "--metadata", str(meta)]
    code = main([*argv, "-o", str(tmp_path / "job")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip() == (
        f"whyflow: error: {meta}:5 → unknown metadata key 'forbiden_edges' (did you mean 'forbidden_edges'?)"
    )
    assert meta.read_bytes() == before
    assert not (tmp_path / "job").exists()  # nothing was created, nothing ran


def test_validate_checks_metadata_like_a_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    bad = FIXTURES / "misspelt_column_key.yaml"
    assert main(["validate", QUICK, "--metadata", str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == f"✗ {bad}:5 → columns.skills_score: unknown key 'mesured' (did you mean 'measured'?)"
    assert "recipe 'quick_estimate' is valid" in captured.out  # the recipes are still checked

    assert main(["validate", "--metadata", str(FIXTURES / "duplicate_key.yaml")]) == 1
    assert "duplicate key 'forbidden_edges'" in capsys.readouterr().err


def test_validate_accepts_a_valid_metadata_file_alone(capsys: pytest.CaptureFixture[str]) -> None:
    good = FIXTURES / "valid.json"
    assert main(["validate", "--metadata", str(good)]) == 0
    assert capsys.readouterr().out.startswith(f"✓ {good}: metadata is valid — 2 columns described, 3 time tiers")


def test_validate_needs_something_to_check(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["validate"])
    assert info.value.code == 2 and "a RECIPE, a --metadata FILE, or both" in capsys.readouterr().err


# ---- valid files mean what they meant -----------------------------------------------------------
def test_examples_are_shipped() -> None:
    assert EXAMPLES, "examples/*.meta.yaml: none found"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_shipped_example_loads_unchanged(path: Path) -> None:
    spec, values = read_metadata(path)
    assert values == yaml.safe_load(path.read_text())  # the agents read exactly what they read before
    assert spec.forbidden_edges or spec.temporal_order or spec.columns


def test_json_metadata_reaches_the_state(data: Path, tmp_path: Path) -> None:
    path = FIXTURES / "valid.json"
    request = RunRequest(
        recipe=QUICK,
        data=str(data),
        treatment="treated",
        outcome="outcome",
        design=StudyDesign(),
        metadata=str(path),
        runs_dir=str(tmp_path / "runs"),
    )
    folder = prepare_job(request, load_plan(QUICK))
    raw = folder.load().raw_metadata
    assert raw is not None
    assert raw.model_dump(mode="json") == json.loads(path.read_text())
    assert list(raw.model_dump(mode="json")) == list(json.loads(path.read_text()))  # the file's keys, in its order
    assert raw.tags == ["training", 2024] and raw.temporal_order is not None and raw.temporal_order[1] == "training"


_text = st.text(st.characters(categories=["L", "N"]) | st.sampled_from(" _-"), min_size=1, max_size=12)
_column = st.one_of(
    _text, st.fixed_dictionaries({}, optional={k: _text for k in ("description", "unit", "role", "measured")})
)
_metadata = st.fixed_dictionaries(
    {},
    optional={
        "description": _text,
        "tags": st.lists(_text, max_size=3),
        "columns": st.dictionaries(_text, _column, max_size=3),
        "roles": st.dictionaries(_text, _text, max_size=2),
        "temporal_order": st.lists(st.one_of(_text, st.lists(_text, min_size=1, max_size=3)), max_size=3),
        "forbidden_edges": st.lists(st.tuples(_text, _text).map(list), max_size=3),
        "notes": st.lists(_text, max_size=2),
    },
)


@settings(max_examples=40, deadline=None)
@given(_metadata)
def test_yaml_and_json_round_trip(tmp_path_factory: pytest.TempPathFactory, metadata: dict[str, object]) -> None:
    folder = tmp_path_factory.mktemp("meta")
    (folder / "m.yaml").write_text(yaml.safe_dump(metadata, allow_unicode=True), encoding="utf-8")
    (folder / "m.json").write_text(json.dumps(metadata, ensure_ascii=False), encoding="utf-8")
    assert load_metadata(folder / "m.yaml") == metadata == load_metadata(folder / "m.json")
    assert MetadataSpec.model_validate(metadata) == read_metadata(folder / "m.yaml")[0]
    assert state_metadata(folder / "m.json").model_dump(mode="json") == metadata  # the state keeps the file's values
