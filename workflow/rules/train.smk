# One job = one (experiment, dataset, method, epsilon); its seeds x grid points train batched,
# then every trained run is attacked in the same process (membership inference beside the
# ceiling its (epsilon, delta) implies), so a job pays its imports and set-up once.
# A tuned job (tuning: protocol) trains the configurations its select_configs rule chose.
# A job on a synthetic problem (rule train_problem) draws its own data and is not attacked.


TRAIN_DIR = f"{RESULTS}/{{paper}}/train/{{experiment}}/{{dataset}}/{{method}}/eps~{{eps}}"


rule train:
    wildcard_constraints:
        dataset=problem_pattern(included=False),
        method=method_pattern(attacked=True),
    input:
        unpack(train_inputs),
    output:
        metrics=f"{TRAIN_DIR}/metrics.parquet",
        model=f"{TRAIN_DIR}/model.pt",
        accounting=f"{TRAIN_DIR}/accounting.json",
        run_config=f"{TRAIN_DIR}/run_config.json",
        attack=f"{RESULTS}/{{paper}}/attack/{{experiment}}/{{dataset}}/{{method}}/eps~{{eps}}/attack.parquet",
    params:
        run_config=lambda wildcards: job_of(wildcards).run_config(TRAIN_CODE),
        code=TRAIN_CODE,
    resources:
        # Per job: a paper-scale network asks for a GPU (Job.gpus, which the SLURM plugin
        # sends as --gpus) and trains for hours; cluster minutes / MB, doubled on a retry.
        gpu=lambda wildcards: job_of(wildcards).gpus,
        runtime=lambda wildcards, attempt: attempt * (1440 if job_of(wildcards).gpus else 240),
        mem_mb=lambda wildcards, attempt: attempt * (32000 if job_of(wildcards).gpus else 8000),
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/train/{{experiment}}/{{dataset}}/{{method}}/eps~{{eps}}.log",
    benchmark:
        f"{RESULTS}/{{paper}}/benchmarks/train/{{experiment}}/{{dataset}}/{{method}}/eps~{{eps}}.tsv"
    script:
        "../scripts/train.py"


# A method whose task runs its own attack (paper 004's Table 2) on a prepared dataset.
use rule train as train_unattacked with:
    wildcard_constraints:
        dataset=problem_pattern(included=False),
        method=method_pattern(attacked=False),
    output:
        metrics=f"{TRAIN_DIR}/metrics.parquet",
        model=f"{TRAIN_DIR}/model.pt",
        accounting=f"{TRAIN_DIR}/accounting.json",
        run_config=f"{TRAIN_DIR}/run_config.json",


rule train_problem:
    wildcard_constraints:
        dataset=problem_pattern(included=True),
    output:
        metrics=f"{TRAIN_DIR}/metrics.parquet",
        model=f"{TRAIN_DIR}/model.pt",
        accounting=f"{TRAIN_DIR}/accounting.json",
        run_config=f"{TRAIN_DIR}/run_config.json",
    params:
        run_config=lambda wildcards: job_of(wildcards).run_config(TRAIN_CODE),
        code=TRAIN_CODE,
    resources:
        runtime=lambda wildcards, attempt: attempt * 240,
        mem_mb=lambda wildcards, attempt: attempt * 8000,
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/train/{{experiment}}/{{dataset}}/{{method}}/eps~{{eps}}.log",
    benchmark:
        f"{RESULTS}/{{paper}}/benchmarks/train/{{experiment}}/{{dataset}}/{{method}}/eps~{{eps}}.tsv"
    script:
        "../scripts/train.py"
