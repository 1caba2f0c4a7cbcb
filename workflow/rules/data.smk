# Raw dataset files -> verified, preprocessed, split arrays + meta.json.


rule prepare_data:
    output:
        arrays="results/data/{dataset}/arrays.npz",
        meta="results/data/{dataset}/meta.json",
    params:
        max_rows=lambda wildcards: config["data"].get("dataset_max_rows", {}).get(
            wildcards.dataset, config["data"]["max_rows"]),
        split_seed=config["data"]["split_seed"],
        missing_data=config["data"].get("missing_data", "standin"),
        code=lambda wildcards: DATA_CODE(wildcards.dataset),
    conda:
        CONDA_ENV
    log:
        "results/logs/data/{dataset}.log",
    script:
        "../scripts/prepare_data.py"
