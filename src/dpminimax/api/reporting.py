"""The reporting side of :mod:`dpminimax.api`: aggregate the runs, draw figures, write tables,
claims and the report notebook. Imports neither torch nor the algorithms, so each of a grid's
report jobs starts in about a second; matplotlib and the registries load when called."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dpminimax.api.columns import RUN_COLUMNS
from dpminimax.atomic import atomic_path, write_parquet

log = logging.getLogger(__name__)


def aggregate(
    metric_paths: Sequence[str | Path], attack_paths: Sequence[str | Path], out_path: str | Path
) -> pd.DataFrame:
    """Join every job's metrics and attack rows into the paper's long results table."""
    from dpminimax.report import concat_results
    metrics = concat_results(metric_paths)
    attacks = concat_results(attack_paths) if attack_paths else None
    if attacks is not None:
        extra = [c for c in attacks.columns if c not in metrics.columns]
        metrics = metrics.merge(attacks[list(RUN_COLUMNS) + extra], on=list(RUN_COLUMNS),
                                how="left", validate="one_to_one")
    write_parquet(metrics, out_path)
    return metrics


def make_figure(
    runs_path: str | Path, figure: str, out_paths: Sequence[str | Path], *,
    experiment: str | None = None, delta: float | None = None,
    reported: str | Path | None = None,
) -> None:
    """Draw figure ``figure`` (a key of :data:`dpminimax.report.registry.FIGURES`) from the runs
    table; ``reported`` is a CSV of the numbers a paper plotted, overlaid on trade-off figures
    and labelled "reported"."""
    from dpminimax.report.claims.reference import load_reported
    from dpminimax.report.figures import (
        save_figure,
        stamp_seeds,
        stamp_standin,
        standin_datasets,
    )
    from dpminimax.report.registry import FigureRequest, get_drawer

    draw = get_drawer(figure)
    table = pd.read_parquet(runs_path)
    if experiment is not None:
        table = table.loc[table["experiment"] == experiment]
    # the drawer saves nothing (out_paths=[]): the figure is saved once, after its stamps
    fig = draw(table, FigureRequest(out_paths=[], delta=delta,
                                    reported=load_reported(reported) if reported else None))
    stamp_seeds(fig, table)
    standins = standin_datasets(table)
    if standins:  # never let a stand-in figure pass for a result
        stamp_standin(fig, standins)
    save_figure(fig, list(out_paths))


def make_experiment_table(runs_path: str | Path, name: str, out_path: str | Path, *,
                          experiment: str) -> pd.DataFrame:
    """Table ``name`` (a key of :data:`dpminimax.report.registry.TABLES`) of one experiment's
    runs, written as CSV."""
    from dpminimax.report import write_table
    from dpminimax.report.registry import get_table

    compute = get_table(name)
    table = pd.read_parquet(runs_path)
    result = compute(table.loc[table["experiment"] == experiment])
    write_table(result, out_path)
    return result


def make_claims_table(claims_path: str | Path, runs_path: str | Path, csv_out: str | Path,
                      markdown_out: str | Path, measured_paths: Sequence[str | Path] = (),
                      measured: Mapping[str, float | Mapping[str, float]] | None = None, *,
                      data_meta_paths: Sequence[str | Path] = (),
                      reported: str | Path | None = None) -> pd.DataFrame:
    """The paper-says / we-measure table of ``claims.yaml`` against the runs table (CSV, and
    Markdown with the paper's scorecard on top), each claim decided by its 95% interval and
    beside its trivial baseline (:mod:`dpminimax.report.claims.claims`). Values no runs column holds
    are computed here: DP-FERMI's performance gains and the trade-off curves' dominance
    (``{value, low, high}`` with a bootstrap over seeds; ``reported``: the CSV of the numbers
    the paper plotted, the baselines of some dominance claims), dataset facts from the prepared
    data's ``data_meta_paths`` (``meta.json``), the bilevel schedule pilot's freeze;
    ``measured_paths`` are JSON files with a ``claims`` dict (benchmarks) and ``measured`` adds
    any other values, by claim id (a float, or ``{value, low, high}``)."""
    from dpminimax.report.bilevel.collapse import alpha_pred_experiments, with_alpha_pred
    from dpminimax.report.bilevel.pilot import measured_freezes
    from dpminimax.report.claims.claims import claims_table, write_claims_table
    from dpminimax.report.claims.reference import load_claims, load_reported
    from dpminimax.report.compare.dominance import measured_dominance
    from dpminimax.report.compare.gain import (
        gain_experiments,
        measured_crossed_gains,
        measured_gains,
    )
    from dpminimax.report.dataset_facts import measured_facts, read_dataset_facts

    runs = pd.read_parquet(runs_path)
    from_files = {k: v for path in measured_paths
                  for k, v in json.loads(Path(path).read_text())["claims"].items()}
    measured = {**from_files, **(measured or {})}
    if "data_standin" in runs.columns:  # stand-in runs measure nothing the paper claims
        runs = runs.loc[~runs["data_standin"].astype(bool)]
    claims = load_claims(claims_path)
    if experiments := alpha_pred_experiments(claims):  # DP bilevel's Thm. 4.1 collapse claims
        runs = with_alpha_pred(runs, experiments)
    plotted = load_reported(reported) if reported else None
    values = {**measured_gains(runs, gain_experiments(claims)), **measured_freezes(runs, claims),
              **measured_crossed_gains(runs, claims, reported=plotted),
              **measured_dominance(runs, claims, reported=plotted),
              **measured_facts(claims, read_dataset_facts(data_meta_paths)),
              **(measured or {})}
    known = {claim["id"] for claim in claims}
    table = claims_table(claims, runs, measured={k: v for k, v in values.items() if k in known})
    write_claims_table(table, csv_out, markdown_out)
    return table


def make_table(runs_path: str | Path, out_path: str | Path) -> pd.DataFrame:
    """Mean, spread and 95% interval over seeds of every metric, per method and epsilon, and
    of its trivial baseline (``trivial_<metric>``) where the runs have one."""
    from dpminimax.report import series_table, summarize, write_table
    from dpminimax.trivial import column

    table = series_table(pd.read_parquet(runs_path))
    listed = ("test_accuracy", "test_error", "dp_violation", "eo_violation", "train_loss",
              "attack_auc", "attack_tpr_at_1pct_fpr", "excess_population_risk",
              "excess_empirical_risk", "population_strong_gap", "empirical_strong_gap",
              "population_primal_gap", "gradient_mapping_norm", "inner_error_max",
              "epsilon_spent", "epsilon_paper_accounting")
    metric_columns = [c for metric in listed for c in (metric, column(metric))
                      if c in table.columns]
    summary = summarize(table, metric_columns,
                        by=["experiment", "dataset", "method", "epsilon"])
    write_table(summary, out_path)
    return summary


def make_notebook(experiments_path: str | Path, html_out: str | Path, *,
                  notebook_out: str | Path | None = None,
                  reported: str | Path | None = None, claims: bool = False,
                  experiments: Sequence[str] | None = None, timeout: int = 600) -> None:
    """The paper's report notebook (:func:`dpminimax.report.notebook.build_notebook` from its
    ``experiments.yaml``), executed in the directory of ``html_out`` (the paper's results
    directory, holding ``runs.parquet`` and ``tables/``) and written there as HTML, and as the
    executed ``.ipynb`` if ``notebook_out`` is given. ``reported``: the CSV of the numbers the
    paper plotted; ``claims``: include ``tables/claims.md``; ``experiments``: only these (the
    workflow config's ``experiments:`` selection)."""
    import nbformat

    from dpminimax.experiments import load_experiments, select_experiments
    from dpminimax.plugins import plugin_paths
    from dpminimax.report.notebook import (
        build_notebook,
        execute_notebook,
        notebook_html,
        relative,
    )

    where = Path(html_out).parent
    notebook = build_notebook(
        select_experiments(load_experiments(experiments_path),
                           None if experiments is None else list(experiments)),
        results=".", claims=claims,
        reported=relative(reported, where) if reported else None,
        source=Path(experiments_path).as_posix(),
        plugins=[str(path.resolve()) for path in plugin_paths()])
    execute_notebook(notebook, where, timeout=timeout)
    with atomic_path(html_out) as tmp:
        tmp.write_text(notebook_html(notebook), encoding="utf-8")
    if notebook_out is not None:
        with atomic_path(notebook_out) as tmp:
            nbformat.write(notebook, str(tmp))


def make_lira_report(metric_paths: Sequence[str | Path], roc_paths: Sequence[str | Path],
                     csv_out: str | Path, figure_out: Sequence[str | Path]) -> pd.DataFrame:
    """The paper's LiRA table and figure from its per-epsilon attack files (issue #23). A real
    method's row above the (epsilon, delta)-DP ceiling beyond its bounds is logged as a warning
    (the thresholds are set on the same rows: evidence, not a proof); a noise-off control's is
    the attack seeing the leak, as it should, and a control no attack flags on the planted
    canaries is a warning (the attack lacks power)."""
    from dpminimax.report.attacks.lira import draw_lira, lira_summary

    metrics = pd.concat([pd.read_parquet(path) for path in metric_paths], ignore_index=True)
    roc = pd.concat([pd.read_parquet(path) for path in roc_paths], ignore_index=True)
    table = lira_summary(metrics)
    with atomic_path(csv_out) as tmp:
        table.to_csv(tmp, index=False)
    draw_lira(metrics, roc, figure_out)
    above = table[table["above_ceiling"] & (table["control"] == "none")]
    if len(above):
        log.warning("LiRA above the DP ceiling beyond its interval for %s (table: %s)",
                    _lira_rows(above), csv_out)
    controls = table[(table["control"] != "none") & (table["targets"] == "canaries")]
    unseen = controls.groupby(["method", "epsilon"])["above_ceiling"].any()
    if (~unseen).any():
        log.warning("LiRA did not see the leak of the noise-off control(s) %s on the planted "
                    "canaries: the attack has no power there (table: %s)",
                    [f"{method}@{eps}" for method, eps in unseen[~unseen].index], csv_out)
    return table


def _lira_rows(rows: pd.DataFrame) -> list[str]:
    """``method@epsilon:attack (targets)`` of LiRA table rows."""
    return (rows["method"] + "@" + rows["epsilon"].astype(str) + ":" + rows["attack"]
            + " (" + rows["targets"] + ")").tolist()


def report_status(targets: Sequence[str], requires: Mapping[str, Sequence[str]],
                  runs: Mapping[str, tuple[Sequence[str], Mapping[str, Mapping[str, Any]]]],
                  code_version: str, out_path: str | Path) -> pd.DataFrame:
    """What a Snakemake report of a (partial or failed) run can show, and what it cannot.

    ``targets``: the outputs the configured plan reports; ``requires``: a target's report
    inputs (without them it is left out); ``runs``: per ``runs.parquet``, the targets drawn from
    it and, per ``metrics.parquet`` of a training job the plan feeds into it, the job's planned
    run configuration (what ``run_config.json`` beside it must record). A target is *missing*
    (not written), *stale* (written, but older than its runs.parquet, or drawn from a
    runs.parquet that lacks planned jobs, is older than one of their results, holds jobs that
    are not in the plan or was trained by other code or with another configuration; or a
    report input is missing) or *ok*; ``in_report``: written, with its report inputs (what a
    report can show). Writes an HTML page listing the missing and stale ones; returns the
    table (``output``, ``status``, ``reason``, ``in_report``)."""
    reasons = {path: _runs_problems(Path(path), planned, code_version)
               for path, (_, planned) in runs.items()}
    drawn_from = {target: path for path, (drawn, _) in runs.items() for target in drawn}
    rows = []
    for target in targets:
        path = Path(target)
        reason, absent = "", []
        if not path.exists():
            status = "missing"
        else:
            absent = [r for r in requires.get(target, ()) if not Path(r).exists()]
            source = drawn_from.get(target)
            if absent:
                reason = f"its input {absent[0]} is missing"
            elif source is not None and reasons[source]:
                reason = f"{source}: {reasons[source]}"
            elif source is not None and path.stat().st_mtime < Path(source).stat().st_mtime:
                reason = f"older than {source} (drawn before the last aggregation)"
            status = "stale" if reason else "ok"
        rows.append({"output": target, "status": status, "reason": reason,
                     "in_report": status != "missing" and not absent})
    table = pd.DataFrame(rows, columns=["output", "status", "reason", "in_report"])
    with atomic_path(out_path) as tmp:
        Path(tmp).write_text(_status_page(table))
    return table


#: The columns of runs.parquet that name a training job (with its epsilon).
JOB_COLUMNS = ("experiment", "dataset", "method")


def _runs_problems(runs: Path, planned: Mapping[str, Mapping[str, Any]],
                   code_version: str) -> str:
    """Why the figures and tables drawn from ``runs`` do not show the planned results ('' if
    they do): it or planned training results missing, results newer than it, jobs of another
    plan in it, jobs trained by other code or with another configuration."""
    if not runs.exists():
        return "missing"
    absent = [m for m in planned if not Path(m).exists()]
    if absent:
        return (f"{len(absent)} of {len(planned)} planned training jobs have no results "
                f"(failed or not run), e.g. {Path(absent[0]).parent}")
    newer = [m for m in planned if Path(m).stat().st_mtime > runs.stat().st_mtime]
    if newer:
        return f"{len(newer)} training results are newer than it (not aggregated)"
    other = {m: key for m, config in planned.items()
             if (key := _config_difference(Path(m).parent / "run_config.json", config))}
    if other:
        metrics, key = next(iter(other.items()))
        return (f"{len(other)} training jobs ran with another configuration or code, e.g. "
                f"{Path(metrics).parent} ({key})")
    frame = pd.read_parquet(runs)
    codes = sorted(set(frame.get("code_version", pd.Series(dtype=str))) - {code_version})
    if codes:
        return f"trained by code {codes[0]}, not this code ({code_version})"
    if set(JOB_COLUMNS) <= set(frame.columns):
        jobs = {tuple(config[c] for c in JOB_COLUMNS) for config in planned.values()}
        extra = set(frame[list(JOB_COLUMNS)].itertuples(index=False, name=None)) - jobs
        if extra:
            return (f"holds {len(extra)} jobs that are not in this plan (another "
                    f"configuration), e.g. {'/'.join(map(str, sorted(extra)[0]))}")
    return ""


def _config_difference(recorded_path: Path, planned: Mapping[str, Any]) -> str:
    """The first key of ``planned`` that the recorded run configuration differs on ('' if
    none; 'run_config.json' if it was not written)."""
    if not recorded_path.exists():
        return "no run_config.json"
    recorded = json.loads(recorded_path.read_text())
    planned = json.loads(json.dumps(planned))  # as JSON records it: lists, not tuples
    return next((key for key, value in planned.items() if recorded.get(key) != value), "")


def _status_page(table: pd.DataFrame) -> str:
    """The HTML page of :func:`report_status`: the counts, then each missing or stale output."""
    import html

    counts = table["status"].value_counts()
    shown = table[table["status"] != "ok"]
    rows = "".join(f"<tr><td>{html.escape(r.output)}</td><td>{r.status}</td>"
                   f"<td>{html.escape(r.reason)}</td></tr>" for r in shown.itertuples())
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>Report status</title>"
            "</head><body><h1>Outputs of the configured plan</h1>"
            f"<p>{int(counts.get('ok', 0))} reported and current, "
            f"{int(counts.get('stale', 0))} stale, {int(counts.get('missing', 0))} missing "
            f"(of {len(table)}). Missing outputs and those whose report inputs are missing are "
            "not in the report; stale ones are, and are listed here.</p>"
            "<table border='1'><tr><th>output</th><th>status</th><th>reason</th></tr>"
            f"{rows}</table></body></html>\n")
