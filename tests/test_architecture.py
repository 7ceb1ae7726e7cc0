"""The import graph has no circles, no module is packed past the size of one idea, and the
package's import names are its own.

The layer contracts themselves are import-linter's (``[tool.importlinter]`` in pyproject.toml,
run by ``make lint``); this checks what they cannot: that no group of modules imports one
another in a circle, counting imports inside functions too (a lazy import still ties the two
modules together), and that a module over 500 lines is one the project has looked at and judged
to be one idea (listed in :data:`ONE_IDEA` with the reason) — a smell detector, never a reason
to split an idea or to add a module that only re-exports another.
"""

from __future__ import annotations

from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 500
ONE_IDEA: dict[str, str] = {
    "whyflow/causal/review/sensitivity_analyst.py": "one agent: it runs its four analyses (E-values, Rosenbaum "
    "bounds, the refuters, a simulated unobserved confounder) on the headline's sample and words each result; "
    "their statistics live in review/sensitivity.py and review/refuters.py",
    "benchmarks/truth_kinds.py": "one registry: every generated study with its known truth, each kind a short "
    "generator beside the table (KINDS) that the truth benchmark, the oracles and tests/test_truth_kinds.py read",
    "whyflow/ask/tools/plain_questions.py": "one reader: the plain-question grammar (population, conditional share, "
    "contrast, conditions) walks one question's words once in _Reader, and every structure it reads must account "
    "for the same words; the word lists live in plain_words.py and wording.py, the spec in plain_spec.py",
    "whyflow/causal/review/rules.py": "one decision: the critique's six scored dimensions and its blockers write "
    "into one Findings and are weighed together by review(); the doubts they quote live in review/doubts.py and "
    "the statistics behind them in their own modules",
    "tests/flows/test_deployments.py": "deployments through one real Prefect server and worker, started once for "
    "the module (a stack costs tens of seconds): the trigger, reuse, cancel, init-folder and scheduled-source runs "
    "share it and its helpers",
}
"""Modules allowed past :data:`MAX_LINES`, each with why it is still one idea."""


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_import_circles() -> None:
    graph = grimp.build_graph("whyflow")
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "a.one", "a.two", "a.three"):
        graph.add_module(name)
    graph.add_import(importer="a.one", imported="a.two")
    graph.add_import(importer="a.two", imported="a.one")
    graph.add_import(importer="a.three", imported="a.one")
    assert _circles(graph) == [["a.one", "a.two"]]


def test_no_module_over_500_lines_unless_judged_one_idea() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for folder in ("whyflow", "tests", "benchmarks")
        for p in (ROOT / folder).rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert set(long) <= set(ONE_IDEA), {k: v for k, v in long.items() if k not in ONE_IDEA}


def test_one_top_level_package_of_our_own() -> None:
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert packages - {"tests"} == {"whyflow"}
