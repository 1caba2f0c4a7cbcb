"""Leaderboards across papers (issue 39 item 3): who wins where, decided by intervals.

The protocol (cells, tuning budget and expected best of k, violation budgets, intervals,
wins and ties, the trivial baseline): ``docs/leaderboards/README.md``."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dpminimax.report.claims.claims_interval import (
    DRAWS,
    claim_seed,
    t_interval,
    widened_percentiles,
)
from dpminimax.report.claims.trivial import draw_trivial_level
from dpminimax.report.compare.dominance import TRIVIAL, error_at, pareto_front, resampled_means
from dpminimax.report.compare.pareto import DEFAULT_BUDGETS, plot_pareto
from dpminimax.report.figures import _draw_series, _epsilon_axis, _figure_legend, save_figure
from dpminimax.report.style import PANEL_SIZE, paper_style, series_styles
from dpminimax.trivial import column as trivial_column

#: The columns on which every run of a cell must agree (module docstring).
PROTOCOL = ("split", "delta", "accountant")
#: Of these, the privacy parameters (a non-private run has none).
PRIVACY_PROTOCOL = ("delta", "accountant")
UNRECORDED = "unrecorded"
#: Pairwise outcomes and the leaderboard's column counting each.
OUTCOMES = {"win": "wins", "tie": "ties", "loss": "losses", "n/a": "undecided"}


@dataclass(frozen=True)
class Family:
    """A problem family: the papers whose runs it reads, its default metric, the columns of a
    cell besides epsilon, and the violation column and budgets of a constrained family."""

    papers: tuple[str, ...]
    metric: str
    cell: tuple[str, ...]
    budget: str | None = None
    budgets: tuple[float, ...] = ()
    #: Parameters that choose a run's point on the constraint's trade-off (read off the
    #: method's Pareto front at each budget, not tuned): they and the parameters they
    #: determine do not make separate tuning configurations (:func:`tuning_units`).
    knobs: tuple[str, ...] = ()


FAMILIES = {
    # RaCO-DP's constraint level gamma, Tran 2021a's penalty gamma, DP-FERMI's lambda
    "fair_classification": Family(("racodp", "dpfermi", "baselines"), "test_error",
                                  ("dataset",), "dp_violation", DEFAULT_BUDGETS,
                                  knobs=("p_gamma", "p_lam")),
    # the same under equalized odds (DP-FERMI's cross_paper_eo; Jagielski et al.'s tolerance
    # is its knob)
    "fair_classification_eo": Family(("dpfermi",), "test_error", ("dataset",), "eo_violation",
                                     DEFAULT_BUDGETS,
                                     knobs=("p_gamma", "p_lam", "p_tolerance")),
    "kl_dro": Family(("dpdro",), "test_auc", ("dataset",)),
    # Eq. (3) for a linear model on P-DRO (exact answers): BYOA's and paper 004's methods on
    # one problem, by the excess population objective (the point 0 as trivial)
    "kl_dro_linear": Family(("dpdro",), "excess_population_risk", ("dataset", "p_n", "p_d")),
    "games": Family(("byoa",), "population_strong_gap", ("dataset", "p_n", "p_d")),
    # the bilevel paper's Sec. 7 tuners (Alg. 1 variants, DP-AID, DP-Grid, Fixed-omega) and
    # Papernot & Steinke 2022's random repetition (ps_tuning, e6_tuning; the start x0 as
    # trivial): the excess test loss of the exact fit at the tuned omega, per
    # problem, n and number of hyper-parameters d_x
    "hyperparameter_tuning": Family(("bilevel",), "excess_test_loss",
                                    ("dataset", "p_n", "p_d_x")),
}


def higher_is_better(metric: str) -> bool:
    """Whether a larger ``metric`` is better (accuracy, AUC, F1); errors, gaps, violations and
    objectives are better smaller."""
    return metric.endswith(("accuracy", "auc", "f1"))


def load_runs(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The runs tables at ``paths``, concatenated, each with its ``split`` column (module
    docstring)."""
    tables = []
    for path in map(Path, paths):
        table = pd.read_parquet(path)
        if "split" not in table.columns:
            root = path.parent.parent  # results/ or results/override~<d>/
            data = root.parent / "data" if root.name.startswith("override~") else root / "data"
            table["split"] = table["dataset"].astype(str).map(
                lambda name, data=data: _split_hash(data / name / "meta.json"))
        tables.append(table)
    if not tables:
        raise ValueError("no runs table given")
    return pd.concat(tables, ignore_index=True)


def _split_hash(meta: Path) -> str:
    """The prepared arrays' hash (it fixes the split), or :data:`UNRECORDED`."""
    if not meta.is_file():
        return UNRECORDED
    digest = json.loads(meta.read_text()).get("arrays_sha256")
    return str(digest)[:16] if digest else UNRECORDED


def select(runs: pd.DataFrame, family: Family, metric: str, *, delta: float | None = None,
           accountant: str | None = None,
           experiments: Sequence[str] | None = None) -> tuple[pd.DataFrame, dict[str, int]]:
    """The family's runs with a value of ``metric`` (and of its violation), on real data,
    private where their cell's epsilon is finite (a noiseless control planned at a private
    run's epsilon spends infinity: it is not a competitor there), optionally of one ``delta``
    / ``accountant`` (private runs) and some ``experiments``; and how many rows each filter
    left out."""
    needed = ["paper", "experiment", "method", "epsilon", "seed", metric, *family.cell]
    if family.budget:
        needed.append(family.budget)
    missing = [c for c in dict.fromkeys(needed) if c not in runs.columns]
    if missing:
        raise ValueError(f"{missing[0]}: no such column in the runs tables")
    rows = runs.assign(epsilon=pd.to_numeric(runs["epsilon"]).astype(float))
    private = np.isfinite(rows["epsilon"])
    keeps = {
        "other papers": rows["paper"].isin(family.papers),
        "stand-in data": ~rows.get("data_standin", pd.Series(False, index=rows.index))
        .fillna(False).astype(bool),
        "metric missing": rows[[metric, *([family.budget] if family.budget else [])]]
        .notna().all(axis=1),
    }
    if "epsilon_spent" in rows:  # a noiseless control planned at a private run's epsilon
        spent = pd.to_numeric(rows["epsilon_spent"], errors="coerce").astype(float)
        keeps["not private at its epsilon"] = ~private | ~np.isinf(spent)
    if experiments is not None:
        keeps["other experiments"] = rows["experiment"].isin(list(experiments))
    if delta is not None:
        keeps["other delta"] = ~private | np.isclose(
            pd.to_numeric(rows["delta"]).astype(float), delta, rtol=1e-9, atol=0.0)
    if accountant is not None:
        keeps["other accountant"] = ~private | (rows["accountant"].astype(str) == accountant)
    keep = pd.Series(True, index=rows.index)
    dropped = {}
    for reason, mask in keeps.items():
        dropped[reason] = int((keep & ~mask).sum())
        keep &= mask
    return rows.loc[keep], dropped


def check_protocol(rows: pd.DataFrame, cell: Sequence[str]) -> None:
    """Raise ``ValueError`` (one line naming the column) when the runs of a cell disagree on
    the split, or its private runs on delta or accountant."""
    for column in PROTOCOL:
        if column not in rows.columns:
            raise ValueError(f"{column}: the runs tables do not record it, so the runs cannot "
                             "be shown to share it")
    for key, part in rows.groupby([*cell, "epsilon"], dropna=False, sort=True):
        for column in PROTOCOL:
            values = part if column not in PRIVACY_PROTOCOL else part[
                np.isfinite(part["epsilon"])]
            distinct = sorted(values[column].map(str).unique())
            if len(distinct) > 1:
                where = ", ".join(f"{c}={v}" for c, v in zip([*cell, "epsilon"], key,
                                                              strict=True))
                raise ValueError(
                    f"{column}: the runs of {where} have {len(distinct)} values "
                    f"({', '.join(distinct)}); compare runs under one {column} "
                    + ("(select it with --" + column + ")" if column in PRIVACY_PROTOCOL
                       else "(runs of one prepared dataset)"))


def configurations(rows: pd.DataFrame) -> pd.Series:
    """Each run's configuration: its paper, experiment and ``p_*`` parameters (module
    docstring)."""
    columns = ["paper", "experiment", *sorted(c for c in rows.columns if c.startswith("p_"))]
    key = rows[columns[0]].map(str)
    for column in columns[1:]:
        key = key + "|" + rows[column].map(str)
    return key


def tuning_units(rows: pd.DataFrame, knobs: Sequence[str]) -> pd.Series:
    """Each run's tuning configuration, what the tuning budget counts: its configuration
    (:func:`configurations`) without the ``knobs`` and without the parameters the knobs
    determine in its (paper, experiment, method) (constant at each knob value but not
    overall: e.g. a noise multiplier recalibrated when a penalty of 0 drops a release)."""
    present = [k for k in knobs if k in rows.columns]
    if not present:
        return configurations(rows)
    units = pd.Series("", index=rows.index, dtype=object)
    for _, group in rows.groupby(["paper", "experiment", "method"], sort=False, dropna=False):
        by_knob = group.groupby(present, dropna=False)
        kept = [c for c in group.columns if c.startswith("p_") and c not in present
                and not (group[c].astype(str).nunique() > 1
                         and (by_knob[c].agg(lambda v: v.astype(str).nunique()) == 1).all())]
        units.loc[group.index] = configurations(group[["paper", "experiment", *kept]])
    return units


def leaderboard(rows: pd.DataFrame, family: Family, metric: str, *, interval: str = "bootstrap",
                draws: int = DRAWS,
                tuning_budget: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The leaderboard of every cell (and budget) of ``rows`` (after :func:`select`), one row
    per (cell, budget, method or trivial), and the pairwise outcomes, one row per ordered
    pair; every method scored with the same ``tuning_budget`` configurations (default: the
    cell's smallest configuration count; module docstring). Raises ``ValueError`` when the
    protocol is broken (:func:`check_protocol`)."""
    if interval not in ("bootstrap", "t"):
        raise ValueError(f"interval: 'bootstrap' or 't', got {interval!r}")
    if tuning_budget is not None and tuning_budget < 1:
        raise ValueError(f"tuning_budget: at least 1 configuration, got {tuning_budget}")
    check_protocol(rows, family.cell)
    boards, pairs = [], []
    for key, part in rows.groupby([*family.cell, "epsilon"], dropna=False, sort=True):
        cell = dict(zip([*family.cell, "epsilon"], key, strict=True))
        seed = claim_seed(json.dumps([metric, *map(str, key)]))
        board, pair = _cell_board(part, family, metric, interval, draws, seed, tuning_budget)
        boards.append(board.assign(**cell))
        pairs.append(pair.assign(**cell))
    if not boards:
        raise ValueError(f"{metric}: no runs of the family have it")
    order = [*family.cell, "epsilon", "budget"]
    board = pd.concat(boards, ignore_index=True)
    board = board[[*order, *[c for c in board.columns if c not in order]]]
    pair = pd.concat(pairs, ignore_index=True)
    return board, pair[[*order, *[c for c in pair.columns if c not in order]]]


def _cell_board(part: pd.DataFrame, family: Family, metric: str, interval: str, draws: int,
                seed: int, tuning_budget: int | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One cell's leaderboard and pairwise outcomes (every budget), every method scored as
    its expected best of the cell's ``k`` configurations."""
    sign = -1.0 if higher_is_better(metric) else 1.0
    values = [metric, *([family.budget] if family.budget else [])]
    points = part[["method", *values]].assign(config=configurations(part),
                                               unit=tuning_units(part, family.knobs))
    trivial = [trivial_column(v) for v in values]
    if all(c in part.columns for c in trivial) and part[trivial].notna().all(axis=1).any():
        trivial_points = part[trivial].dropna().set_axis(values, axis=1)
        points = pd.concat([points, trivial_points.assign(method=TRIVIAL, config=TRIVIAL,
                                                          unit=TRIVIAL)], ignore_index=True)
    points[metric] = sign * points[metric]  # a loss: smaller is better
    groups, means = resampled_means(points, ["method", "config"], values, draws, seed)
    sizes = points.groupby(["method", "config"], sort=True).size().to_numpy()
    budgets = np.asarray(family.budgets if family.budget else [math.nan], float)
    methods = sorted(groups["method"].unique(), key=lambda m: (m == TRIVIAL, m))
    unit_of = points.drop_duplicates(["method", "config"]).set_index(["method", "config"])[
        "unit"]
    units = np.asarray(unit_of.loc[list(zip(groups["method"], groups["config"],
                                             strict=True))].to_numpy(), dtype=object)
    configs = {m: len(set(units[(groups["method"] == m).to_numpy()])) for m in methods}
    k = tuning_budget or min(c for m, c in configs.items() if m != TRIVIAL)
    # the trivial baseline (one configuration) first: a draw reaching no budget deploys it
    nothing = np.full((draws + 1, len(budgets)), math.nan)
    fallback = (_scores(means, units, (groups["method"] == TRIVIAL).to_numpy(), budgets, 1,
                        nothing) if TRIVIAL in configs else nothing)
    scores = np.stack([_scores(means, units, (groups["method"] == m).to_numpy(), budgets,
                               min(k, configs[m]), fallback)
                       for m in methods])  # (methods, draws + 1, budgets)
    # bootstrap draws of a method with a single run in a configuration say nothing
    spread = np.array([sizes[(groups["method"] == m).to_numpy()].min() >= 2 for m in methods])
    scores[~spread, 1:] = math.nan
    ranks = _ranks(scores)
    board, pair = [], []
    for b, budget in enumerate(budgets):
        outcome = {}
        for i, a in enumerate(methods):
            for j, other in enumerate(methods):
                if i != j:
                    diff = scores[i, :, b] - scores[j, :, b]
                    low, high = _bootstrap_interval(diff)
                    result = ("n/a" if math.isnan(low) else "win" if high < 0
                              else "loss" if low > 0 else "tie")
                    outcome[a, other] = result
                    pair.append({"budget": budget, "method": a, "other": other,
                                 "difference": sign * diff[0],
                                 "low": min(sign * low, sign * high),
                                 "high": max(sign * low, sign * high), "outcome": result})
        for i, m in enumerate(methods):
            value = scores[i, 0, b]
            low, high = _interval(part, metric, m, scores[i, :, b], interval)
            row = {"budget": budget, "method": m, "configs": configs[m], "tuning_budget": k,
                   "below_tuning_budget": None if m == TRIVIAL else configs[m] < k,
                   "runs": int(sizes[(groups["method"] == m).to_numpy()].sum()),
                   "value": sign * value, "low": min(sign * low, sign * high),
                   "high": max(sign * low, sign * high), "rank": ranks[i, 0, b],
                   **dict(zip(("rank_low", "rank_high"), _rank_interval(ranks[i, :, b]),
                              strict=True))}
            mine = [outcome[m, o] for o in methods if o != m]
            row.update({name: mine.count(o) for o, name in OUTCOMES.items()})
            row["beats"] = ";".join(o for o in methods if o != m and outcome[m, o] == "win")
            row["loses_to"] = ";".join(o for o in methods
                                       if o != m and outcome[m, o] == "loss")
            row["beats_trivial"] = (None if m == TRIVIAL or TRIVIAL not in methods
                                    or math.isnan(value) else outcome[m, TRIVIAL] == "win")
            board.append(row)
    return pd.DataFrame(board), pd.DataFrame(pair)


def _scores(means: np.ndarray, units: np.ndarray, rows: np.ndarray, budgets: np.ndarray,
            k: int, fallback: np.ndarray) -> np.ndarray:
    """A method's score (a loss) on every draw (row 0: the seed means) at every budget: the
    expected best of ``k`` of its tuning configurations (``units`` of its configurations,
    ``rows`` of ``means``): by their best mean (no budget, ``means[..., 0]`` only,
    :func:`expected_best`) or by the lowest loss the Pareto front of the ``k`` reaches
    within each budget (``means[..., 1]``: the violation, :func:`expected_front_within`;
    ``fallback``: the trivial baseline's scores)."""
    names = units[rows]
    index = np.unique(names, return_inverse=True)[1]
    if means.shape[2] == 1:
        best = np.stack([means[:, rows, 0][:, index == u].min(axis=1)
                         for u in range(index.max() + 1)], axis=1)
        return np.repeat(expected_best(best, k)[:, None], len(budgets), axis=1)
    return expected_front_within(means[:, rows, 0], means[:, rows, 1], index, budgets, k,
                                 fallback)


def expected_best(scores: np.ndarray, k: int) -> np.ndarray:
    """The expected smallest of ``k`` of the ``m`` scores on the last axis drawn uniformly
    without replacement: ``sum_i score_(i) C(m - i, k - 1) / C(m, k)`` with ``score_(1)`` the
    smallest (the i-th smallest is the draw's best when it is drawn and the ``k - 1`` others
    come from the ``m - i`` larger ones)."""
    m = scores.shape[-1]
    weights = np.array([math.comb(m - i, k - 1) for i in range(1, m + 1)]) / math.comb(m, k)
    return np.sort(scores, axis=-1) @ weights


#: The most k-subsets of tuning configurations :func:`expected_front_within` enumerates.
MAX_SUBSETS = 20_000


def expected_front_within(error: np.ndarray, violation: np.ndarray, unit: np.ndarray,
                          budgets: np.ndarray, k: int, fallback: np.ndarray) -> np.ndarray:
    """(draws, budgets): the expected :func:`.dominance.error_at` each budget of the Pareto
    front of ``k`` of the method's tuning configurations drawn uniformly without replacement
    (``error``, ``violation``: (draws, points), ``unit``: each point's configuration, a
    configuration's points its knob values), every k-subset enumerated; a subset reaching no
    budget deploys ``fallback`` (draws, budgets). NaN where no configuration reaches it."""
    m = int(unit.max()) + 1
    if math.comb(m, k) > MAX_SUBSETS:
        raise ValueError(f"tuning_budget: {math.comb(m, k)} subsets of {k} among {m} "
                         f"configurations exceed {MAX_SUBSETS}; set a smaller tuning_budget")
    members = [np.isin(unit, subset) for subset in itertools.combinations(range(m), k)]
    total = np.zeros((len(error), len(budgets)))
    for draw in range(len(error)):
        fronts = [error_at(pareto_front(error[draw, keep], violation[draw, keep]), budgets)
                  for keep in members]
        total[draw] = np.mean([np.where(np.isnan(f), fallback[draw], f) for f in fronts],
                              axis=0)
        reached = error_at(pareto_front(error[draw], violation[draw]), budgets)
        total[draw] = np.where(np.isnan(reached), math.nan, total[draw])
    return total


def _ranks(scores: np.ndarray) -> np.ndarray:
    """1 + the number of rows with a strictly smaller score, per draw and budget (NaN where
    the score is undefined; undefined scores rank nobody)."""
    ranks = 1.0 + (scores[None, :] < scores[:, None]).sum(axis=1)
    return np.where(np.isnan(scores), math.nan, ranks)


def _rank_interval(ranks: np.ndarray) -> tuple[float, float]:
    """The 2.5 and 97.5 percentiles of the ranks over the draws (``ranks[1:]``); NaN when the
    rank on the seed means (``ranks[0]``) is undefined or most draws are."""
    if math.isnan(ranks[0]):
        return math.nan, math.nan
    ranks = ranks[1:]
    finite = ranks[np.isfinite(ranks)]
    if finite.size < ranks.size / 2 or finite.size == 0:
        return math.nan, math.nan
    low, high = np.percentile(finite, [2.5, 97.5])
    return float(low), float(high)


def _interval(part: pd.DataFrame, metric: str, method: str, scores: np.ndarray,
              interval: str) -> tuple[float, float]:
    """A method's interval (as a loss): Student-t where asked and its score is one
    configuration's plain mean, else the bootstrap's."""
    if interval == "t" and method != TRIVIAL:
        rows = part[part["method"] == method]
        if configurations(rows).nunique() == 1 and len(rows) >= 2:
            sign = -1.0 if higher_is_better(metric) else 1.0
            low, high = t_interval(sign * rows[metric].to_numpy(float))
            return low, high
    return _bootstrap_interval(scores)


def _bootstrap_interval(draws: np.ndarray) -> tuple[float, float]:
    """The bootstrap interval of a statistic (row 0: its value on the seed means; NaN there,
    a method out of the budget's reach, has no interval)."""
    if math.isnan(draws[0]):
        return math.nan, math.nan
    return widened_percentiles(draws[1:], draws[0])


#: The verdict of a cell whose leader wins against every other method reaching the budget.
CLEAR_WIN = "wins against every method"


def verdicts(board: pd.DataFrame, pairs: pd.DataFrame, family: Family,
             metric: str) -> pd.DataFrame:
    """Which method wins where and by how much, one row per cell and budget: the leader and
    its value, whether it wins against every other method that reaches the budget
    (:data:`CLEAR_WIN`) or which are tied with it (or undecided), its margin over the next
    with the difference's interval, the methods within reach not shown better than the trivial
    baseline and those that do not reach the budget."""
    cell = [*family.cell, "epsilon"]
    flip = 1.0 if higher_is_better(metric) else -1.0  # how much better the leader is
    out = []
    for key, rows in board.groupby([*cell, "budget"], dropna=False, sort=True):
        *where, budget = key
        methods = rows[rows["method"] != TRIVIAL]
        ranked = methods.dropna(subset=["value"]).sort_values(["rank", "method"])
        if ranked.empty:
            out.append({**dict(zip(cell, where, strict=True)), "budget": budget,
                        "tuning_budget": rows["tuning_budget"].iloc[0],
                        "verdict": "no method reaches the budget",
                        "not_reaching_budget": ", ".join(methods["method"])})
            continue
        leader, others = ranked.iloc[0], list(ranked["method"].iloc[1:])
        outcome = pairs[_same(pairs, cell, where, budget)
                        & (pairs["method"] == leader["method"])].set_index("other")
        mine = [outcome.loc[o, "outcome"] for o in others]
        if not others:
            verdict = "only method"
        elif all(o == "win" for o in mine):
            verdict = CLEAR_WIN
        elif "n/a" in mine:
            verdict = "undecided (no interval): " + ", ".join(
                o for o, r in zip(others, mine, strict=True) if r == "n/a")
        else:
            verdict = "tied: " + ", ".join([leader["method"], *(
                o for o, r in zip(others, mine, strict=True) if r == "tie")])
        row = {**dict(zip(cell, where, strict=True)), "budget": budget,
               "tuning_budget": leader["tuning_budget"], "leader": leader["method"],
               "value": leader["value"], "low": leader["low"],
               "high": leader["high"], "verdict": verdict, "next": None,
               "ahead_by": math.nan, "ahead_low": math.nan, "ahead_high": math.nan}
        if others:
            p = outcome.loc[others[0]]
            low, high = sorted((flip * p["low"], flip * p["high"]))
            row.update({"next": others[0], "ahead_by": flip * p["difference"],
                        "ahead_low": low, "ahead_high": high})
        row["not_shown_better_than_trivial"] = ", ".join(
            ranked.loc[ranked["beats_trivial"] == False, "method"])  # noqa: E712
        row["not_reaching_budget"] = ", ".join(methods.loc[methods["value"].isna(), "method"])
        out.append(row)
    return pd.DataFrame(out)


def summary_markdown(board: pd.DataFrame, pairs: pd.DataFrame, family_name: str,
                     metric: str) -> str:
    """The leaderboards' summary (:func:`verdicts`) as markdown."""
    family = FAMILIES[family_name]
    cell = [*family.cell, "epsilon"]
    better = "higher" if higher_is_better(metric) else "lower"
    lines = [f"# Leaderboard summary: {family_name}", "",
             f"Metric: `{metric}` ({better} is better)"
             + (f", the best within a `{family.budget}` budget" if family.budget else "")
             + "; mean over seeds, 95% bootstrap interval. The same tuning budget for every "
               "method: a method's score is its expected best of k configurations drawn "
               "without replacement from its own (k: the column `k`, the cell's smallest "
               "configuration count, the trivial baseline excluded, unless the family sets "
               "`tuning_budget`; a method with fewer is scored on all of its own)"
             + (", and a draw with no configuration within the budget deploys the trivial "
                "baseline" if family.budget else "")
             + ". A win: the difference's interval excludes 0. Trivial: `trivial_"
             + metric + "`.", "",
             "| cell | budget | leader | value [95%] | verdict | ahead of the next by [95%] "
             "| not shown better than trivial | not reaching the budget | k |",
             "|---|---|---|---|---|---|---|---|---|"]
    for _, v in verdicts(board, pairs, family, metric).iterrows():
        where = ", ".join(f"{c}={_num(v[c])}" for c in cell)
        ahead = (f"{v['next']}: {_fmt(v['ahead_by'], v['ahead_low'], v['ahead_high'])}"
                 if isinstance(v["next"], str) else "")
        value = _fmt(v["value"], v["low"], v["high"]) if isinstance(v["leader"], str) else "-"
        lines.append(f"| {where} | {'-' if pd.isna(v['budget']) else _num(v['budget'])} | "
                     f"{v['leader'] if isinstance(v['leader'], str) else '-'} | {value} | "
                     f"{v['verdict']} | {ahead} | {_text(v['not_shown_better_than_trivial'])} | "
                     f"{_text(v['not_reaching_budget'])} | {v['tuning_budget']} |")
    return "\n".join(lines) + "\n"


def _same(table: pd.DataFrame, cell: Sequence[str], where: Sequence, budget: float) -> pd.Series:
    mask = table["budget"].isna() if pd.isna(budget) else np.isclose(table["budget"], budget)
    for column, value in zip(cell, where, strict=True):
        mask &= table[column].isna() if pd.isna(value) else table[column] == value
    return mask


def _fmt(value: float, low: float, high: float) -> str:
    if math.isnan(low):
        return f"{value:.4g} [no interval]"
    return f"{value:.4g} [{low:.4g}, {high:.4g}]"


def _text(value) -> str:
    return value if isinstance(value, str) and value else "-"


def _num(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


#: Panels per row of the utility-vs-epsilon figure.
PANELS_PER_ROW = 5


def cell_label(cell: Sequence[str], values: Sequence) -> str:
    """A cell's name without epsilon, e.g. ``g1_quadratic_game, n=256, d=10``."""
    parts = [str(v) if c == "dataset" else f"{c.removeprefix('p_')}={_num(v)}"
             for c, v in zip(cell, values, strict=True)]
    return ", ".join(parts)


def plot_utility_vs_epsilon(board: pd.DataFrame, family: Family, metric: str,
                            out_paths: Sequence[str | Path], *,
                            budget: float | None = None) -> Figure:
    """Each method's leaderboard score (its expected best of the cell's ``k`` configurations,
    within ``budget`` for a constrained family) against epsilon with its 95% interval, one
    panel per cell; the trivial baseline as a level; non-private methods as references (the
    series of :mod:`.figures`)."""
    rows = board if budget is None else board[np.isclose(board["budget"], budget)]
    rows = rows.dropna(subset=["value"]).rename(
        columns={"value": "mean", "low": "ci_low", "high": "ci_high"})
    if rows.empty:
        return no_runs_figure(out_paths, f"NOT RUN: no method has a `{metric}` score"
                              + ("" if budget is None else f" within the budget {budget:g}"))
    cells = list(rows.groupby(list(family.cell), dropna=False, sort=True))
    styles = series_styles(sorted(set(rows["method"]) - {TRIVIAL}))
    grid = np.sort(rows.loc[np.isfinite(rows["epsilon"]), "epsilon"].unique())
    eps_range = (grid[0] / 1.5, grid[-1] * 1.5) if grid.size else (0.1, 10.0)
    columns = min(PANELS_PER_ROW, len(cells))
    lines = -(-len(cells) // columns)
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * columns, PANEL_SIZE[1] * lines),
                     layout="constrained")
        axes = fig.subplots(lines, columns, squeeze=False).ravel()
        for ax, (key, panel) in zip(axes, cells, strict=False):
            for method, style in styles.items():
                _draw_series(ax, panel[panel["method"] == method], style)
            trivial = panel.loc[panel["method"] == TRIVIAL, "mean"]
            if not trivial.empty:
                draw_trivial_level(ax, float(trivial.mean()), "trivial baseline")
            _epsilon_axis(ax, grid, eps_range)
            ax.set_title(cell_label(family.cell, key if isinstance(key, tuple) else (key,)))
        for ax in axes[len(cells):]:
            ax.set_visible(False)
        for ax in axes[::columns]:
            ax.set_ylabel(metric)
        _figure_legend(fig, list(axes[:len(cells)]))
        fig.suptitle("Expected best of k configurations, 95% bootstrap interval over seeds"
                     + ("" if budget is None else f"; {family.budget} ≤ {budget:g}"))
    save_figure(fig, out_paths)
    return fig


def compare(paths: Iterable[str | Path], family_name: str, out: str | Path, *,
            metric: str | None = None, delta: float | None = None,
            accountant: str | None = None, experiments: Sequence[str] | None = None,
            interval: str = "bootstrap", draws: int = DRAWS, figure_budget: float | None = None,
            figure: bool = False, tuning_budget: int | None = None) -> dict:
    """``dpminimax compare`` and the workflow's rule ``compare``: ``out/leaderboard.csv`` and
    ``out/summary.md`` of ``family_name`` over the runs tables at ``paths`` and, with
    ``figure``, ``out/utility_vs_eps.{pdf,png}`` (:func:`plot_utility_vs_epsilon`, at
    ``figure_budget`` for a constrained family), every method scored with ``tuning_budget``
    configurations (default: each cell's smallest count, :func:`leaderboard`). With no run
    left to compare (e.g. every run on stand-in data) the files say so (``NOT RUN: ...``), so
    a workflow still completes. Returns what it did (the CLI prints it)."""
    family = FAMILIES[family_name]
    metric = metric or family.metric
    rows, dropped = select(load_runs(paths), family, metric, delta=delta, accountant=accountant,
                           experiments=experiments)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "leaderboard.csv", out / "summary.md"]
    figures = [out / f"utility_vs_eps.{ext}" for ext in ("pdf", "png")] if figure else []
    if figure and family.budget and figure_budget is None:
        raise ValueError(f"figure_budget: {family_name} is constrained; give the "
                         f"{family.budget} budget its utility-vs-epsilon figure reads")
    if rows.empty:  # e.g. every run on stand-in data: say so rather than fail the workflow
        reason = no_runs_reason(family_name, metric, dropped)
        pd.DataFrame(columns=[*family.cell, "epsilon", "budget", "method"]).to_csv(
            written[0], index=False)
        written[1].write_text(f"# Leaderboard summary: {family_name}\n\n{reason}\n")
        if figures:
            no_runs_figure(figures, reason)
        return {"family": family_name, "metric": metric, "runs": 0, "dropped": dropped,
                "cells": 0, "methods": [], "papers": [], "clear_wins": {},
                "written": [str(path) for path in written + figures]}
    board, pairs = leaderboard(rows, family, metric, interval=interval, draws=draws,
                               tuning_budget=tuning_budget)
    board.to_csv(written[0], index=False)
    written[1].write_text(summary_markdown(board, pairs, family_name, metric))
    if figures:
        plot_utility_vs_epsilon(board, family, metric, figures,
                                budget=figure_budget if family.budget else None)
    found = verdicts(board, pairs, family, metric)
    clear = found[found["verdict"] == CLEAR_WIN]
    return {"family": family_name, "metric": metric, "runs": len(rows), "dropped": dropped,
            "cells": len(found), "methods": sorted(set(board["method"])),
            "papers": sorted(set(rows["paper"])),
            "clear_wins": clear["leader"].value_counts().to_dict(),
            "written": [str(path) for path in written + figures]}


def compare_pareto(paths: Iterable[str | Path], family_name: str,
                   out_paths: Sequence[str | Path], *, metric: str | None = None,
                   delta: float | None = None, accountant: str | None = None,
                   experiments: Sequence[str] | None = None) -> Figure:
    """The Pareto figure of a constrained family's compared runs (the runs :func:`compare`
    ranks; :func:`.pareto.plot_pareto`: every method's points and front per cell)."""
    family = FAMILIES[family_name]
    if not family.budget:
        raise ValueError(f"{family_name}: no violation column, so no Pareto front")
    metric = metric or family.metric
    rows, dropped = select(load_runs(paths), family, metric, delta=delta,
                           accountant=accountant, experiments=experiments)
    if rows.empty:
        return no_runs_figure(out_paths, no_runs_reason(family_name, metric, dropped))
    check_protocol(rows, family.cell)
    return plot_pareto(rows, violation=family.budget, out_paths=out_paths)


def no_runs_reason(family_name: str, metric: str, dropped: dict[str, int]) -> str:
    """Why a family has nothing to compare: how many runs each filter of :func:`select` left
    out."""
    left_out = ", ".join(f"{reason}: {count}" for reason, count in dropped.items() if count)
    return (f"NOT RUN: no run of {family_name} with `{metric}` is left to compare "
            f"(runs left out - {left_out or 'none in the tables'}).")


def no_runs_figure(out_paths: Sequence[str | Path], reason: str) -> Figure:
    """A figure that says there was nothing to draw, and why."""
    with paper_style():
        fig = Figure(figsize=PANEL_SIZE, layout="constrained")
        ax = fig.subplots()
        ax.set_axis_off()
        ax.text(0.5, 0.5, reason, ha="center", va="center", wrap=True, fontsize=8)
    save_figure(fig, out_paths)
    return fig
