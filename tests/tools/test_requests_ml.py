"""A model-evaluation request: the model, target, features, split and metric the question states."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import accuracy_score, mean_absolute_error, mean_squared_error
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeRegressor

from tests.tools.request_answers import answers
from whyflow.ask.tools.requests import parse_requests


@pytest.fixture()
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 400
    a, b = rng.normal(0, 1, n), rng.normal(5, 2, n)
    colour = rng.choice(["red", "blue", "green"], n)
    price = 2 * a + 3 * b + (colour == "red") * 1.5 + rng.normal(0, 1, n)
    sold = (price + rng.normal(0, 2, n) > 16).astype(int)
    frame = pd.DataFrame({"alpha": a, "beta": b, "colour": colour, "price": price, "sold": sold})
    frame.loc[:9, "alpha"] = np.nan  # a missing feature takes the column's mean
    frame.loc[10:14, "price"] = np.nan  # a missing target drops the row
    return frame


def _design(frame: pd.DataFrame, target: str, features: list[str]) -> tuple[pd.DataFrame, pd.Series]:
    data = frame[frame[target].notna()]
    parts = [
        data[c].fillna(data[c].mean()) if c != "colour" else pd.get_dummies(data[c], prefix=c, dtype=float)
        for c in features
    ]
    return pd.concat(parts, axis=1), data[target]


def test_linear_regression_mse_on_a_stated_split(frame: pd.DataFrame) -> None:
    q = (
        "Train a linear regression model to predict the price based on the alpha, beta and colour columns. "
        "Split the dataset into a 70-30 training-testing split and evaluate the model using the mean squared error.\n"
        "Constraints: use a random_state of 7 for the split.\nFormat: @mse[value] rounded to three decimal places."
    )
    spec = parse_requests(q, frame)
    assert spec is not None
    (req,) = spec.requests
    assert req.op == "model"
    assert req.options["target"] == "price" and req.options["features"] == ["alpha", "beta", "colour"]
    assert req.options["test_size"] == pytest.approx(0.3) and req.options["seed"] == 7
    x, y = _design(frame, "price", ["alpha", "beta", "colour"])
    xa, xb, ya, yb = train_test_split(x, y, test_size=0.3, random_state=7)
    want = mean_squared_error(yb, LinearRegression().fit(xa, ya).predict(xb))
    assert answers(q, frame)["mse"] == f"{want:.3f}"


def test_logistic_accuracy_with_percent_shares_and_the_default_seed(frame: pd.DataFrame) -> None:
    q = (
        "Build a logistic regression model to predict whether an item sold based on alpha and beta. "
        "Split the data into a training set (80%) and a testing set (20%) and report the accuracy.\n"
        "Format: @accuracy[value] rounded to two decimal places."
    )
    x, y = _design(frame, "sold", ["alpha", "beta"])
    xa, xb, ya, yb = train_test_split(x, y, test_size=0.2, random_state=42)
    want = accuracy_score(yb, LogisticRegression(random_state=42, max_iter=1000).fit(xa, ya).predict(xb))
    assert answers(q, frame)["accuracy"] == f"{want:.2f}"


def test_scaled_tree_mae_and_the_prediction_correlation_are_two_slots(frame: pd.DataFrame) -> None:
    q = (
        "Predict the price based on the following features:\n1. alpha\n2. beta\nPerform the following steps: "
        "split the data, 75% for training, with random_state 3; standardize the features; train a decision tree "
        "regression model with max_depth set to 4; report the mean absolute error and the Pearson correlation "
        "between the predicted and actual price on the testing set.\n"
        "Format: @mae[value] @pearson_coefficient[value] rounded to four decimal places."
    )
    x, y = _design(frame, "price", ["alpha", "beta"])
    xa, xb, ya, yb = train_test_split(x, y, test_size=0.25, random_state=3)
    scaler = StandardScaler().fit(xa)
    predicted = (
        DecisionTreeRegressor(max_depth=4, random_state=3).fit(scaler.transform(xa), ya).predict(scaler.transform(xb))
    )
    got = answers(q, frame)
    assert got["mae"] == f"{mean_absolute_error(yb, predicted):.4f}"
    assert got["pearson_coefficient"] == f"{np.corrcoef(predicted, yb)[0, 1]:.4f}"


def test_without_a_stated_split_the_metric_is_not_computed(frame: pd.DataFrame) -> None:
    q = (
        "Train a linear regression model to predict the price based on alpha and beta and report its mean squared "
        "error.\nFormat: @mse[value]"
    )
    spec = parse_requests(q, frame)
    assert spec is not None
    assert [r.op for r in spec.requests] == ["unknown"]
    assert answers(q, frame)["mse"] is None


def test_a_multiple_regression_r2_and_which_predictors_are_significant(frame: pd.DataFrame) -> None:
    import statsmodels.api as sm

    q = (
        "Can we predict the price based on alpha and beta?\nConstraints: Perform a multiple linear regression with "
        "alpha and beta as predictors. Use a significance level (alpha) of 0.05 for the predictors. Calculate the "
        "R-squared value of the model.\nFormat: @significant_predictor[predictor_1,predictor_2] @r_squared[value] "
        'where "value" is rounded to four decimal places.'
    )
    got = answers(q, frame)
    data = frame[["price", "alpha", "beta"]].dropna()
    fit = sm.OLS(data.price, sm.add_constant(data[["alpha", "beta"]])).fit()
    assert got["r_squared"] == f"{fit.rsquared:.4f}"
    assert got["significant_predictor"] == ",".join("yes" if p < 0.05 else "no" for p in fit.pvalues.iloc[1:])


def test_a_model_on_a_feature_that_is_no_column_is_not_computed(frame: pd.DataFrame) -> None:
    q = (
        "Train a linear regression model to predict the price based on alpha, beta and the weather. Split the data "
        "70-30 and report the mean squared error.\nFormat: @mse[value]"
    )
    assert answers(q, frame)["mse"] is None
