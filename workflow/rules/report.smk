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


# The paper's one-run privacy audit (``audit:`` in experiments.yaml): its private methods and
# their planted-bug controls; fails if a real method exceeds its epsilon, warns if a gross bug
# goes unseen (near-claim controls, noise / 2 and / 4, measure its power).
rule audit:
    input:
        arrays=lambda wc: f"results/data/{PAPERS[wc.paper]['audit']['dataset']}/arrays.npz",
    output:
        csv=report(f"{RESULTS}/{{paper}}/audit/audit.csv", caption="../report/audit.rst",
                   category="{paper}"),
        pdf=f"{RESULTS}/{{paper}}/figures/audit.pdf",
        png=report(f"{RESULTS}/{{paper}}/figures/audit.png", caption="../report/audit.rst",
                   category="{paper}"),
    params:
        code=TRAIN_CODE,
        settings=lambda wc: block_settings(wc.paper, "audit"),
    threads: 1
    resources:
        runtime=30,
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/audit.log",
    benchmark:
        f"{RESULTS}/{{paper}}/benchmarks/audit.tsv"
    script:
        "../scripts/audit.py"


# The DP bilevel paper's Section 3 leak (``leak:`` in experiments.yaml):
# Example 3.1's neighbouring datasets told apart by M0-M3, the table, a figure and the values
# its claims read.
rule leak:
    output:
        csv=report(f"{RESULTS}/{{paper}}/tables/leak.csv", caption="../report/leak.rst",
                   category="{paper}"),
        pdf=f"{RESULTS}/{{paper}}/figures/leak.pdf",
        png=report(f"{RESULTS}/{{paper}}/figures/leak.png", caption="../report/leak.rst",
                   category="{paper}"),
        claims=f"{RESULTS}/{{paper}}/leak/claims.json",
    params:
        code=TRAIN_CODE,
        settings=lambda wc: block_settings(wc.paper, "leak"),
    threads: 1
    resources:
        runtime=30,
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/leak.log",
    benchmark:
        f"{RESULTS}/{{paper}}/benchmarks/leak.tsv"
    script:
        "../scripts/leak.py"


# The paper's LiRA attack (``lira:`` in experiments.yaml; issue #23) at one epsilon: every
# listed method's shadow models as one batched program, the attacks' metrics and ROC curves.
rule lira:
    input:
        arrays=lambda wc: f"results/data/{PAPERS[wc.paper]['lira']['dataset']}/arrays.npz",
    output:
        metrics=f"{RESULTS}/{{paper}}/lira/metrics_eps={{eps}}.parquet",
        roc=f"{RESULTS}/{{paper}}/lira/roc_eps={{eps}}.parquet",
    params:
        code=TRAIN_CODE,
        settings=lambda wc: lira_settings(wc.paper),
    threads: 2
    resources:
        runtime=120,
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/lira/eps={{eps}}.log",
    benchmark:
        f"{RESULTS}/{{paper}}/benchmarks/lira/eps={{eps}}.tsv"
    script:
        "../scripts/lira.py"


# The paper's LiRA table and figure (log-log ROC per epsilon; AUC and TPR vs epsilon with the
# DP ceiling).
rule lira_report:
    input:
        metrics=lambda wc: lira_files(wc.paper, "metrics"),
        roc=lambda wc: lira_files(wc.paper, "roc"),
    output:
        csv=report(f"{RESULTS}/{{paper}}/tables/lira.csv", caption="../report/lira.rst",
                   category="{paper}"),
        pdf=f"{RESULTS}/{{paper}}/figures/lira.pdf",
        png=report(f"{RESULTS}/{{paper}}/figures/lira.png", caption="../report/lira.rst",
                   category="{paper}"),
    params:
        code=REPORT_CODE,
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/lira_report.log",
    script:
        "../scripts/lira_report.py"


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
