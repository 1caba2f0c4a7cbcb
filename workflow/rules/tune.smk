# The RaCO-DP paper's tuning protocol (App. E.2) for jobs whose method has a tuning block, when
# the config says `tuning: protocol`: phase 1 (all sampled configurations x cells x seeds, one
# batched program) -> the choice per cell -> phase 2 is the ordinary train rule with the choice
# as input. Tuning is outside every printed epsilon, as in the paper.

TUNE_DIR = f"{RESULTS}/{{paper}}/tune/{{experiment}}/{{dataset}}/{{method}}/eps~{{eps}}"


rule tune:
    input:
        unpack(data_inputs),
    output:
        trials=f"{TUNE_DIR}/trials.parquet",
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
        f"{RESULTS}/{{paper}}/logs/tune/{{experiment}}/{{dataset}}/{{method}}/eps~{{eps}}.log",
    script:
        "../scripts/tune.py"


rule select_configs:
    input:
        trials=f"{TUNE_DIR}/trials.parquet",
    output:
        selected=f"{TUNE_DIR}/selected.json",
    params:
        run_config=lambda wildcards: job_of(wildcards).run_config(TRAIN_CODE),
    conda:
        CONDA_ENV
    log:
        f"{RESULTS}/{{paper}}/logs/select/{{experiment}}/{{dataset}}/{{method}}/eps~{{eps}}.log",
    script:
        "../scripts/select_configs.py"
