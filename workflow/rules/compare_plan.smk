# What the compare rules (compare.smk) read and write: the families of the config's ``compare:``
# block, their selected experiments, runs tables and targets (functions only: Snakemake's lint
# keeps rules and functions in separate files).
from dpminimax.report.compare.leaderboard import FAMILIES


def compared_experiments(family):
    """The (paper, experiments) this run selects of the family's ``runs`` in ``compare:``
    (``all``: every selected experiment of the paper); papers or experiments not run now are
    left out."""
    selected = {}
    for paper, experiments in config["compare"]["families"][family]["runs"].items():
        if paper not in PAPERS:
            continue
        run = list(PAPERS[paper]["experiments"])
        names = run if experiments == "all" else [e for e in experiments if e in run]
        if names:
            selected[paper] = names
    return selected


def compared_families():
    """The families of ``compare:`` (the schema knows their names) with at least one experiment
    in this run."""
    if not config.get("compare"):
        return []
    return [family for family in config["compare"]["families"] if compared_experiments(family)]


#: The families with a violation column: their runs' Pareto fronts are drawn too.
CONSTRAINED_FAMILIES = [name for name, family in FAMILIES.items() if family.budget]


def compare_targets():
    """Every compared family's leaderboard, summary and figures."""
    targets = []
    for family in compared_families():
        names = ["utility_vs_eps", *(["pareto"] if family in CONSTRAINED_FAMILIES else [])]
        targets += [f"{RESULTS}/compare/{family}/leaderboard.csv",
                    f"{RESULTS}/compare/{family}/summary.md"]
        targets += [f"{RESULTS}/compare/{family}/{name}.{ext}"
                    for name in names for ext in ("pdf", "png")]
    return targets


def compare_settings(family):
    settings = {key: value for key, value in config["compare"]["families"][family].items()
                if key != "runs"}
    experiments = compared_experiments(family)
    return {**settings, "draws": config["compare"]["draws"],
            "experiments": sorted({e for names in experiments.values() for e in names})}


def compared_inputs(wildcards):
    """The runs tables of the family's papers, and their prepared data's meta.json (the split
    every leaderboard cell must share)."""
    papers = compared_experiments(wildcards.family)
    return {"runs": [f"{RESULTS}/{paper}/runs.parquet" for paper in papers],
            "data": sorted({meta for paper in papers for meta in paper_data_meta(paper)})}
