# Configuration -> validated grids -> jobs; wildcard constraints; input functions.
import os
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from dpminimax.config_schema import check_schema
from dpminimax.experiments import (
    ExperimentConfigError,
    expand_jobs,
    load_experiments,
    results_root,
    select_experiments,
    selected_papers,
)
from dpminimax.algorithms import CONTROLS, METHODS
from dpminimax.plugins import ENV_VAR as PLUGINS_ENV, load_plugins, plugin_paths
from dpminimax.attacks.shadows import lira_epsilons as shadow_lira_epsilons
from dpminimax.feasibility import check_jobs, prepared_train_size
from dpminimax.problems import BILEVEL_PROBLEMS, PROBLEMS
from dpminimax.provenance import (
    code_fingerprint,
    dataset_code_fingerprint,
    train_code_fingerprint,
)


SCHEMAS = Path(workflow.basedir) / "workflow" / "schemas"


def check_against_schema(instance, name, source):
    """One line naming the key and what it must be (dpminimax.config_schema), then Snakemake's
    validate, which also fills in the schema's defaults."""
    try:
        check_schema(instance, SCHEMAS / name, source)
    except ExperimentConfigError as err:
        raise WorkflowError(str(err)) from None
    validate(instance, str(SCHEMAS / name))


check_against_schema(config, "config.schema.yaml", "workflow config")

SCALE = config["scale"]
# The papers' outputs: results/<paper>/, or a dataset override's own folder.
RESULTS = results_root(config.get("dataset_override"))
# ``experiments: all`` (e.g. ``--config experiments=all`` over smoke.yaml's selection: Snakemake
# merges a mapping given on the command line into the config file's, so only a string can
# replace it) runs every experiment of every paper.
SELECTED = {} if config.get("experiments") in (None, "all") else config["experiments"]
# The selected papers' plugins (papers/<id>/plugin.py: the methods, problems and figures a paper
# adds; dpminimax.plugins), named in $DPMINIMAX_PLUGINS for this process and every job it starts,
# and registered before any name is checked or the training code fingerprinted.
PAPER_FOLDER = lambda paper: Path(workflow.basedir) / "papers" / paper


def selected_paper_files(name):
    """The file ``name`` of each selected paper's folder that has one."""
    return [str(PAPER_FOLDER(paper) / name)
            for paper in selected_papers(config["papers"], SELECTED)
            if (PAPER_FOLDER(paper) / name).is_file()]


os.environ[PLUGINS_ENV] = os.pathsep.join(
    dict.fromkeys([*map(str, plugin_paths()), *selected_paper_files("plugin.py")]))
load_plugins()
# A paper's own stages: its rules.smk, included by the Snakefile; the outputs it appends to
# PAPER_TARGETS are built by the default target.
PAPER_TARGETS = []
PAPER_RULES = selected_paper_files("rules.smk")
# Used only with --software-deployment-method conda (path relative to the rule files).
CONDA_ENV = f"../../envs/{config.get('software_env', 'cpu')}.yaml"
# Per dataset: the shared data code + atomic.py + the dataset's own module / YAML declaration.
DATA_CODE = lambda dataset: dataset_code_fingerprint(dataset, "atomic.py")
TRAIN_CODE = train_code_fingerprint()
REPORT_CODE = code_fingerprint(
    "report", "api/__init__.py", "api/columns.py", "api/reporting.py"
)
BENCH_CODE = code_fingerprint(
    "bench", "algorithms", "kernels", "privacy", "models", "data", "seeding.py"
)


def experiments_file(paper):
    """papers/<paper>/experiments.yaml: the paper's grids."""
    return PAPER_FOLDER(paper) / "experiments.yaml"


def _load_paper(paper):
    path = experiments_file(paper)
    try:
        spec = load_experiments(path)
    except ExperimentConfigError as err:
        raise WorkflowError(str(err)) from None
    check_against_schema(spec, "experiments.schema.yaml", str(path))
    try:
        spec = select_experiments(spec, SELECTED.get(paper), source=str(path))
        jobs = expand_jobs(
            spec, SCALE, source=str(path), dataset_override=config.get("dataset_override"),
            tuning=config.get("tuning", "none"),
        )
    except ExperimentConfigError as err:
        raise WorkflowError(str(err)) from None
    return spec, jobs


# A selection runs only the papers it names ({paper: all}: every experiment of one) among
# ``papers``; one for a paper that does not exist is a typo.
_unknown = sorted(paper for paper in SELECTED if not experiments_file(paper).exists())
if _unknown:
    raise WorkflowError(f"experiments: no papers/<id>/experiments.yaml for {_unknown}")
PAPERS = {}
JOBS = {}
for _paper in selected_papers(config["papers"], SELECTED):
    PAPERS[_paper], _jobs = _load_paper(_paper)
    for _job in _jobs:
        JOBS[(_job.paper, _job.experiment, _job.dataset, _job.method, str(_job.epsilon))] = _job


def prepared_size(dataset):
    """The training size of ``dataset`` if it is prepared as this config prepares it (else
    None: its jobs are planned when they start)."""
    data = config["data"]
    return prepared_train_size(
        Path(f"results/data/{dataset}/meta.json"),
        data.get("dataset_max_rows", {}).get(dataset, data["max_rows"]), data["split_seed"])


# Every job's privacy plan before any job runs (dpminimax.feasibility; in the main process only,
# remembered under .snakemake/ per training code).
if workflow.is_main_process:
    try:
        check_jobs(JOBS.values(), prepared_size, Path(".snakemake/dpminimax/plans.json"),
                   TRAIN_CODE, lambda job: str(experiments_file(job.paper)))
    except ExperimentConfigError as err:
        raise WorkflowError(str(err)) from None


wildcard_constraints:
    paper=r"[a-z0-9_-]+",
    experiment=r"[A-Za-z0-9_-]+",
    dataset=r"[a-z0-9_-]+",
    method=r"[a-z0-9_]+",
    eps=r"inf|[0-9.]+(e-?[0-9]+)?",
    figure=r"[a-z0-9_]+",
    table=r"[a-z0-9_]+",
    bench=r"[a-z0-9_]+",


def job_of(wildcards):
    """The Job behind a train path (KeyError names it if the path is not in the grid)."""
    key = (wildcards.paper, wildcards.experiment, wildcards.dataset, wildcards.method,
           wildcards.eps)
    if key not in JOBS:
        raise WorkflowError(f"no job {key} in the configured grids (scale {SCALE!r})")
    return JOBS[key]


def paper_jobs(paper):
    return [job for job in JOBS.values() if job.paper == paper]


#: The synthetic problems (BYOA's and the bilevel ones): their jobs draw their own data.
SYNTHETIC_PROBLEMS = {*PROBLEMS, *BILEVEL_PROBLEMS}


def problem_pattern(included):
    """A wildcard pattern matching the synthetic problems' names (``included``) or every other
    dataset name: rule ``train`` takes datasets, rule ``train_problem`` problems."""
    names = "|".join(sorted(SYNTHETIC_PROBLEMS))
    # the lookahead ends at the path separator after the wildcard (or the end of the string)
    return f"(?:{names})" if included else f"(?!(?:{names})(?:/|$))[a-z0-9_-]+"


#: Methods trained on datasets whose task is not attacked (paper 004's: their task runs its
#: own attack, Table 2's): rule ``train_unattacked`` trains them.
UNATTACKED_METHODS = sorted(name for name, cls in {**METHODS, **CONTROLS}.items()
                            if not cls.task.attacked and not cls.task.draws_data)


def method_pattern(attacked):
    """A wildcard pattern matching the methods of rule ``train`` (``attacked``) or those of rule
    ``train_unattacked``."""
    names = "|".join(UNATTACKED_METHODS)
    return f"(?!(?:{names})(?:/|$))[a-z0-9_]+" if attacked else f"(?:{names})"


def reported_baselines(paper):
    """The paper's plotted baseline numbers (papers/<paper>/reference/), if it has any."""
    path = Path(workflow.basedir) / "papers" / paper / "reference" / "reported_baselines.csv"
    return str(path) if path.exists() else []


def claims_file(paper):
    """papers/<paper>/claims.yaml: the numbers the paper states (absent for our own slices)."""
    return Path(workflow.basedir) / "papers" / paper / "claims.yaml"


def measured_outputs(paper):
    """The JSON files whose ``claims`` values fill the paper's claims: its workflow benchmarks
    (``benchmarks:`` in experiments.yaml with ``workflow: true``) and its leak attack."""
    return [f"{RESULTS}/{paper}/bench/{name}.json"
            for name, bench in PAPERS[paper].get("benchmarks", {}).items()
            if bench.get("workflow")] + (
        [f"{RESULTS}/{paper}/leak/claims.json"] if "leak" in PAPERS[paper] else [])


def block_settings(paper, block):
    """The paper's ``audit:`` or ``leak:`` block at this scale (None if it has none); delta
    defaults to the paper's."""
    spec = PAPERS[paper].get(block)
    if spec is None:
        return None
    settings = {key: value for key, value in spec.items() if key != "scales"}
    settings.setdefault("delta", PAPERS[paper]["delta"])
    return {**settings, **spec.get("scales", {}).get(SCALE, {})}


def lira_settings(paper):
    """The paper's ``lira:`` block at this scale (:func:`block_settings`), a scale's method
    parameters updating the block's (each method keeps the others)."""
    settings = block_settings(paper, "lira")
    if settings is None:
        return None
    spec = PAPERS[paper]["lira"]
    overrides = spec.get("scales", {}).get(SCALE, {}).get("methods", {})
    return {**settings, "methods": {name: {**(params or {}), **(overrides.get(name) or {})}
                                    for name, params in spec["methods"].items()}}


def lira_epsilons(paper):
    """The epsilons the paper's LiRA jobs train at (refused at DAG time: unknown or
    non-shadowable methods, naming the file)."""
    try:
        return shadow_lira_epsilons(lira_settings(paper))
    except ValueError as err:
        raise WorkflowError(f"{experiments_file(paper)}: {err}") from None


def lira_files(paper, kind):
    return [f"{RESULTS}/{paper}/lira/{kind}_eps={eps}.parquet" for eps in lira_epsilons(paper)]


def benchmark_data(wildcards):
    datasets = PAPERS[wildcards.paper]["benchmarks"][wildcards.bench]["datasets"]
    return {name: f"results/data/{name}/arrays.npz" for name in datasets}


def paper_data_meta(paper):
    """The prepared data's meta.json of every dataset the paper's jobs train on (the dataset
    facts of its claims)."""
    datasets = {job.dataset for job in paper_jobs(paper)} - SYNTHETIC_PROBLEMS
    return [f"results/data/{name}/meta.json" for name in sorted(datasets)]


def data_inputs(wildcards):
    if wildcards.dataset in SYNTHETIC_PROBLEMS:  # its jobs draw their own data
        return {}
    return {
        "arrays": f"results/data/{wildcards.dataset}/arrays.npz",
        "meta": f"results/data/{wildcards.dataset}/meta.json",
    }


def train_inputs(wildcards):
    """A train job's data, and for a tuned job (tuning: protocol) the configurations its
    select_configs rule chose."""
    job = job_of(wildcards)
    inputs = data_inputs(wildcards)
    if job.tuned:
        inputs["selection"] = f"{job.tune_dir}/selected.json"
    return inputs

def all_targets():
    targets = []
    for paper, spec in PAPERS.items():
        targets.append(f"{RESULTS}/{paper}/tables/summary.csv")
        targets.append(f"{RESULTS}/{paper}/report.html")
        if claims_file(paper).exists():
            targets.append(f"{RESULTS}/{paper}/tables/claims.csv")
        if "lira" in spec:
            lira_epsilons(paper)  # refuse a bad block before any job
            targets += [f"{RESULTS}/{paper}/tables/lira.csv",
                        f"{RESULTS}/{paper}/figures/lira.pdf", f"{RESULTS}/{paper}/figures/lira.png"]
        if "leak" in spec:
            targets += [f"{RESULTS}/{paper}/tables/leak.csv",
                        f"{RESULTS}/{paper}/figures/leak.pdf", f"{RESULTS}/{paper}/figures/leak.png"]
        if "audit" in spec:
            targets += [f"{RESULTS}/{paper}/audit/audit.csv",
                        f"{RESULTS}/{paper}/figures/audit.pdf", f"{RESULTS}/{paper}/figures/audit.png"]
        for experiment, exp_spec in spec["experiments"].items():
            targets += [f"{RESULTS}/{paper}/tables/{experiment}/{name}.csv"
                        for name in exp_spec.get("tables", [])]
            for figure in exp_spec.get("figures", []):
                targets += [
                    f"{RESULTS}/{paper}/figures/{experiment}/{figure}.{ext}"
                    for ext in ("pdf", "png")
                ]
    return targets + PAPER_TARGETS


#: Rules whose jobs may ask for a GPU (their ``gpu`` resource: Job.gpus).
GPU_RULES = ("train", "train_unattacked", "tune")


def slurm_resources(rule_name):
    """The config's SLURM account and partition for ``rule_name`` (``slurm:``): a job asking
    for a GPU goes to ``gpu_partition`` (default ``partition``), every other to ``partition``;
    unset keys add nothing."""
    settings = config.get("slurm") or {}
    resources = {}
    if settings.get("account"):
        resources["slurm_account"] = settings["account"]
    cpu = settings.get("partition")
    gpu = settings.get("gpu_partition") or cpu
    if rule_name in GPU_RULES and gpu != cpu:
        resources["slurm_partition"] = lambda wildcards: gpu if job_of(wildcards).gpus else cpu
    elif cpu:
        resources["slurm_partition"] = cpu
    return resources
