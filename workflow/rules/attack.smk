# The papers' attacks beyond the membership inference that rule train runs on each trained job
# (train.smk): one-run privacy audits, the DP bilevel paper's leak and LiRA with its report.


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
