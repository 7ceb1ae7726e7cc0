"""LLM layer benchmark: latency, tokens and how often a model's answers pass the checks.

For each LLM mode (roles, edge orientation, critique points, summary, next tool) it asks the
model ``--trials`` times on a fixed, generated analysis and prints per mode: median latency,
tokens per call, the share of answers accepted after validation (one re-ask allowed) and the
most common rejection reasons. Against the local SmolLM2-135M server (started here unless
``--base-url`` is given) it measures the plumbing and how often a tiny model's answers are
rejected — not the quality of a capable model.

    python benchmarks/bench_llm.py --trials 3
    python benchmarks/bench_llm.py --base-url http://127.0.0.1:8080/v1 --model my-model --trials 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _estimates() -> list[Any]:
    rows = [
        ("AIPW (doubly robust)", 1387.2, 1090.4, 1684.0, True),
        ("Regression adjustment (OLS)", 1354.2, 1063.8, 1644.7, False),
    ]
    return [
        SimpleNamespace(method=m, estimate=e, ci_lower=lo, ci_upper=hi, details=SimpleNamespace(headline=h))
        for m, e, lo, hi, h in rows
    ]


def _modes(llm: Any) -> dict[str, Any]:
    from whyflow.causal import prompts

    columns = ["age", "education_years", "prior_earnings", "region", "training", "skills_score", "earnings"]
    desc = {"age": "Age at enrolment", "skills_score": "Skills test score after the programme", "region": "Region"}
    review = SimpleNamespace(
        decision=SimpleNamespace(value="APPROVE"), scores={"overlap": 5, "agreement": 4}, issues=[]
    )
    critique = SimpleNamespace(decision=SimpleNamespace(value="APPROVE"), scores={"overlap": 5, "agreement": 4})
    recs = ["Trust the AIPW estimate of 1,387 (95% CI 1,090 to 1,684) with caution."]
    return {
        "roles": lambda: prompts.suggest_roles(llm, columns, desc, {}, "training", "earnings", False),
        "orient_edges": lambda: prompts.propose_orientations(
            llm,
            columns,
            [("age", "training"), ("skills_score", "earnings")],
            [("training", "earnings")],
            lambda a, b: None,
            desc,
        ),
        "critique": lambda: prompts.critique_llm_review(llm, "training", "earnings", _estimates(), review),
        "summary": lambda: (
            prompts.orchestrator_summary(llm, "training", "earnings", _estimates(), critique, recs, None) or None
        ),
        "next_tool": lambda: prompts.choose_step(
            llm, ["check_overlap", "estimate", "finish"], ["check_overlap", "estimate"], ["ols", "aipw"], []
        ),
    }


def run(base_url: str, model: str | None, trials: int, temperature: float) -> None:
    from whyflow.runtime.llm import client_for

    settings = {
        "enabled": True,
        "base_url": base_url,
        "model": model,
        "cache": False,
        "temperature": temperature,
        "max_retries": 0,
        "timeout_s": 120,
        "max_tokens_per_run": 10_000_000,
    }
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'mode':<14}{'accepted':>10}{'median s':>10}{'tokens/call':>13}  most common rejection")
        for name in _modes(None):
            accepted, secs, tokens = 0, [], []
            reasons: Counter[str] = Counter()
            for _ in range(trials):
                llm = client_for(settings, Path(tmp), f"bench-{name}")
                started = time.perf_counter()
                out = _modes(llm)[name]()
                secs.append(time.perf_counter() - started)
                accepted += out is not None
                calls = max(1, llm.usage.get("calls", 0))
                tokens.append(llm.usage.get("total_tokens", 0) / calls)
                reasons.update(r.split(":")[0][:50] for x in llm.rejections for r in x["reasons"])
            top = ", ".join(f"{r} ({n})" for r, n in reasons.most_common(2)) or "-"
            print(
                f"{name:<14}{accepted:>6}/{trials:<3}{statistics.median(secs):>10.2f}{statistics.median(tokens):>13.0f}  {top}"
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint (default: start SmolLM2 here)")
    parser.add_argument("--model", default=None)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--temperature", type=float, default=0.7, help="above 0 so trials differ")
    args = parser.parse_args(argv)
    server = None
    url = args.base_url
    if url is None:
        from whyflow.runtime.llm.local import start

        started = time.perf_counter()
        server, url = start()
        print(f"local SmolLM2-135M (xllamacpp, 1 thread) started in {time.perf_counter() - started:.1f} s at {url}")
    run(url, args.model, args.trials, args.temperature)
    del server


if __name__ == "__main__":
    main()
