"""A paper's report notebook, generated from its ``experiments.yaml`` and executed to HTML.

:func:`build_notebook` turns a paper spec into a notebook: an overview of the runs table, the
claims table (``tables/claims.md``), and per experiment its description, a summary of its
metrics, one cell per figure (the registry's drawer, :mod:`.registry`, the same code as the
workflow's ``figure`` rule, drawn inline without writing files) and one per table. A new paper,
experiment or figure needs no notebook code. :func:`execute_notebook` runs it with a Jupyter
kernel (nbclient) and :func:`notebook_html` renders it (nbconvert). Paths inside the notebook
are relative to the directory it is executed in (``results/<paper>/``), so the executed
``report.ipynb`` written there opens and re-runs in Jupyter as it is.

The helpers the generated cells call (:func:`show_figures_inline`, :func:`overview`,
:func:`summary_view`, :func:`draw`) are small and public so a researcher can use them in their
own notebook.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

INLINE_DPI = 110
KERNEL = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


# --- helpers called from the notebook's cells -----------------------------------------------

def show_figures_inline(dpi: int = INLINE_DPI) -> None:
    """Display matplotlib ``Figure`` objects (the drawers never use pyplot) as PNG in IPython."""
    from IPython import get_ipython
    from matplotlib.figure import Figure

    shell = get_ipython()
    if shell is None:
        return

    def png(fig: Figure) -> bytes:
        from dpminimax.report.style import paper_style
        buffer = io.BytesIO()
        with paper_style():
            fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
        return buffer.getvalue()

    shell.display_formatter.formatters["image/png"].for_type(Figure, png)


def draw(runs: pd.DataFrame, figure: str, *, experiment: str | None = None,
         reported: str | os.PathLike | None = None, delta: float | None = None):
    """Figure ``figure`` (a key of :data:`.registry.FIGURES`) of one experiment's runs, as the
    workflow draws it (:func:`dpminimax.api.make_figure`) but returned, not written; figures
    drawn from stand-in data are stamped."""
    from dpminimax.report.claims.reference import load_reported
    from dpminimax.report.figures import stamp_standin, standin_datasets
    from dpminimax.report.registry import FigureRequest, get_drawer

    drawer = get_drawer(figure)
    table = runs if experiment is None else runs.loc[runs["experiment"] == experiment]
    fig = drawer(table, FigureRequest(out_paths=[], delta=delta,
                                      reported=load_reported(reported) if reported else None))
    standins = standin_datasets(table)
    if standins:
        stamp_standin(fig, standins)
    return fig


def overview(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (experiment, dataset, method): its budgets, seeds, runs, and whether the
    data was a stand-in."""
    from dpminimax.report.aggregate import epsilon_label

    by = [c for c in ("experiment", "dataset", "method") if c in runs.columns]
    groups = runs.groupby(by, sort=True, dropna=False)
    table = groups.size().rename("runs").to_frame()
    if "epsilon" in runs.columns:
        table["epsilons"] = groups["epsilon"].agg(
            lambda eps: ", ".join(epsilon_label(float(e)) for e in sorted(eps.unique())))
    if "seed" in runs.columns:
        table["seeds"] = groups["seed"].nunique()
    if "data_standin" in runs.columns:
        table["stand-in data"] = groups["data_standin"].agg(lambda s: bool(s.astype(bool).any()))
    return table


def summary_view(summary: pd.DataFrame, experiment: str, digits: int = 3) -> pd.DataFrame:
    """``tables/summary.csv`` of one experiment as a grid: a row per (dataset, method,
    epsilon), a column per metric it measures, cells "mean ± half-width of the 95%
    interval"."""
    part = summary.loc[summary["experiment"] == experiment]
    if part.empty:
        return pd.DataFrame()

    def cell(row) -> str:
        half = (row["ci_high"] - row["ci_low"]) / 2
        if not math.isfinite(row["mean"]):
            return ""
        return (f"{row['mean']:.{digits}f}" if not math.isfinite(half)
                else f"{row['mean']:.{digits}f} ± {half:.{digits}f}")

    from dpminimax.report.aggregate import epsilon_label

    cells = part.assign(value=part.apply(cell, axis=1))
    view = cells.pivot_table(index=["dataset", "method", "epsilon"], columns="metric",
                             values="value", aggfunc="first", sort=True)
    view = view.loc[:, (view != "").any()]       # metrics this experiment does not measure
    return view.rename(index=lambda eps: epsilon_label(float(eps)), level="epsilon")


# --- the generator ------------------------------------------------------------------------------

def build_notebook(spec: Mapping[str, Any], *, results: str = ".",
                   reported: str | None = None, claims: bool = False,
                   source: str | None = None,
                   plugins: Sequence[str] = ()) -> nbformat.NotebookNode:
    """The report notebook of the paper ``spec`` (a loaded ``experiments.yaml``).

    ``results`` is the paper's results directory and ``reported`` the CSV of the numbers the
    paper plotted (overlaid on its figures), both as seen from where the notebook runs;
    ``claims``: include ``tables/claims.md``; ``plugins``: the paper plugin files the
    notebook registers first (:func:`dpminimax.plugins.load_plugins`). Unknown figure or table
    names are an error here, before anything runs.
    """
    from dpminimax.report.registry import get_drawer, get_table

    paper = spec["paper"]
    experiments = spec["experiments"]
    for exp_spec in experiments.values():
        for figure in exp_spec.get("figures", []):
            get_drawer(figure)
        for table in exp_spec.get("tables", []):
            get_table(table)

    where = f" (`{source}`)" if source else ""
    cells = [
        new_markdown_cell(
            f"# {spec.get('title', paper)}\n\n"
            f"Report of paper `{paper}`, generated from its experiments file{where} by "
            "`dpminimax.report.notebook` and executed by the workflow's `notebook` rule. "
            "It reads the results beside it (`runs.parquet`, `tables/`) and draws every figure "
            "with the library's drawers, as the `figure` rule does; nothing is trained here."),
        new_code_cell(
            "from pathlib import Path\n\n"
            f"RESULTS = Path({str(results)!r})\n"
            f"REPORTED = {repr(str(reported)) if reported else None}  "
            "# numbers the paper plotted, overlaid on its figures",
            metadata={"tags": ["parameters"]}),
        new_code_cell(
            "import pandas as pd\n"
            "from IPython.display import Markdown, display\n\n"
            "from dpminimax.report import notebook as nb\n\n"
            + (f"from dpminimax.plugins import load_plugins\n\nload_plugins({list(plugins)!r})"
               "  # the paper's plugins: its methods and figures\n" if plugins else "") +
            "nb.show_figures_inline()\n"
            "pd.set_option(\"display.max_rows\", 200)\n"
            "runs = pd.read_parquet(RESULTS / \"runs.parquet\")\n"
            "summary = pd.read_csv(RESULTS / \"tables\" / \"summary.csv\")\n"
            "nb.overview(runs)"),
    ]
    if claims:
        cells += [
            new_markdown_cell("## Claims: the paper says, we measure"),
            new_code_cell("display(Markdown((RESULTS / \"tables\" / \"claims.md\")"
                          ".read_text(encoding=\"utf-8\")))"),
        ]
    for name, exp_spec in experiments.items():
        cells += _experiment_cells(name, exp_spec)
    notebook = new_notebook(cells=cells, metadata={
        "kernelspec": dict(KERNEL),
        "language_info": {"name": "python"},
        "dpminimax": {"paper": paper},
    })
    nbformat.validate(notebook)
    return notebook


def _experiment_cells(name: str, exp_spec: Mapping[str, Any]) -> list:
    about = " ".join(str(exp_spec.get("description", "")).split())
    methods = exp_spec.get("methods", {})
    lines = [f"## `{name}`", ""]
    if about:
        lines += [about, ""]
    lines += [f"Datasets: {', '.join(f'`{d}`' for d in exp_spec.get('datasets', []))}; "
              f"methods: {', '.join(f'`{m}`' for m in methods)}."]
    cells = [
        new_markdown_cell("\n".join(lines)),
        new_code_cell(f"nb.summary_view(summary, {name!r})"),
    ]
    for figure in exp_spec.get("figures", []):
        cells += [
            new_markdown_cell(f"### `{figure}`\n\nWorkflow output: "
                              f"`figures/{name}/{figure}.pdf` and `.png`."),
            new_code_cell(f"nb.draw(runs, {figure!r}, experiment={name!r}, reported=REPORTED)"),
        ]
    for table in exp_spec.get("tables", []):
        cells += [
            new_markdown_cell(f"### Table `{table}`"),
            new_code_cell(f"pd.read_csv(RESULTS / \"tables\" / {name!r} / \"{table}.csv\")"),
        ]
    return cells


# --- running and rendering ----------------------------------------------------------------------

def execute_notebook(notebook: nbformat.NotebookNode, cwd: str | os.PathLike, *,
                     timeout: int = 600) -> nbformat.NotebookNode:
    """Run every cell in a fresh Jupyter kernel started in ``cwd``; a failing cell raises
    (``nbclient.exceptions.CellExecutionError``, with the cell and its traceback)."""
    from nbclient import NotebookClient

    client = NotebookClient(notebook, timeout=timeout, kernel_name=KERNEL["name"],
                            resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return notebook


def notebook_html(notebook: nbformat.NotebookNode) -> str:
    """The executed notebook as one self-contained HTML page (figures inlined as PNG)."""
    from nbconvert import HTMLExporter

    html, _ = HTMLExporter().from_notebook_node(notebook)
    return html


def figure_cells(notebook: nbformat.NotebookNode) -> Sequence[str]:
    """The sources of the notebook's figure cells (one per figure of the spec)."""
    return [c.source for c in notebook.cells
            if c.cell_type == "code" and c.source.startswith("nb.draw(")]


def relative(path: str | os.PathLike, start: str | os.PathLike) -> str:
    """``path`` as seen from directory ``start`` (POSIX separators, for notebook cells)."""
    return Path(os.path.relpath(Path(path).resolve(), Path(start).resolve())).as_posix()
