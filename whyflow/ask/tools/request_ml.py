"""A model-evaluation request: "split the data 70/30, train a linear regression of Y on A, B and C,
report the mean squared error on the test set". Read from the question's words: the model and its
stated parameters, the target, the features, the split and its seed, the scaling, and the metric the
slot asks for. Computed in the sandbox by ``request_ops.fit_model``.

Anything the question does not state gets one documented default, never a per-question choice:
rows without a target are dropped, missing numeric features are filled with the column's mean,
text features are one-hot encoded, and the split's seed is 42 when none is named (the common
convention). A question without a stated train/test split is not read as a model request: the
metric would be measured on the rows the model was fitted to.
"""

from __future__ import annotations

import re
from typing import Any

from whyflow.ask.tools.slots import ColumnInfo, find_columns

_MODELS = (
    (r"logistic regression", "logistic"),
    (r"linear regression|\bols\b|least squares", "linear"),
    (r"random forest", "forest"),
    (r"decision tree", "tree"),
    (r"k-?nearest neighbou?rs?|\bknn\b", "knn"),
)
_METRICS = (
    (r"\broot mean squared? error\b|\brmse\b", "rmse"),
    (r"\bmean squared? error\b|\bmse\b", "mse"),
    (r"\bmean absolute error\b|\bmae\b", "mae"),
    (r"\br ?(?:squared|2)\b|\brsquared\b", "r2"),
    (r"\baccuracy\b", "accuracy"),
)
_FILLER = frozenset(
    "the following features feature columns column variables variable predictors predictor values "
    "value data dataset its their".split()
)
_STOP = re.compile(
    r"(?<!\d)\.(?:\s|$)|\bsplit|\btrain\b|\btraining\b|\bevaluat|\bperform|\bapply|\bencode|\buse\b", re.I
)


def is_model_question(context: str) -> bool:
    """The question trains a named model on a stated train/test split."""
    low = context.lower()
    return any(re.search(p, low) for p, _ in _MODELS) and _test_size(low) is not None


def _test_size(low: str) -> float | None:
    """The test share: "70:30 split", "80% training", "20% for testing", "test_size=0.25"."""
    m = re.search(r"test[_ ]size\s*(?:=|of|:)?\s*(0?\.\d+)", low)
    if m:
        return float(m.group(1))
    for m in re.finditer(r"\b(\d{2})\s*%?\s*(?::|/|-|to)\s*(\d{2})\s*%?", low):
        a, b = int(m.group(1)), int(m.group(2))
        near = low[max(0, m.start() - 60) : m.end() + 60]
        if a + b == 100 and re.search(r"split|train|test", near):
            return min(a, b) / 100
    shares = [
        int(m.group(1))
        for m in re.finditer(r"\b(\d{2})\s*%", low)
        if re.search(r"train|test", low[max(0, m.start() - 40) : m.end() + 40])
    ]
    if any(a + b == 100 for a in shares for b in shares):  # "a training set (80%) and a testing set (20%)"
        return min(a for a in shares if 100 - a in shares) / 100
    for m in re.finditer(r"\b(\d{2})\s*%", low):  # one share: its nearest word says which
        nearest = {
            w.group(1): abs(w.start() - m.start())
            for w in re.finditer(r"\b(train|test)", low)
            if abs(w.start() - m.start()) <= 40
        }
        if nearest:
            share = int(m.group(1)) / 100
            return share if min(nearest, key=lambda k: nearest[k]) == "test" else round(1 - share, 10)
    return None


def _metric(slot_text: str, about: str, context: str) -> str | None:
    for pattern, metric in _METRICS:
        if re.search(pattern, slot_text):
            return metric
    if re.search(r"\b(?:corr|correlation|pearson|coefficient)\b", slot_text) and re.search(
        r"predicted\b.{0,40}\bactual|actual\b.{0,40}\bpredicted", context
    ):
        return "prediction_corr"
    if re.search(r"\b(?:score|performance|error)\b", slot_text) or re.search(r"\bmodel\b", slot_text):
        for pattern, metric in _METRICS:  # "model_score": the metric the question names
            if re.search(pattern, f"{about} {context}"):
                return metric
    return None


def _target(text: str, infos: list[ColumnInfo]) -> str | None:
    cues = (
        r"(?:dependent|target|output|response) variable (?:for the prediction )?(?:is|should be|as|:)?\s*",
        r"\bpredict(?:s|ing)?\s+(?:whether\s+)?",
        r"\bclassify\s+",
        r"\bas the (?:output|target)\b",
    )
    for cue in cues:
        for m in re.finditer(cue, text, re.I):
            if cue.startswith(r"\bas the"):
                span = text[max(0, m.start() - 40) : m.start()]
                cols = [c.column for c in find_columns(span, infos)]
                if cols:
                    return cols[-1]
                continue
            span = re.split(r"\bbased on\b|\busing\b|\bfrom\b|\bwith\b|(?<!\d)\.\s|\n", text[m.end() : m.end() + 120])[
                0
            ]
            cols = [c.column for c in find_columns(span, infos)]
            if cols:
                return cols[0]
    return None


def _features(text: str, infos: list[ColumnInfo], target: str) -> list[str]:
    cues = r"\bbased on\b|\bindependent variables?\b|\bpredictors?\b|\bfeatures?\b|\busing (?:the )?(?-i:(?=['\"`A-Z]))"
    for m in re.finditer(cues, text, re.I):
        rest = text[m.end() : m.end() + 300]
        stop = _STOP.search(rest)
        span = rest[: stop.start()] if stop else rest
        cols = [c.column for c in find_columns(span, infos) if c.column != target]
        if cols:
            pieces = [
                p for p in re.split(r",|\band\b|\n|;", span) if set(re.findall(r"[a-z]{3,}", p.lower())) - _FILLER
            ]
            if all(find_columns(p, infos) for p in pieces):  # else a named feature is no column: read on
                return list(dict.fromkeys(cols))
    return []


def _params(low: str, model: str, classifier: bool) -> dict[str, Any]:
    params: dict[str, Any] = {}
    trees = re.search(r"(\d+)\s+(?:trees|estimators)|n_estimators\s*(?:=|of)?\s*(\d+)", low)
    if model == "forest" and trees:
        params["n_estimators"] = int(trees.group(1) or trees.group(2))
    depth = re.search(r"max(?:imum)?[_ ]depth[^0-9.;]{0,14}?(\d+)|depth of (\d+)", low)
    if model in ("forest", "tree") and depth:
        params["max_depth"] = int(depth.group(1) or depth.group(2))
    neighbours = re.search(r"\bk\s*=\s*(\d+)|(\d+) (?:nearest )?neighbou?rs", low)
    if model == "knn" and neighbours:
        params["n_neighbors"] = int(neighbours.group(1) or neighbours.group(2))
    if model == "logistic":
        solver = re.search(
            r"['\"]?(liblinear|lbfgs|saga|newton-cg|sag)['\"]? solver|solver\s*=?\s*['\"]?(liblinear|lbfgs|saga)", low
        )
        if solver:
            params["solver"] = solver.group(1) or solver.group(2)
    if (
        classifier
        and model != "knn"
        and re.search(r"balanc\w* (?:the )?class(?:es)? weights?|class[_ ]weight\s*=?\s*['\"]?balanced", low)
    ):
        params["class_weight"] = "balanced"
    return params


def model_request(slot_text: str, about: str, context_raw: str, infos: list[ColumnInfo]) -> dict[str, Any] | None:
    """The options of a ``model`` request for this slot, or None when the slot is not a model's
    metric or the question's model, target, features or split cannot be read."""
    low = context_raw.lower()
    if not is_model_question(low):
        return None
    metric = _metric(slot_text, about.lower(), low)
    if metric is None:
        return None
    model = next(name for pattern, name in _MODELS if re.search(pattern, low))
    target = _target(context_raw, infos)
    if target is None:
        return None
    features = _features(context_raw, infos, target)
    if not features:
        return None
    info = next((c for c in infos if c.name == target), None)
    binary = info is not None and (not info.numeric or (info.n_unique or 0) <= 10)
    classifier = (
        model == "logistic"
        or metric == "accuracy"
        or (model != "linear" and bool(re.search(r"\bclassif", low)) and binary)
    )
    seed = re.search(r"random[_ ]state[^0-9.]{0,40}(\d+)|random seed[^0-9.]{0,20}(\d+)|\bseed (?:of |=\s*)?(\d+)", low)
    scale = (
        "standard"
        if re.search(r"standardi[sz]|standardscaler|z-score normali", low)
        else "minmax"
        if re.search(r"min-?max (?:scal|normali)|minmaxscaler", low)
        else None
    )
    return {
        "model": model,
        "target": target,
        "features": features,
        "metric": metric,
        "classifier": classifier,
        "test_size": _test_size(low),
        "seed": int(next(g for g in seed.groups() if g)) if seed else 42,
        "scale": scale,
        "params": _params(low, model, classifier),
    }


def regression_request(slot_text: str, context_raw: str, infos: list[ColumnInfo]) -> dict[str, Any] | None:
    """A fitted (not evaluated) linear regression: its R² or which predictors are significant, on the
    target and predictors the question states, over the rows complete in those columns."""
    low = context_raw.lower()
    if is_model_question(low) or not re.search(r"(?:multiple |ordinary |simple )?linear regression|\bols\b", low):
        return None
    words = set(slot_text.split())
    if re.search(r"\br[_ ]?(?:squared|2)\b|\brsquared\b", slot_text):
        op = "r2"
    elif words & {"predictor", "predictors"} and words & {"significant", "significance"}:
        op = "predictor_significance"
    else:
        return None
    target = _target(context_raw, infos)
    features = _features(context_raw, infos, target) if target else []
    if target is None or not features:
        if re.search(r"\bmultiple\b|\bpredictors\b|independent variables", low) or op != "r2":
            # a regression on several variables not all read is not answered by a simpler one
            return {
                "kind": "ols",
                "op": "unknown",
                "columns": [],
                "reason": "the regression's variables are not all read",
            }
        return None  # "the R² of the regression of Y on X": the two columns the question pairs
    alpha = re.search(r"(?:alpha|significance level)[^0-9]{0,20}(0?\.\d+)", low)
    return {"kind": "ols", "op": op, "columns": [target, *features], "alpha": float(alpha.group(1)) if alpha else 0.05}
