# Long results table -> figures (in the Snakemake report) and summary tables.


# What `snakemake --report` covers (report_status.smk): the planned outputs that exist, and
# this page saying what is missing or stale.
rule report_status:
    output:
        report(STATUS_PAGE, caption="../report/status.rst", category="status"),
    log:
        f"{RESULTS}/logs/report_status.log",
    localrule: True
    run:
        with dpminimax_log_to(log[0]):
            write_report_status()


rule aggregate:
    input:
        metrics=lambda wc: [f"{job.train_dir}/metrics.parquet" for job in paper_jobs(wc.paper)],
        attacks=lambda wc: [job.attack_path for job in paper_jobs(wc.paper) if job.attacked],
    output:
        f"{RESULTS}/{{paper}}/runs.parquet",
    params:
        code=REPORT_CODE,
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/aggregate.log",
    script:
        "../scripts/aggregate.py"


rule figure:
    input:
        runs=f"{RESULTS}/{{paper}}/runs.parquet",
        reported=lambda wc: reported_baselines(wc.paper),
    output:
        pdf=f"{RESULTS}/{{paper}}/figures/{{experiment}}/{{figure}}.pdf",
        png=report(
            f"{RESULTS}/{{paper}}/figures/{{experiment}}/{{figure}}.png",
            caption="../report/figure.rst",
            category="{paper}",
            subcategory="{experiment}",
        ),
    params:
        code=REPORT_CODE,
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/figures/{{experiment}}/{{figure}}.log",
    script:
        "../scripts/figure.py"


rule table:
    input:
        f"{RESULTS}/{{paper}}/runs.parquet",
    output:
        report(
            f"{RESULTS}/{{paper}}/tables/summary.csv",
            caption="../report/table.rst",
            category="{paper}",
        ),
    params:
        code=REPORT_CODE,
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/tables/summary.log",
    script:
        "../scripts/table.py"


rule experiment_table:
    input:
        f"{RESULTS}/{{paper}}/runs.parquet",
    output:
        report(
            f"{RESULTS}/{{paper}}/tables/{{experiment}}/{{table}}.csv",
            caption="../report/table.rst",
            category="{paper}",
            subcategory="{experiment}",
        ),
    params:
        code=REPORT_CODE,
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/tables/{{experiment}}/{{table}}.log",
    script:
        "../scripts/experiment_table.py"


rule claims:
    input:
        runs=f"{RESULTS}/{{paper}}/runs.parquet",
        claims=lambda wc: str(claims_file(wc.paper)),
        measured=lambda wc: measured_outputs(wc.paper),
        data=lambda wc: paper_data_meta(wc.paper),
        reported=lambda wc: reported_baselines(wc.paper),
    output:
        csv=report(
            f"{RESULTS}/{{paper}}/tables/claims.csv",
            caption="../report/claims.rst",
            category="{paper}",
        ),
        markdown=f"{RESULTS}/{{paper}}/tables/claims.md",
    params:
        code=REPORT_CODE,
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/tables/claims.log",
    script:
        "../scripts/claims.py"


# A paper's own timing claims (``benchmarks:`` in experiments.yaml, e.g. RaCO-DP's Table 2),
# measured in one process; not to be confused with the per-job `benchmark:` files of train.
rule paper_benchmark:
    input:
        unpack(benchmark_data),
    output:
        f"{RESULTS}/{{paper}}/bench/{{bench}}.json",
    params:
        code=BENCH_CODE,
        settings=lambda wc: PAPERS[wc.paper]["benchmarks"][wc.bench],
    threads: 2
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/bench/{{bench}}.log",
    script:
        "../scripts/paper_benchmark.py"


# The paper's report notebook (generated from its experiments.yaml), executed to HTML.
rule notebook:
    input:
        spec=lambda wc: str(experiments_file(wc.paper)),
        runs=f"{RESULTS}/{{paper}}/runs.parquet",
        summary=f"{RESULTS}/{{paper}}/tables/summary.csv",
        claims=lambda wc: (
            [f"{RESULTS}/{wc.paper}/tables/claims.md"] if claims_file(wc.paper).exists() else []
        ),
        tables=lambda wc: [
            f"{RESULTS}/{wc.paper}/tables/{experiment}/{name}.csv"
            for experiment, exp_spec in PAPERS[wc.paper]["experiments"].items()
            for name in exp_spec.get("tables", [])
        ],
        reported=lambda wc: reported_baselines(wc.paper),
    output:
        html=report(
            f"{RESULTS}/{{paper}}/report.html",
            caption="../report/notebook.rst",
            category="{paper}",
        ),
        notebook=f"{RESULTS}/{{paper}}/report.ipynb",
    params:
        code=REPORT_CODE,
        experiments=lambda wc: list(PAPERS[wc.paper]["experiments"]),
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/notebook.log",
    script:
        "../scripts/paper_notebook.py"
