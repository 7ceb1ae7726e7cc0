"""askbench: public questions (InfiAgent-DABench, QRData) through `whyflow ask`, scored as upstream.

Each question of ``<shared>/datasets/askbench/questions.json`` is asked with its ``prompt`` field
(question, constraints and format for DABench; description and question for QRData) and scored
by the benchmark's own rules (see the folder's README):

- ``dabench-closed-form``: every labelled ``@name[value]`` must match, as the same string or as
  floats within 1e-6 (the last value of a repeated name counts);
- ``qrdata-numeric-3pct``: the first number of the lower-cased reply, with a trailing ``%``
  meaning /100, strictly within 3 % (relative) of the gold;
- ``qrdata-choice``: the lower-cased reply starts with the lower-cased gold.

It prints accuracy by source, by DABench level and answer type and by QRData file family,
crashes (a traceback, a timeout, or an exit code other than 0 and 1), wrong-slot replies (two
``@slots`` carrying the same value where their labels differ: one number poured into several
requests) and the median seconds per question.

    .venv/bin/python benchmarks/bench_askbench.py                      # all 259, `whyflow ask` subprocesses
    .venv/bin/python benchmarks/bench_askbench.py --engine local       # `whyflow ask --engine local` (no Prefect)
    .venv/bin/python benchmarks/bench_askbench.py --via inprocess      # the agents in this process, no Prefect
    .venv/bin/python benchmarks/bench_askbench.py --limit 20 --jobs 2 -v
    .venv/bin/python benchmarks/bench_askbench.py --source QRData --llm on
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("WHYFLOW_SHARED", ROOT.parent / "shared"))
QUESTIONS = SHARED / "datasets" / "askbench" / "questions.json"
SLOT = re.compile(r"@(\w+)\[(.*?)\]")
NUMBER = re.compile(r"-?\d+\.?\d*%?")


# ---- the upstream scoring rules ----------------------------------------------------------------
def slots(reply: str) -> dict[str, str]:
    """Every ``@name[value]`` of a reply; the last value of a repeated name wins."""
    out: dict[str, str] = {}
    for name, value in SLOT.findall(reply):
        out[name] = value
    return out


def _same(got: str, want: str) -> bool:
    if got.strip() == want.strip():
        return True
    try:
        return abs(float(got) - float(want)) <= 1e-6
    except ValueError:
        return False


def score_dabench(reply: str, expected: dict[str, str]) -> tuple[bool, int]:
    """(every labelled name matches, how many labelled names match)."""
    got = slots(reply)
    hits = sum(1 for name, want in expected.items() if name in got and _same(got[name], str(want)))
    return hits == len(expected), hits


def _number(text: str) -> float | None:
    match = NUMBER.search(text.lower())
    if match is None:
        return None
    raw = match.group(0)
    return float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)


def score_qrdata_numeric(reply: str, gold: str) -> bool:
    got, want = _number(reply), _number(gold)
    if got is None or want is None:
        return False
    return abs(got - want) < 0.03 * abs(want) if want != 0 else got == 0


def score_qrdata_choice(reply: str, gold: str) -> bool:
    return reply.strip().lower().startswith(gold.strip().lower())


def score(item: dict[str, Any], reply: str) -> bool:
    rule = item["scoring"]
    if rule == "dabench-closed-form":
        return score_dabench(reply, item["expected"])[0]
    if rule == "qrdata-numeric-3pct":
        return score_qrdata_numeric(reply, str(item["expected"]))
    if rule == "qrdata-choice":
        return score_qrdata_choice(reply, str(item["expected"]))
    raise ValueError(f"unknown scoring rule {rule!r}")


_NOT_GIVEN = ("not computed", "not available", "")


DECLINED = "I can't answer"
"""How every reply that gives no number begins: a number quoted inside one (a word of the question it could not
read) is never an answer."""


def outcome(item: dict[str, Any], reply: str, correct: bool, output_type: str | None) -> str:
    """right, wrong or declined: a reply that states no number (or, for a stated format, leaves every
    labelled value it got wrong uncomputed) declined; any number or value that is not the gold is wrong."""
    if correct:
        return "right"
    if not reply.strip() or output_type in ("error", "explanation") or reply.lstrip().startswith(DECLINED):
        return "declined"
    if item["scoring"] == "dabench-closed-form":
        got = slots(reply)
        given = [n for n in item["expected"] if n in got and got[n].strip().lower() not in _NOT_GIVEN]
        wrong = [n for n in given if not _same(got[n], str(item["expected"][n]))]
        return "wrong" if wrong else "declined"
    if item["scoring"] == "qrdata-numeric-3pct":
        return "declined" if _number(reply) is None else "wrong"
    return "wrong"


def wrong_slot(item: dict[str, Any], reply: str) -> list[str]:
    """Slots carrying one value although their labels differ: a value not computed for that slot."""
    if item["scoring"] != "dabench-closed-form":
        return []
    got, want = slots(reply), item["expected"]
    by_value: dict[str, list[str]] = defaultdict(list)
    for name, value in got.items():
        if name in want and value.strip() and value.strip().lower() not in ("not computed", "not available"):
            by_value[value.strip()].append(name)
    bad: list[str] = []
    for names in by_value.values():
        labels = {str(want[n]).strip() for n in names}
        if len(names) > 1 and len(labels) > 1:
            bad += names
    return sorted(bad)


# ---- asking ------------------------------------------------------------------------------------
def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PREFECT_HOME", str(ROOT / ".prefect"))
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    env.setdefault("MPLCONFIGDIR", str(ROOT / ".mplconfig"))
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


ENGINE = "prefect"


def ask_cli(item: dict[str, Any], llm: str, timeout: float, work: Path) -> dict[str, Any]:
    """One `whyflow ask` subprocess; the reply is answer.json's answer (stdout when there is none)."""
    out = work / item["id"]
    cmd = [str(ROOT / ".venv" / "bin" / "whyflow"), "ask", "--engine", ENGINE, "--llm", llm, "-o", str(out)]
    for f in item["files"]:
        cmd += ["--data", str(SHARED / f)]
    cmd.append(item["prompt"])
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(), cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"reply": "", "seconds": timeout, "crash": f"timeout after {timeout:.0f}s"}
    seconds = time.perf_counter() - start
    reply, output_type = proc.stdout, None
    answer = out / "answer.json"
    if answer.exists():
        final = json.loads(answer.read_text(encoding="utf-8"))
        reply, output_type = final.get("answer") or "", final.get("output_type")
    crash = None
    if proc.returncode not in (0, 1) or "Traceback (most recent call last)" in proc.stderr:
        crash = f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ''}"
    return {"reply": reply, "seconds": seconds, "crash": crash, "output_type": output_type}


def ask_inprocess(item: dict[str, Any], llm: str, timeout: float, work: Path) -> dict[str, Any]:
    """The ask recipe's agents run in this process by the plain runner (no Prefect): the same answers."""
    sys.path.insert(0, str(ROOT))
    os.environ["WHYFLOW_LLM"] = llm
    from whyflow.ask.state import AskState
    from whyflow.flows.ask_jobs.job import DEFAULT_RECIPE, AskRequest, prepare_ask_job
    from whyflow.flows.recipes.plan import load_plan
    from whyflow.flows.running.progress import Reporter
    from whyflow.flows.running.runner import LocalExecutor, Runner

    start = time.perf_counter()
    try:
        plan = load_plan(DEFAULT_RECIPE)
        files = [str(SHARED / f) for f in item["files"]]
        request = AskRequest(
            item["prompt"], files, recipe=DEFAULT_RECIPE, output=str(work / item["id"]), llm=llm == "on"
        )
        folder = prepare_ask_job(request, plan)
        state = folder.load_any()
        assert isinstance(state, AskState)
        Runner(plan, folder, state, LocalExecutor(), Reporter()).run()
        final = state.final_output
        reply = final.answer if final else f"no answer: {state.error_message}"
        output_type = final.output_type if final else "error"
        crash = None
    except Exception as exc:  # noqa: BLE001 - a crash is a result here
        reply, crash, output_type = "", f"{type(exc).__name__}: {exc}", None
    return {"reply": reply, "seconds": time.perf_counter() - start, "crash": crash, "output_type": output_type}


# ---- the report ------------------------------------------------------------------------------
def family(item: dict[str, Any]) -> str:
    """A QRData item's file family (ihdp, jobs, or the file's name)."""
    name = Path(item["files"][0]).stem
    return re.sub(r"_\d+$", "", name)


def se_distance(row: dict[str, Any]) -> float | None:
    """|estimate - gold| / SE when the reply states a standard error."""
    se = re.search(r"standard error\s+(-?\d+\.?\d*(?:e-?\d+)?)", row["reply"])
    got, gold = _number(row["reply"]), row["item"].get("expected_number")
    if not se or got is None or gold is None or float(se.group(1)) <= 0:
        return None
    return abs(got - float(gold)) / float(se.group(1))


def window_chance(row: dict[str, Any]) -> float | None:
    """The chance that an unbiased estimate with the reply's standard error lands inside the ±3 %
    window around the gold: erf(0.03·|gold| / (SE·√2)). Summed over replicates, it says how many
    of them sampling error alone lets an honest estimator get right."""
    se = re.search(r"standard error\s+(-?\d+\.?\d*(?:e-?\d+)?)", row["reply"])
    gold = row["item"].get("expected_number")
    if not se or gold is None or float(se.group(1)) <= 0:
        return None
    return math.erf(0.03 * abs(float(gold)) / (float(se.group(1)) * math.sqrt(2)))


def _pct(ok: int, n: int) -> str:
    return f"{ok}/{n} = {100 * ok / n:.1f}%" if n else "0/0"


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        item, ok = r["item"], r["correct"]
        groups["source"][item["source"]].append(ok)
        if item["source"] == "QRData":
            groups["QRData family"][family(item)].append(ok)
            groups["QRData kind"][item["answer_type"]].append(ok)
        else:
            groups["DABench level"][item["level"]].append(ok)
            groups["DABench answer type"][item["answer_type"]].append(ok)
            for concept in item.get("concepts") or []:
                groups["DABench concept"][concept].append(ok)
    summary: dict[str, Any] = {}
    for title, by in groups.items():
        print(f"{title}:")
        for key in sorted(by):
            print(f"  {key:36s} {_pct(sum(by[key]), len(by[key]))}")
        summary[title] = {k: [sum(v), len(v)] for k, v in by.items()}
    total = sum(r["correct"] for r in rows)
    crashes = [r for r in rows if r["crash"]]
    wrong = [r for r in rows if r["wrong_slots"]]
    seconds = [r["seconds"] for r in rows]
    replicates = [r for r in rows if r["item"]["source"] == "QRData" and family(r["item"]) in ("ihdp", "jobs")]
    if replicates:
        print("IHDP/jobs replicates (gold = the simulation's true effect): distance to the gold in standard errors")
        for fam in ("ihdp", "jobs"):
            these = [r for r in replicates if family(r["item"]) == fam]
            dist = [d for d in (se_distance(r) for r in these) if d is not None]
            med = (
                f"median |z| {statistics.median(dist):.2f}, within 2 SE {sum(d <= 2 for d in dist)}/{len(dist)}"
                if dist
                else "no standard error reported"
            )
            chances = [c for c in (window_chance(r) for r in these) if c is not None]
            if chances:
                med += f"; an unbiased estimate with these SEs is inside ±3 % on {sum(chances):.1f} of them on average"
            print(f"  {fam:6s} {_pct(sum(r['correct'] for r in these), len(these))}; {med}")
        rest = [r for r in rows if r["item"]["source"] == "QRData" and r not in replicates]
        print(f"  other QRData: {_pct(sum(r['correct'] for r in rest), len(rest))}")
    print(f"overall: {_pct(total, len(rows))}")
    counted: dict[str, dict[str, int]] = defaultdict(lambda: {"right": 0, "wrong": 0, "declined": 0})
    for r in rows:
        counted[r["item"]["source"]][r["outcome"]] += 1
        counted["all"][r["outcome"]] += 1
    for key, c in sorted(counted.items()):
        n = sum(c.values())
        print(
            f"  {key:20s} right {_pct(c['right'], n)}, wrong {_pct(c['wrong'], n)}, declined {_pct(c['declined'], n)}"
        )
    summary["outcomes"] = {k: dict(v) for k, v in counted.items()}
    print(f"crashes: {len(crashes)}" + "".join(f"\n  {r['item']['id']}: {r['crash'][:160]}" for r in crashes))
    print(
        f"wrong-slot replies: {len(wrong)}"
        + "".join(f"\n  {r['item']['id']}: {', '.join(r['wrong_slots'])}" for r in wrong)
    )
    median = statistics.median(seconds) if seconds else 0.0
    print(f"median seconds per question: {median:.2f} (max {max(seconds, default=0):.2f})")
    summary.update(overall=[total, len(rows)], crashes=len(crashes), wrong_slot=len(wrong), median_seconds=median)
    return summary


def select(items: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.source:
        items = [i for i in items if i["source"].lower().startswith(args.source.lower())]
    if args.ids:
        wanted = set(args.ids.split(","))
        items = [i for i in items if i["id"] in wanted]
    if args.every > 1:
        items = items[:: args.every]
    return items[: args.limit] if args.limit else items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument(
        "--via",
        choices=["cli", "inprocess"],
        default="cli",
        help="`whyflow ask` subprocesses (default) or the agents in this process",
    )
    parser.add_argument("--llm", choices=["on", "off"], default="off")
    parser.add_argument(
        "--engine",
        choices=["prefect", "local"],
        default="prefect",
        help="`whyflow ask --engine` for --via cli: a Prefect flow run, or the plain runner",
    )
    parser.add_argument("--source", help="only this source (InfiAgent-DABench or QRData; a prefix will do)")
    parser.add_argument("--ids", help="comma-separated ids, e.g. dabench-0,qrdata-314")
    parser.add_argument("--every", type=int, default=1, help="every k-th question (a spread-out subset)")
    parser.add_argument("--limit", type=int, help="at most this many questions")
    parser.add_argument("--jobs", type=int, default=1, help="questions asked at once (cli only)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one question may take")
    parser.add_argument("--json", type=Path, help="write every reply and the summary here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every question's reply")
    args = parser.parse_args(argv)
    if not args.questions.exists():
        print(f"bench_askbench: {args.questions} not found (set WHYFLOW_SHARED to the shared folder)", file=sys.stderr)
        return 2
    items = select(json.loads(args.questions.read_text(encoding="utf-8")), args)
    global ENGINE
    ENGINE = args.engine
    ask = ask_cli if args.via == "cli" else ask_inprocess
    jobs = args.jobs if args.via == "cli" else 1
    with tempfile.TemporaryDirectory(prefix="askbench-") as tmp:

        def one(item: dict[str, Any]) -> dict[str, Any]:
            got = ask(item, args.llm, args.timeout, Path(tmp))
            reply = got["reply"]
            correct = bool(reply) and not reply.lstrip().startswith(DECLINED) and score(item, reply)
            row = {
                "item": item,
                **got,
                "correct": correct,
                "outcome": outcome(item, reply, correct, got.get("output_type")),
                "wrong_slots": wrong_slot(item, reply),
            }
            if args.verbose:
                mark = (
                    {"right": "ok ", "wrong": "BAD", "declined": "no "}[row["outcome"]] if not row["crash"] else "ERR"
                )
                print(
                    f"{mark} {item['id']:14s} {row['seconds']:5.1f}s {reply.strip()[:200]!r}"
                    + ("" if row["correct"] else f"  (gold {item['expected']})"),
                    flush=True,
                )
            return row

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            rows = list(pool.map(one, items))
    summary = report(rows)
    if args.json:
        dump = [
            {
                "id": r["item"]["id"],
                "reply": r["reply"],
                "correct": r["correct"],
                "outcome": r["outcome"],
                "seconds": r["seconds"],
                "crash": r["crash"],
                "wrong_slots": r["wrong_slots"],
            }
            for r in rows
        ]
        args.json.write_text(json.dumps({"summary": summary, "rows": dump}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
