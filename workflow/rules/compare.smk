# Leaderboards across papers (issue 39; dpminimax.report.compare.leaderboard): per problem family of the
# config's ``compare:`` block, the runs tables of its papers and experiments that this run
# selects -> {RESULTS}/compare/<family>/ (leaderboard, generated summary, utility-vs-epsilon
# figure, and the Pareto figure of a constrained family). A dataset override's leaderboards go
# to its own folder, as its papers' outputs do. Its functions: compare_plan.smk.


rule compare:
    input:
        unpack(compared_inputs),
    output:
        leaderboard=f"{RESULTS}/compare/{{family}}/leaderboard.csv",
        summary=f"{RESULTS}/compare/{{family}}/summary.md",
        pdf=f"{RESULTS}/compare/{{family}}/utility_vs_eps.pdf",
        png=f"{RESULTS}/compare/{{family}}/utility_vs_eps.png",
    params:
        code=REPORT_CODE,
        settings=lambda wc: compare_settings(wc.family),
    wildcard_constraints:
        family="|".join(FAMILIES),
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/logs/compare/{{family}}.log",
    script:
        "../scripts/compare.py"


rule compare_pareto:
    input:
        unpack(compared_inputs),
    output:
        pdf=f"{RESULTS}/compare/{{family}}/pareto.pdf",
        png=f"{RESULTS}/compare/{{family}}/pareto.png",
    params:
        code=REPORT_CODE,
        settings=lambda wc: compare_settings(wc.family),
    wildcard_constraints:
        family="|".join(CONSTRAINED_FAMILIES),
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/logs/compare/{{family}}_pareto.log",
    script:
        "../scripts/compare.py"
