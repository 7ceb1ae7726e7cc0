"""How long a deterministic answer takes: `whyflow ask` per engine (start-up included) and `whyflow serve`.

Asks ten questions of ``benchmarks/ask_questions.yaml`` about the public DABench/QRData files in
``../shared/datasets/public/`` (no model) and prints, per way of asking, the median and 90th
percentile of the wall seconds and of the CPU seconds (this process's children: whyflow, its
sandbox children and any Prefect server). CPU seconds hardly move with the machine's load; wall
seconds do, so the load average is printed with them.

- ``cli-local``: ``whyflow ask --engine local`` (the plain runner, no Prefect; the default when
  no Prefect server is configured);
- ``cli-prefect``: ``whyflow ask --engine prefect`` (a flow run; with no ``PREFECT_API_URL`` a
  temporary Prefect server per question, as a user without a server gets with this flag);
- ``serve-local`` / ``serve-prefect``: one ``whyflow serve --engine E`` process, a chat session
  per file (uploaded once), each question sent over the WebSocket and timed until ``done``. The
  first question of the server is reported apart (imports, the sandbox's first start); the
  median and p90 are of the others, i.e. warm.

    .venv/bin/python benchmarks/bench_ask_latency.py                       # cli-local, serve-local
    .venv/bin/python benchmarks/bench_ask_latency.py --modes all --repeat 2
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
WHYFLOW = [sys.executable, "-m", "whyflow.cli.main"]
QUESTIONS = ("t01", "t03", "t10", "i01", "i03", "m02", "m06", "a01", "a04", "c03")
MODES = ("cli-local", "cli-prefect", "serve-local", "serve-prefect")


def load_questions(ids: tuple[str, ...] = QUESTIONS) -> list[tuple[str, Path, str]]:
    """(id, data file, question) of ``ids`` whose data file exists (the shared datasets beside the checkout)."""
    spec = yaml.safe_load((ROOT / "benchmarks" / "ask_questions.yaml").read_text(encoding="utf-8"))
    by_id = {q["id"]: q for q in spec["questions"]}
    out = []
    for qid in ids:
        q = by_id.get(qid)
        source = spec["datasets"].get(q["data"], {}) if q else {}
        if q is None or "path" not in source:
            continue
        path = (ROOT / source["path"]).resolve()
        if path.exists():
            out.append((qid, path, q["question"]))
    return out


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for key, value in {
        "PREFECT_HOME": ROOT / ".prefect",
        "MPLCONFIGDIR": ROOT / ".mplconfig",
        "JUPYTER_RUNTIME_DIR": ROOT / ".jupyter" / "runtime",
        "IPYTHONDIR": ROOT / ".ipython",
    }.items():
        env.setdefault(key, str(value))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    env.setdefault("WHYFLOW_LLM", "off")
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# ---- the command line --------------------------------------------------------------------------
def time_cli(engine: str, questions: list[tuple[str, Path, str]], work: Path, repeat: int) -> list[dict[str, Any]]:
    rows = []
    for r in range(repeat):
        for qid, path, question in questions:
            out = work / f"cli-{engine}-{qid}-{r}"
            cmd = [
                *WHYFLOW,
                "--runs-dir",
                str(work / "runs"),
                "ask",
                "--engine",
                engine,
                "--data",
                str(path),
                question,
                "-o",
                str(out),
            ]
            cpu, start = _children_cpu(), time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=600)
            wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
            answer = _answer(out)
            rows.append(
                {
                    "id": qid,
                    "wall": wall,
                    "cpu": cpu,
                    "code": proc.returncode,
                    "answer": answer,
                    "note": next((line for line in proc.stderr.splitlines() if line.startswith("engine:")), ""),
                }
            )
            print(
                f"  cli-{engine} {qid}: {wall:5.2f} s wall, {cpu:5.2f} s cpu, exit {proc.returncode}: {answer[:70]}",
                flush=True,
            )
    return rows


def _answer(out: Path) -> str:
    with contextlib.suppress(OSError, ValueError):
        return str(json.loads((out / "answer.json").read_text())["answer"]).replace("\n", " ")
    return "(no answer.json)"


# ---- the chat server ---------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def time_serve(engine: str, questions: list[tuple[str, Path, str]], work: Path, repeat: int) -> list[dict[str, Any]]:
    import httpx
    from websockets.sync.client import connect

    port, data_dir = _free_port(), work / f"serve-{engine}"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*WHYFLOW, "serve", "--port", str(port), "--data-dir", str(data_dir), "--engine", engine],
        env=_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    rows: list[dict[str, Any]] = []
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"whyflow serve exited: {proc.stdout.read().decode()[-2000:] if proc.stdout else ''}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        print(f"  serve-{engine}: up after {time.perf_counter() - started:.1f} s", flush=True)
        sessions: dict[Path, str] = {}
        for _, path, _ in questions:
            if path not in sessions:
                res = httpx.post(
                    base + "/api/sessions", params={"filename": path.name}, content=path.read_bytes(), timeout=120
                )
                sessions[path] = res.json()["session"]["id"]
        for _ in range(repeat):
            for qid, path, question in questions:
                with connect(f"ws://127.0.0.1:{port}/ws/{sessions[path]}") as ws:
                    start = time.perf_counter()
                    ws.send(json.dumps({"type": "message", "text": question}))
                    events = []
                    while True:
                        event = json.loads(ws.recv(timeout=300))
                        events.append(event)
                        if event["type"] == "done":
                            break
                    wall = time.perf_counter() - start
                texts = [e.get("text", "") for e in events if e["type"] == "text"]
                errors = [e.get("message", "") for e in events if e["type"] == "error"]
                answer = (texts[-1] if texts else f"error: {errors[-1] if errors else '?'}").replace("\n", " ")
                rows.append(
                    {
                        "id": qid,
                        "wall": wall,
                        "cpu": None,
                        "code": 0 if texts else 1,
                        "answer": answer,
                        "first": not rows,
                    }
                )
                print(f"  serve-{engine} {qid}: {wall:5.2f} s: {answer[:80]}", flush=True)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return rows


# ---- the report --------------------------------------------------------------------------------
def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.9 * len(ordered) + 0.5) - 1))]


def summary(mode: str, rows: list[dict[str, Any]]) -> str:
    warm = [r for r in rows if not r.get("first")]
    walls = [r["wall"] for r in warm]
    cpus = [r["cpu"] for r in warm if r["cpu"] is not None]
    answered = sum(1 for r in rows if r["code"] == 0)
    line = f"{mode:14s} n={len(walls):2d}  wall median {statistics.median(walls):5.2f} s  p90 {_p90(walls):5.2f} s"
    if cpus:
        line += f"  | cpu median {statistics.median(cpus):5.2f} s  p90 {_p90(cpus):5.2f} s"
    first = [r for r in rows if r.get("first")]
    if first:
        line += f"  | first question {first[0]['wall']:.2f} s"
    return line + f"  | answered {answered}/{len(rows)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--modes",
        default="cli-local,serve-local",
        help=f"comma-separated, of {', '.join(MODES)}, or all (default cli-local,serve-local)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="ask every question this many times (default 1)")
    parser.add_argument("--limit", type=int, default=len(QUESTIONS), help="the first N questions only")
    parser.add_argument("--json", help="also write every timing to this file")
    args = parser.parse_args(argv)
    modes = list(MODES) if args.modes == "all" else [m.strip() for m in args.modes.split(",") if m.strip()]
    if unknown := [m for m in modes if m not in MODES]:
        parser.error(f"unknown mode(s): {', '.join(unknown)}")
    questions = load_questions()[: args.limit]
    if not questions:
        print("no question's data file found (../shared/datasets/public beside the checkout)", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="whyflow-latency-") as tmp:
        for mode in modes:
            kind, engine = mode.split("-")
            timer = time_cli if kind == "cli" else time_serve
            results[mode] = timer(engine, questions, Path(tmp), args.repeat)
    load_after = os.getloadavg()
    print(
        f"\n{len(questions)} questions x {args.repeat}; {os.cpu_count()} CPUs; load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    for mode, rows in results.items():
        print(summary(mode, rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"load": [load_before, load_after], "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
