"""Rendering Jinja templates into nbformat notebooks, executing them and exporting HTML.

Templates mark cells with the ``markdown()`` and ``code()`` macros of ``templates/macros.j2`` (beside this module);
the macros wrap their body in marker lines that :func:`split_cells` turns into nbformat v4
cells. A user folder is searched before the built-in templates (a Jinja ``ChoiceLoader``), and
the built-ins stay reachable under the ``builtin/`` prefix, so a user section can
``{% extends "builtin/sections/20_eda.j2" %}`` and override one block.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whyflow.core.errors import AgentError
from whyflow.core.numbers import fmt_number

__all__ = [
    "BUILTIN_TEMPLATES",
    "ExecutionReport",
    "build_notebook",
    "execute_notebook",
    "export_html",
    "headline_reproduced",
    "html_exporter",
    "jsonable",
    "make_environment",
    "render_template",
    "split_cells",
    "write_notebook",
]

BUILTIN_TEMPLATES = "whyflow/causal/report/templates"
"""Where the templates shipped with whyflow live: package data of this package, read through
importlib.resources (Jinja's ``PackageLoader``), so an installed wheel finds them anywhere."""

_MARKER = re.compile(r"^<<<whyflow:(markdown|code|raw)(?: tags=([\w,\-]*))?>>>\s*$")
_END = "<<<whyflow:end>>>"


@dataclass
class ExecutionReport:
    """What happened when the notebook ran: errors per cell and whether it finished."""

    executed: bool = False
    completed: bool = False
    errors: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""
    warm_kernel: bool = False
    """The kernel was started when the run started (:mod:`whyflow.causal.report.kernels`)."""


# ---- formatting filters -----------------------------------------------------------------------
def fmt_num(value: Any, digits: int = 3) -> str:
    """A number for prose (:func:`whyflow.core.numbers.fmt_number`, the one formatter)."""
    return fmt_number(value, digits)


def fmt_pct(value: Any, decimals: int = 1) -> str:
    """A share in [0, 1] as a percentage."""
    if value is None:
        return "n/a"
    return f"{100 * float(value):.{decimals}f}%"


def fmt_p(value: Any) -> str:
    """A p-value the way papers write it."""
    if value is None:
        return "n/a"
    p = float(value)
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def md_escape(value: Any) -> str:
    """Text safe inside a Markdown table cell."""
    return str(value).replace("|", "\\|").replace("\n", " ")


# ---- rendering --------------------------------------------------------------------------------
def make_environment(template_dir: str | Path | None = None) -> Any:
    """A Jinja environment: the user's folder first, then the built-ins (also as ``builtin/``)."""
    import jinja2

    loaders: list[Any] = []
    if template_dir is not None:
        folder = Path(template_dir).expanduser()
        if not folder.is_dir():
            raise AgentError(f"notebook template_dir {folder} is not a folder")
        loaders.append(jinja2.FileSystemLoader(str(folder)))
    builtin = jinja2.PackageLoader(__package__ or "whyflow.causal.report", "templates")
    loaders += [builtin, jinja2.PrefixLoader({"builtin": builtin})]
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.ChainableUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters.update(num=fmt_num, pct=fmt_pct, pval=fmt_p, md=md_escape, py=repr)
    return env


def render_template(env: Any, template: str, context: dict[str, Any]) -> str:
    """Render ``template`` (a name the loaders know, or a path to a file) with ``context``."""
    import jinja2

    path = Path(template).expanduser()
    try:
        if path.is_file() and not _known(env, template):
            tpl = env.from_string(path.read_text(encoding="utf-8"))
        else:
            tpl = env.get_template(template)
        return str(tpl.render(**context))
    except jinja2.TemplateNotFound as exc:
        raise AgentError(
            f"notebook template '{exc.name}' not found (searched the template_dir and {BUILTIN_TEMPLATES})"
        ) from exc
    except jinja2.TemplateSyntaxError as exc:
        raise AgentError(
            f"notebook template {exc.filename or exc.name or template}:{exc.lineno}: {exc.message}"
        ) from exc


def _known(env: Any, name: str) -> bool:
    import jinja2

    try:
        env.get_template(name)
    except (jinja2.TemplateNotFound, ValueError):
        return False
    return True


def split_cells(text: str) -> list[dict[str, Any]]:
    """Split rendered text into ``{"kind", "source", "tags"}`` cells at the macro markers.

    Blank text between cells is ignored; any other text outside a cell is an error naming its
    line, because it would silently vanish from the notebook.
    """
    cells: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    lines: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _MARKER.match(line.strip())
        if match and current is None:
            current = {"kind": match.group(1), "tags": [t for t in (match.group(2) or "").split(",") if t]}
            lines = []
        elif line.strip() == _END and current is not None:
            current["source"] = "\n".join(lines).strip("\n")
            if current["source"].strip():
                cells.append(current)
            current = None
        elif current is not None:
            lines.append(line)
        elif line.strip():
            raise AgentError(
                f"notebook template produced text outside a cell at rendered line {number}: {line.strip()[:80]!r}"
            )
    if current is not None:
        raise AgentError("notebook template left a cell open (a markdown()/code() call without its end)")
    return cells


def build_notebook(cells: list[dict[str, Any]], metadata: dict[str, Any] | None = None) -> Any:
    """An nbformat v4 notebook from split cells, with the python3 kernelspec."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    makers = {
        "markdown": nbformat.v4.new_markdown_cell,
        "code": nbformat.v4.new_code_cell,
        "raw": nbformat.v4.new_raw_cell,
    }
    for cell in cells:
        new = makers[cell["kind"]](cell["source"])
        if cell["tags"]:
            new.metadata["tags"] = list(cell["tags"])
        nb.cells.append(new)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["whyflow"] = dict(metadata or {})
    nbformat.validate(nb)
    return nb


# ---- execution and export ----------------------------------------------------------------------
def execute_notebook(nb: Any, job_dir: Path, timeout: int) -> ExecutionReport:
    """Run every cell in ``job_dir`` (errors are recorded per cell, never raised).

    Cells keep running after a failing one (``allow_errors``) so the report shows as much as
    it can; each failing cell is returned with its index, error name, value and source.
    """
    from nbclient import NotebookClient

    from whyflow.causal.report.kernels import kernel_env, new_kernel_manager, shut_down, take_warm_kernel

    report = ExecutionReport(executed=True)
    km = take_warm_kernel(job_dir)  # started when the run started, its imports done
    report.warm_kernel = km is not None
    if km is None:
        km = new_kernel_manager(job_dir)
    client = NotebookClient(
        nb,
        km=km,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        shutdown_kernel="immediate",  # every reply is in when execute() returns: a graceful shutdown only waited 0.6 s
        resources={"metadata": {"path": str(job_dir)}},
    )
    log = (job_dir / ".jupyter" / "kernel.log").open("ab")
    try:
        # cleanup_kc: shut the kernel down even though we passed our own kernel manager.
        _off_the_main_thread(lambda: client.execute(cleanup_kc=True, env=kernel_env(job_dir), stdout=log, stderr=log))
        report.completed = True
    except Exception as exc:  # noqa: BLE001 - a timeout or dead kernel must not lose the report
        report.message = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
    finally:
        log.close()
        import atexit

        atexit.unregister(client._cleanup_kernel)  # a killed kernel (time limit) skips nbclient's own unregister
        shut_down(km)
    report.errors = cell_errors(nb)
    if not report.completed and not report.errors:
        report.errors = [{"cell": None, "ename": "ExecutionStopped", "evalue": report.message, "source": ""}]
    return report


def _off_the_main_thread(run: Callable[[], object]) -> None:
    """Call ``run`` on a thread of its own and wait for it (directly where this is not the main thread).

    While it executes, nbclient hands SIGINT and SIGTERM to the main thread's event loop, taking
    them from whyflow's handlers (:mod:`whyflow.flows.running.interrupts`): a run signalled then ended neither
    cancelled nor failed, with a ``CancelledError`` traceback. Off the main thread it adds no
    handlers; a signal interrupts the wait here, the kernel is killed so that the thread ends at
    once, and the interrupt goes on to the runner.
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        run()
        return
    failed: list[BaseException] = []

    def target() -> None:
        try:
            run()
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=target, name="notebook-execution", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except BaseException:
        from whyflow.runtime.children import kill_kernels

        kill_kernels()
        worker.join(5)
        raise
    if failed:
        raise failed[0]


def cell_errors(nb: Any) -> list[dict[str, Any]]:
    """Every code cell of ``nb`` with an error output: index, error name, value and source head."""
    errors = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                errors.append(
                    {
                        "cell": index,
                        "ename": out.get("ename", ""),
                        "evalue": str(out.get("evalue", ""))[:500],
                        "source": cell.source[:300],
                    }
                )
    return errors


def html_exporter(warm: bool = False) -> Any:
    """nbconvert's HTML exporter as :func:`export_html` uses it (the lab template, :func:`_clean_html`).

    With ``warm`` it first exports a two-cell notebook: an exporter's first export compiles the
    lab template's parts, Pygments' lexer and BeautifulSoup's selectors, 0.3 s on top of the 0.36 s
    an export of the 100,000-row report takes. The notebook agent builds it on a thread while the
    kernel executes the report and the agent's own thread only waits.
    """
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", filters={"clean_html": _clean_html})
    if warm:
        import nbformat

        cell = nbformat.v4.new_code_cell("print(1)")
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
        exporter.from_notebook_node(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# *x*"), cell]))
    return exporter


def export_html(nb: Any, path: Path, exporter: Any = None) -> Path:
    """Write ``nb`` as one standalone HTML file (nbconvert's lab template, images inlined).

    The lab template passes every code cell's Pygments-highlighted source through bleach
    (``clean_html``), which was more than half the export's time; Pygments has already escaped
    that source, so :func:`_clean_html` skips bleach for it and cleans anything else as before.
    ``exporter`` is one from :func:`html_exporter` (a new one by default).
    """
    body, _ = (exporter or html_exporter()).from_notebook_node(nb)
    path.write_text(body, encoding="utf-8")
    return path


_HIGHLIGHTED = re.compile(r'<div class="[\w -]*\bhighlight\b[\w -]*"><pre>(?:<span></span>)?')


def _clean_html(element: Any) -> str:
    """nbconvert's ``clean_html``, except for Pygments output (escaped already) which passes as is.

    Pygments writes only ``<span class="...">`` tags and escaped text inside its ``<div
    class="highlight"><pre>``; any other tag in it sends the text through bleach as before.
    """
    from nbconvert.filters.strings import clean_html

    text = element.decode() if isinstance(element, bytes) else str(element)
    match = _HIGHLIGHTED.match(text)
    if match and _PYGMENTS_ONLY.fullmatch(text[match.end() :]):
        return text
    return str(clean_html(text))


_PYGMENTS_ONLY = re.compile(r'(?:[^<]++|<span class="[\w -]*">|</span>)*+</pre></div>\s*')


def write_notebook(nb: Any, path: Path) -> None:
    """Write ``nb`` atomically (a reader never sees half a file)."""
    import nbformat

    tmp = path.with_suffix(".ipynb.tmp")
    nbformat.write(nb, str(tmp))
    tmp.replace(path)


def headline_reproduced(nb: Any) -> bool | None:
    """True when the headline-check cell printed its success line, None when there is none."""
    for cell in nb.cells:
        if "headline-check" in cell.metadata.get("tags", []):
            text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
            return "Reproduced:" in text
    return None


def jsonable(value: Any) -> Any:
    """Pydantic models, datetimes and containers of them as plain JSON values."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value
