"""The computation of a textbook statistics question (:mod:`whyflow.ask.tools.textbook_questions`):
a variable's type, a stated chi-square statistic's p-value, Pearson's chi-square test of
independence and whether events are disjoint, each with the sentence that says what was computed
(the rows, their number, the test and its convention), the answer first.

Self-contained (pandas, numpy and scipy only): :func:`whyflow.ask.tools.textbook_spec.textbook_code`
puts this module's source into the sandbox program, and tests call :func:`answer_textbook` directly.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from scipy import stats


def _fixed(value: float, decimals: int | None) -> str:
    if decimals is not None:
        return f"{value:.{decimals}f}"
    return f"{value:.4g}" if abs(value) < 1 else f"{value:.4f}".rstrip("0").rstrip(".")


def variable_type(series: pd.Series) -> str | None:
    """'categorical' for text and yes/no values, 'numerical' for numbers of many values; None for
    numbers of few values (codes or counts: the data cannot tell)."""
    kept = series.dropna()
    if pd.api.types.is_bool_dtype(kept) or not pd.api.types.is_numeric_dtype(kept):
        numbers = pd.to_numeric(kept.astype("string").str.replace(r"[,$%\s]", "", regex=True), errors="coerce")
        return "categorical" if numbers.isna().any() or kept.empty else None
    return "numerical" if kept.nunique() > 12 else None


def _choice(choices: list[str], word: str) -> str:
    """The option as the question spelled it (the word itself when none matches)."""
    for c in choices:
        if word in c.lower().split() or c.lower() == word:
            return c
    return word


def _independence(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    a, b = spec["columns"]
    both = df[[a, b]].dropna()
    table = pd.crosstab(both[a].astype(str), both[b].astype(str))
    result = stats.chi2_contingency(table.to_numpy(), correction=False)
    stat, p, dof = float(result.statistic), float(result.pvalue), int(result.dof)
    alpha, want, decimals = float(spec["alpha"]), spec["want"], spec.get("decimals")
    level = f"the {100 * alpha:g}% significance level" + ("" if spec.get("alpha_stated") else " (the usual one)")
    rejected = p < alpha
    lead = {
        "p_value": _fixed(p, decimals),
        "statistic": _fixed(stat, decimals),
        "df": str(dof),
        "decision": _choice(spec.get("choices") or [], "reject" if rejected else "accept"),
        "independent": _choice(spec.get("choices") or [], "no" if rejected else "yes"),
    }[want]
    verdict = "rejected" if rejected else "not rejected"
    sentence = (
        f"{lead}: Pearson's chi-square test of independence (no continuity correction) of {a} "
        f"({table.shape[0]} values) and {b} ({table.shape[1]} values) over the {len(both)} rows with both gives "
        f"X² = {stat:.3f} with {dof} degrees of freedom, p = {p:.4g}; at {level} independence is {verdict}."
    )
    value = {"p_value": p, "statistic": stat, "df": float(dof)}.get(want, float(rejected))
    return {"value": value, "n": len(both), "answer": sentence}


def _disjoint(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    hits = pd.DataFrame(
        {
            f"{v['column']} = {v['value']}": df[v["column"]].astype("string").str.strip().str.lower()
            == v["value"].strip().lower()
            for v in spec["values"]
        }
    ).fillna(False)
    together = int((hits.sum(axis=1) >= 2).sum())
    named = " and ".join(hits.columns)
    if together:
        lead = _choice(spec.get("choices") or [], "no")
        sentence = f"{lead}: {together} of the {len(df)} rows have {named} at once, so the events are not disjoint."
    else:
        lead = _choice(spec.get("choices") or [], "yes")
        columns = {v["column"] for v in spec["values"]}
        why = f"a row holds one value of {columns.pop()}" if len(columns) == 1 else "no row has two of them"
        sentence = f"{lead}: {why}; none of the {len(df)} rows has two of {named}, so the events are disjoint."
    return {"value": float(together == 0), "n": len(df), "answer": sentence}


def _hits(df: pd.DataFrame, ref: dict[str, Any]) -> tuple[pd.Series, pd.Series]:
    """Rows with a known value of the column, and among them those holding ``ref``'s value."""
    column = df[ref["column"]]
    known = column.notna()
    return known, known & (column.astype("string").str.strip().str.lower() == ref["value"].strip().lower())


def _proportion(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    from statsmodels.stats.proportion import proportion_confint, std_prop

    ref = spec["values"][0]
    known, hit = _hits(df, ref)
    n, k = int(known.sum()), int(hit.sum())
    p = k / n
    what = f"the share of {ref['column']} = {ref['value']} ({k} of {n} rows, p = {p:.4f})"
    decimals = spec.get("decimals")
    if spec["kind"] == "proportion_se":
        se = float(std_prop(p, n))
        return {
            "value": se,
            "n": n,
            "answer": f"{_fixed(se, decimals)}: the standard error sqrt(p(1 - p)/n) of {what}; the same for either value.",
        }
    level = 1 - float(spec["alpha"])
    low, high = (float(x) for x in proportion_confint(k, n, alpha=float(spec["alpha"]), method="normal"))
    want = spec["want"]
    lead = {"lower": _fixed(low, decimals), "upper": _fixed(high, decimals)}.get(
        want, f"{_fixed(low, decimals)} to {_fixed(high, decimals)}"
    )
    sentence = (
        f"{lead}: the {100 * level:g}% confidence interval (normal approximation, p ± z·sqrt(p(1 - p)/n)) for "
        f"{what} is {low:.4f} to {high:.4f}."
    )
    return {"value": {"lower": low, "upper": high}.get(want, low), "n": n, "answer": sentence}


def _shares(df: pd.DataFrame, spec: dict[str, Any], group: str) -> pd.DataFrame:
    ref = spec["values"][0]
    known, hit = _hits(df, ref)
    rows = df.loc[known & df[group].notna()]
    kept = hit[rows.index]
    out = kept.groupby(rows[group].astype(str)).agg(["mean", "sum", "size"])
    return out


def _difference(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    flag, group = spec["columns"]
    shares = _shares(df, spec, group)
    (a, ra), (b, rb) = list(shares.iterrows())
    gap = abs(float(ra["mean"]) - float(rb["mean"]))
    sentence = (
        f"{_fixed(gap, spec.get('decimals'))}: the absolute difference between the share of {flag} = "
        f"{spec['values'][0]['value']} with {group} = {a} ({int(ra['sum'])} of {int(ra['size'])}, {float(ra['mean']):.5f}) "
        f"and with {group} = {b} ({int(rb['sum'])} of {int(rb['size'])}, {float(rb['mean']):.5f})."
    )
    return {"value": gap, "n": int(shares["size"].sum()), "answer": sentence}


def _higher(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    group = spec["columns"][0]
    shares = _shares(df, spec, group)["mean"]
    top = shares.max() if spec["want"] == "statistic" else shares.min()
    winners = list(shares[shares == top].index)
    listed = ", ".join(f"{g} {100 * float(v):.2f}%" for g, v in shares.items())
    what = f"share of {spec['values'][0]['column']} = {spec['values'][0]['value']} by {group}: {listed}"
    if len(winners) != 1:
        return {"value": float("nan"), "answer": f"No single {group} has it: the {what}."}
    options = spec.get("choices") or []
    lead = next((c for c in options if winners[0].lower() in c.lower().split()), winners[0])
    return {"value": float(top), "answer": f"{lead}: the {what}."}


def _paired(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    a, b = spec["columns"]
    both = df[[a, b]].apply(pd.to_numeric, errors="coerce").dropna()
    test = stats.ttest_rel(both[a], both[b])
    t, p, dof = float(test.statistic), float(test.pvalue), int(test.df)
    gap = both[a] - both[b]
    want, decimals = spec["want"], spec.get("decimals")
    lead = {"p_value": _fixed(p, decimals), "statistic": _fixed(t, decimals), "df": str(dof)}[want]
    sentence = (
        f"{lead}: the paired t-test (two-sided, null hypothesis of no mean difference) of {a} - {b} over the "
        f"{len(both)} rows with both (mean difference {float(gap.mean()):.4g}, standard deviation "
        f"{float(gap.std(ddof=1)):.4g}) gives t = {t:.3f} with {dof} degrees of freedom, p = {p:.4g}."
    )
    value = {"p_value": p, "statistic": t, "df": float(dof)}[want]
    return {"value": value, "n": len(both), "answer": sentence}


def _two_sample(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    measure = spec["columns"][0]
    samples = []
    for ref in spec["values"]:
        _, hit = _hits(df, ref)
        samples.append(pd.to_numeric(df.loc[hit, measure], errors="coerce").dropna())
    test = stats.ttest_ind(samples[0], samples[1], equal_var=False)
    t, p, dof = float(test.statistic), float(test.pvalue), float(test.df)
    want, decimals = spec["want"], spec.get("decimals")
    lead = {"p_value": _fixed(p, decimals), "statistic": _fixed(t, decimals), "df": _fixed(dof, decimals)}[want]
    (a, b), (na, nb) = ([f"{r['column']} = {r['value']}" for r in spec["values"]], [len(x) for x in samples])
    sentence = (
        f"{lead}: Welch's two-sample t-test (two-sided, unequal variances, Welch-Satterthwaite degrees of freedom) "
        f"of {measure} with {a} (n = {na}, mean {float(samples[0].mean()):.4g}) against {b} (n = {nb}, mean "
        f"{float(samples[1].mean()):.4g}) gives t = {t:.3f} with {dof:.2f} degrees of freedom, p = {p:.4g}."
    )
    return {"value": {"p_value": p, "statistic": t, "df": dof}[want], "n": na + nb, "answer": sentence}


def _z_verdict(spec: dict[str, Any], z: float, p: float) -> tuple[str, str, bool]:
    """A z-test's answer as asked (its p-value, its statistic or the decision among the question's
    choices), the significance level in words (said to be the usual one unless stated) and whether
    the null is rejected at it."""
    alpha, decimals = float(spec["alpha"]), spec.get("decimals")
    rejected = p < alpha
    level = f"the {100 * alpha:g}% significance level" + ("" if spec.get("alpha_stated") else " (the usual one)")
    lead = {
        "p_value": _fixed(p, decimals),
        "statistic": _fixed(z, decimals),
        "decision": _choice(spec.get("choices") or [], "reject" if rejected else "accept"),
    }[spec["want"]]
    return lead, level, rejected


def _two_proportions(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    from statsmodels.stats.proportion import proportions_ztest

    event, first, second = spec["values"]
    event_known, hit = _hits(df, event)
    counts, sizes, said = [], [], []
    for ref in (first, second):
        _, rows = _hits(df, ref)
        rows &= event_known
        k, n = int((hit & rows).sum()), int(rows.sum())
        counts.append(k)
        sizes.append(n)
        said.append(f"{ref['column']} = {ref['value']} ({k} of {n}, {k / n:.4f})")
    z, p = (float(x) for x in proportions_ztest(counts, sizes, alternative="two-sided"))
    lead, level, rejected = _z_verdict(spec, z, p)
    sentence = (
        f"{lead}: the two-sample z-test of proportions (pooled under the null hypothesis of equal proportions, "
        f"two-sided, statsmodels' proportions_ztest) of the share of {event['column']} = {event['value']} with "
        f"{said[0]} against {said[1]}, over the {sum(sizes)} rows with both known, gives z = {z:.3f}, p = {p:.4g}; "
        f"at {level} equality is {'rejected' if rejected else 'not rejected'}."
    )
    value = {"p_value": p, "statistic": z}.get(spec["want"], float(rejected))
    return {"value": value, "n": sum(sizes), "answer": sentence}


def _skew(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    column = spec["columns"][0]
    kept = pd.to_numeric(df[column], errors="coerce").dropna()
    n = len(kept)
    g1 = float(stats.skew(kept, bias=False))
    se = (6 * n * (n - 1) / ((n - 2) * (n + 1) * (n + 3))) ** 0.5
    word = "symmetric" if abs(g1) <= 2 * se else "right" if g1 > 0 else "left"
    convention = (
        f"the adjusted Fisher-Pearson skewness of {column} over its {n} known values is {g1:.3f} (scipy skew, "
        f"bias=False), its standard error {se:.3f}; skewed where it exceeds twice that, positive to the right"
    )
    if word == "symmetric" and spec["want"] != "answer":
        return {"value": g1, "n": n, "answer": f"Neither side clearly: {convention}."}
    options = spec.get("choices") or []
    lead = next(
        (
            c
            for c in options
            if word in c.lower()
            or (word == "right" and "positive" in c.lower())
            or (word == "left" and "negative" in c.lower())
        ),
        word,
    )
    return {"value": g1, "n": n, "answer": f"{lead}: {convention}."}


def _union(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    refs = spec["values"]
    known = pd.Series(True, index=df.index)
    hits = []
    for ref in refs:
        column_known, hit = _hits(df, ref)
        known &= column_known
        hits.append(hit)
    rows = int(known.sum())
    each = [int((h & known).sum()) for h in hits]
    anyone = pd.concat(hits, axis=1).any(axis=1) & known
    k = int(anyone.sum())
    p = k / rows
    named = " or ".join(f"{r['column']} = {r['value']}" for r in refs)
    parts = ", ".join(f"{r['column']} = {r['value']} {n}" for r, n in zip(refs, each, strict=True))
    overlap = sum(each) - k
    sentence = (
        f"{_fixed(p, spec.get('decimals'))}: the share of the {rows} rows with every named column known that have "
        f"{named} ({k} rows: {parts}, {overlap} counted twice by the sum), P(A or B) = P(A) + P(B) - P(A and B)."
    )
    return {"value": p, "n": rows, "answer": sentence}


def _quartile(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    column, want = spec["columns"][0], spec["want"]
    kept = pd.to_numeric(df[column], errors="coerce").dropna()
    q1, median, q3 = (float(x) for x in kept.quantile([0.25, 0.5, 0.75]))
    value = {"median": median, "q1": q1, "q3": q3, "iqr": q3 - q1}[want]
    what = {"median": "median", "q1": "first quartile", "q3": "third quartile", "iqr": "interquartile range Q3 - Q1"}
    sentence = (
        f"{_fixed(value, spec.get('decimals'))}: the {what[want]} of {column} over its {len(kept)} known values "
        f"(Q1 = {q1:.4g}, median = {median:.4g}, Q3 = {q3:.4g}; quartiles interpolated linearly between order "
        "statistics, numpy's default)."
    )
    return {"value": value, "n": len(kept), "answer": sentence}


def _draws(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    k, j, want = int(spec["draws"]), int(spec["hits"]), spec["want"]
    weights_column = spec.get("weights")
    if spec.get("values"):
        ref = spec["values"][0]
        known, hit = _hits(df, ref)
        event = f"{ref['column']} = {ref['value']}"
    else:
        measure = spec["columns"][0]
        values = pd.to_numeric(df[measure], errors="coerce")
        known = values.notna()
        hit = known.copy()
        low, high, sign = spec.get("low"), spec.get("high"), "<" if spec.get("strict") else "≤"
        if low is not None:
            hit &= values > float(low) if spec.get("strict") else values >= float(low)
        if high is not None:
            hit &= values < float(high) if spec.get("strict") else values <= float(high)
        bounds = (f"{low:g} {sign}" if low is not None else "", measure, f"{sign} {high:g}" if high is not None else "")
        event = " ".join(b for b in bounds if b)
    if weights_column:
        weights = pd.to_numeric(df[weights_column], errors="coerce")
        known &= weights.notna() & (weights >= 0)
        total, inside = float(weights[known].sum()), float(weights[known & hit].sum())
        over = (
            f"the {total:,.0f} {spec.get('unit') or 'units'} counted by {weights_column} over {int(known.sum())} rows"
        )
    else:
        total, inside = float(known.sum()), float((known & hit).sum())
        over = f"the {int(total)} rows with it known"
    p = inside / total
    draw = stats.binom(k, p)
    value, said = {
        "all": (float(draw.pmf(k)), f"all {k} hold it: p^{k}"),
        "none": (float(draw.pmf(0)), f"none of the {k} holds it: (1 - p)^{k}"),
        "exactly": (float(draw.pmf(j)), f"exactly {j} of the {k} hold it: the binomial probability of {j}"),
        "at_least": (float(draw.sf(j - 1)), f"at least {j} of the {k} hold it: the binomial P(X ≥ {j})"),
        "at_most": (float(draw.cdf(j)), f"at most {j} of the {k} hold it: the binomial P(X ≤ {j})"),
    }[want]
    sentence = (
        f"{_fixed(value, spec.get('decimals'))}: the probability that, of {k} independent random draws, {said}, "
        f"where p = {p:.4f} is the share with {event} among {over} ({inside:,.0f} of them); unrounded {value:.4g}."
    )
    return {"value": value, "n": int(known.sum()), "answer": sentence}


def _expected(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    first, second = spec["values"]
    both = df[[first["column"], second["column"]]].dropna()
    _, in_first = _hits(both, first)
    _, in_second = _hits(both, second)
    n, a, b = len(both), int(in_first.sum()), int(in_second.sum())
    value = a * b / n
    observed = int((in_first & in_second).sum())
    sentence = (
        f"{_fixed(value, spec.get('decimals'))}: the expected count under independence of the rows with "
        f"{first['column']} = {first['value']} and {second['column']} = {second['value']}, over the {n} rows with "
        f"both known: {a} × {b} / {n} (row total × column total / rows, the count Pearson's chi-square test expects; "
        f"{b / n:.4f} of the rows have {second['column']} = {second['value']}); {observed} were observed."
    )
    return {"value": value, "n": n, "answer": sentence}


def _one_proportion(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    from statsmodels.stats.proportion import proportions_ztest

    ref, p0, alternative = spec["values"][0], float(spec["null_value"]), spec["alternative"]
    known, hit = _hits(df, ref)
    n, k = int(known.sum()), int(hit.sum())
    z, p = (float(x) for x in proportions_ztest(k, n, value=p0, alternative=alternative, prop_var=p0))
    lead, level, rejected = _z_verdict(spec, z, p)
    side = {"two-sided": "two-sided", "larger": f"one-sided, p > {p0:g}", "smaller": f"one-sided, p < {p0:g}"}
    sentence = (
        f"{lead}: the one-sample z-test of a proportion ({side[alternative]}; standard error sqrt(p0(1 - p0)/n) "
        f"from the null value p0 = {p0:g}; statsmodels' proportions_ztest) of the share of {ref['column']} = "
        f"{ref['value']} ({k} of the {n} rows with {ref['column']} known, {k / n:.4f}) gives z = {z:.3f}, "
        f"p = {p:.4g}; at {level} the null hypothesis is {'rejected' if rejected else 'not rejected'}."
    )
    return {"value": {"p_value": p, "statistic": z}.get(spec["want"], float(rejected)), "n": n, "answer": sentence}


def _z_score(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    column, x = spec["columns"][0], float(spec["given"])
    kept = pd.to_numeric(df[column], errors="coerce").dropna()
    mean, sd = float(kept.mean()), float(kept.std(ddof=1))
    z = (x - mean) / sd
    sentence = (
        f"{_fixed(z, spec.get('decimals'))}: the z-score (x - mean) / sd of {column} = {x:g}, the mean {mean:.4g} and "
        f"the sample standard deviation {sd:.4g} (n - 1) taken over the {len(kept)} known values of {column}."
    )
    return {"value": z, "n": len(kept), "answer": sentence}


def _fit(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    column, kind, want = spec["columns"][0], spec["distribution"], spec["want"]
    kept = pd.to_numeric(df[column], errors="coerce").dropna()
    if kind == "normal":
        loc, scale = (float(v) for v in stats.norm.fit(kept))
        value = {"mean": loc, "sd": scale}[want]
        fitted = f"a normal distribution, mean {loc:.4g} and standard deviation {scale:.4g} (n in the denominator)"
    elif kind == "exponential":
        if (kept < 0).any():
            return {"value": float("nan"), "answer": f"No exponential fit: {column} has negative values."}
        _, scale = (float(v) for v in stats.expon.fit(kept, floc=0))
        value = {"mean": scale, "rate": 1 / scale}[want]
        fitted = f"an exponential distribution from 0, mean (scale) {scale:.4g} and rate 1 / mean = {1 / scale:.4g}"
    else:
        value = float(kept.mean())
        fitted = f"a Poisson distribution, rate (its mean) {value:.4g}"
    named = {"mean": "mean", "sd": "standard deviation", "rate": "rate"}[want]
    sentence = (
        f"{_fixed(value, spec.get('decimals'))}: the {named} of {fitted}, fitted by maximum likelihood (scipy) "
        f"to the {len(kept)} known values of {column}."
    )
    return {"value": value, "n": len(kept), "answer": sentence}


def answer_textbook(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    """The value the spec asks for and the sentence that says how it was computed (and which of
    the question's phrases were read as the data's description)."""
    out = _answer(df, spec)
    again = spec.get("restated") or []
    if again:
        quoted = ", ".join(f"'{p}'" for p in again)
        out["answer"] = f"{out['answer']} Read as the data's description: {quoted}."
    return out


_BY_KIND = {
    "independence": _independence,
    "disjoint": _disjoint,
    "z_score": _z_score,
    "distribution_fit": _fit,
    "one_proportion_z": _one_proportion,
    "proportion_difference": _difference,
    "higher_group": _higher,
    "two_sample_t": _two_sample,
    "quartile": _quartile,
    "two_proportion_z": _two_proportions,
    "skew": _skew,
    "union": _union,
    "paired_t": _paired,
    "draws": _draws,
    "expected_count": _expected,
    "proportion_se": _proportion,
    "proportion_ci": _proportion,
}
"""The kinds computed by one function of their own."""


def _answer(df: pd.DataFrame, spec: dict[str, Any]) -> dict[str, Any]:
    kind = spec["kind"]
    if kind in _BY_KIND:
        return _BY_KIND[kind](df, spec)
    if kind == "column_type":
        column = spec["columns"][0]
        found = variable_type(df[column])
        if found is None:
            return {"value": float("nan"), "answer": f"The values of {column} do not say whether it is numerical."}
        lead = _choice(spec.get("choices") or [], found)
        n = int(df[column].nunique())
        what = "numbers" if found == "numerical" else "labels"
        return {"value": float(found == "numerical"), "answer": f"{lead}: {column} holds {what} ({n} distinct values)."}
    if kind == "chi2_stated":
        stat, dof = float(spec["statistic"]), int(spec["df"])
        p = float(stats.chi2.sf(stat, dof))
        sentence = (
            f"{_fixed(p, spec.get('decimals'))} is the p-value: the chance that a chi-square distribution with {dof} "
            f"degrees of freedom exceeds the stated X² = {stat:g}."
        )
        return {"value": p, "answer": sentence}
    if kind == "study_design":
        lead = _choice(spec.get("choices") or [], "experiment")
        sentence = (
            f"{lead}: the description says the units were {spec['evidence']}, so the researchers assigned the "
            "treatment: a randomized experiment, not an observational study."
        )
        return {"value": 1.0, "answer": sentence}
    if kind == "sample_size":
        return {"value": float(len(df)), "n": len(df), "answer": f"{len(df)}: the data hold {len(df)} rows."}
    if kind == "proportion_point":
        ref = spec["values"][0]
        known, hit = _hits(df, ref)
        n, k = int(known.sum()), int(hit.sum())
        by = "the data's description" if spec.get("described") else f"'{ref['words']}'"
        sentence = (
            f"{_fixed(k / n, spec.get('decimals'))}: the point estimate of the proportion, the sample share of "
            f"{ref['column']} = {ref['value']} ({k} of the {n} rows with {ref['column']} known, {k / n:.4f}; the value "
            f"named by {by})."
        )
        return {"value": k / n, "n": n, "answer": sentence}
    if kind == "goodness_of_fit":
        column, k = spec["columns"][0], int(df[spec["columns"][0]].dropna().nunique())
        said = f"a chi-square goodness-of-fit test over the {k} categories of {column} has {k} - 1 = {k - 1} degrees"
        return {"value": float(k - 1), "answer": f"{k - 1}: {said} of freedom."}
    raise ValueError(f"unknown textbook question kind {kind!r}")


__all__ = ["answer_textbook", "variable_type"]
