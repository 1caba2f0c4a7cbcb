"""Snakemake adapter: rule compare -> dpminimax.report.compare.leaderboard.compare, rule
compare_pareto -> dpminimax.report.compare.leaderboard.compare_pareto."""

from dpminimax.jobserver import hand_over

hand_over(snakemake.threads)  # in a fork of the workflow's warm job server (dpminimax.jobserver)

from pathlib import Path  # noqa: E402

from dpminimax import api  # noqa: E402
from dpminimax.report.compare.leaderboard import compare, compare_pareto  # noqa: E402

with api.log_to(snakemake.log[0]):
    settings = snakemake.params.settings
    selection = {"metric": settings.get("metric"), "delta": settings.get("delta"),
                 "accountant": settings.get("accountant"),
                 "experiments": settings["experiments"]}
    figure = [snakemake.output.pdf, snakemake.output.png]
    if snakemake.rule == "compare_pareto":
        compare_pareto(snakemake.input.runs, snakemake.wildcards.family, figure, **selection)
    else:
        print(compare(snakemake.input.runs, snakemake.wildcards.family,
                      Path(snakemake.output.leaderboard).parent, draws=settings["draws"],
                      figure_budget=settings.get("figure_budget"), figure=True,
                      tuning_budget=settings.get("tuning_budget"), **selection))
