"""The SLURM profile: what it asks for (a dry run, no cluster needed) and, on a real SLURM
cluster (scripts/slurm/setup_local_slurm.sh makes a one-node one here), that every job of a smoke
run goes out as a SLURM job with exactly those resources, as ``sacct`` records them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from wfhelpers import REPO, run_snakemake

from dpminimax.experiments import expand_jobs, load_experiments

PROFILE = "workflow/profiles/slurm"
COMPOSED = ("Using profiles workflow/profiles/slurm and workflow specific profile "
            "profiles/default")


def _jobs(output: str) -> dict[int, dict]:
    """Snakemake's job blocks (dry run or real run): jobid -> rule, wildcards, resources."""
    jobs = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", output):
        head = re.match(r"(?:local)?rule (\w+):\n", block)
        jobid = re.search(r"^\s+jobid: (\d+)$", block, re.M)
        if not head or not jobid:
            continue
        fields = {}
        for key in ("wildcards", "resources"):
            line = re.search(rf"^\s+{key}: (.*)$", block, re.M)
            fields[key] = dict(item.split("=", 1) for item in line.group(1).split(", ")) \
                if line else {}
        jobs[int(jobid.group(1))] = {"rule": head.group(1), **fields}
    return jobs


def _profile_resources(rule: str) -> dict[str, int]:
    """The slurm profile's runtime / mem_mb for ``rule`` at the first attempt."""
    profile = yaml.safe_load((REPO / PROFILE / "config.yaml").read_text())
    spec = {**profile["default-resources"], **profile.get("set-resources", {}).get(rule, {})}
    return {key: int(eval(str(spec[key]), {"attempt": 1})) for key in ("runtime", "mem_mb")}


def test_slurm_dry_run_asks_for_the_cluster_resources_and_a_gpu_for_paper_networks(
        workflow_copy):
    result = run_snakemake(workflow_copy, "--profile", PROFILE, "--config", "scale=paper", "-n")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    assert COMPOSED in out, out[:2000]
    jobs = list(_jobs(out).values())

    models = {}
    for paper in ("baselines", "racodp", "dpfermi"):
        spec = load_experiments(REPO / "papers" / paper / "experiments.yaml")
        for job in expand_jobs(spec, "paper"):
            models[(job.paper, job.experiment, job.dataset, job.method, str(job.epsilon))] = \
                job.params.get("model", "logistic_regression")
    train = [job for job in jobs if job["rule"] == "train"]
    assert len(train) == len(models)
    seen = set()
    for job in train:
        w, res = job["wildcards"], job["resources"]
        model = models[(w["paper"], w["experiment"], w["dataset"], w["method"], w["eps"])]
        seen.add(model)
        if model == "logistic_regression":
            assert res["gpu"] == "0", job
            assert int(res["runtime"]) >= 60 and int(res["mem_mb"]) >= 2000, job
        else:  # a paper-scale network: one GPU, a day, host memory for the images
            assert res["gpu"] == "1", job
            assert int(res["runtime"]) >= 720 and int(res["mem_mb"]) >= 16000, job
    assert {"logistic_regression", "resnet16", "vgg9"} <= seen

    # a synthetic-problem job (BYOA): a CPU job with the train rule's cluster resources
    problems = [job for job in jobs if job["rule"] == "train_problem"]
    assert problems
    for job in problems:
        res = job["resources"]
        assert int(res["runtime"]) >= 60 and int(res["mem_mb"]) >= 2000, job
        assert res.get("gpu", "0") == "0", job

    # paper 004's jobs (their task runs its own attack): ResNet20 on one GPU at the paper scale
    unattacked = [job for job in jobs if job["rule"] == "train_unattacked"]
    assert unattacked
    for job in unattacked:
        res = job["resources"]
        assert res["gpu"] == "1", job
        assert int(res["runtime"]) >= 720 and int(res["mem_mb"]) >= 16000, job

    # every other rule: the slurm profile's values, not the local defaults (mem_mb=1000, none)
    for job in jobs:
        if job["rule"] in ("train", "train_unattacked", "train_problem", "all"):
            continue
        want = _profile_resources(job["rule"])
        got = {key: int(job["resources"][key]) for key in want}
        assert got == want, job


def test_only_paper_scale_networks_ask_for_a_gpu():
    spec = load_experiments(REPO / "papers/racodp/experiments.yaml")
    for scale in ("smoke", "default", "quick"):
        jobs = expand_jobs(spec, scale)
        assert any(job.params.get("model", "").startswith("resnet16") for job in jobs)
        assert all(job.gpus == 0 for job in jobs)
    paper = expand_jobs(spec, "paper")
    assert {job.gpus for job in paper if job.params.get("model") == "resnet16"} == {1}
    assert {job.gpus for job in paper if "model" not in job.params
            or job.params["model"] == "logistic_regression"} == {0}


def _cluster_up() -> bool:
    if shutil.which("sbatch") is None or shutil.which("sacct") is None:
        return False
    try:
        states = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                                timeout=20).stdout.split()
        subprocess.run(["sacct", "-n", "-X", "-j", "1"], capture_output=True, check=True,
                       timeout=20)
    except (subprocess.SubprocessError, OSError):
        return False
    return any(state.rstrip("*") in ("idle", "mix", "alloc") for state in states)


@pytest.mark.slow
@pytest.mark.skipif(not _cluster_up(), reason="no SLURM cluster with sacct here "
                    "(scripts/slurm/setup_local_slurm.sh makes one)")
def test_smoke_jobs_run_as_slurm_jobs_with_the_profiles_resources(workflow_copy):
    # prepare_data (the profile's set-resources) and train (per-job resources in the
    # rule) on one dataset: the private and the non-private model.
    targets = [f"results/baselines/train/dpsgd_lr/adult/{job}/metrics.parquet"
               for job in ("dp_sgd/eps~1", "dp_sgd_nonprivate/eps~inf")]
    result = run_snakemake(
        workflow_copy, "--profile", PROFILE, "--configfile", "workflow/config/smoke.yaml",
        "--config", "papers=[baselines]", "--slurm-init-seconds-before-status-checks", "2",
        *targets, timeout=1200)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    assert COMPOSED in out
    for target in targets:
        assert (Path(workflow_copy) / target).stat().st_size > 0

    jobs = _jobs(out)
    submitted = {int(job): slurm for job, slurm in re.findall(
        r"Job (\d+) has been submitted with SLURM jobid (\d+)", out)}
    assert {job["rule"] for job in jobs.values()} == {"prepare_data", "train"}
    assert set(submitted) == set(jobs), (submitted, jobs)

    sacct = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-j", ",".join(submitted.values()),
         "-o", "JobIDRaw,State,ReqCPUS,ReqMem,TimelimitRaw,ReqTRES,Comment"],
        capture_output=True, text=True, check=True).stdout
    records = {row.split("|")[0]: row.split("|") for row in sacct.splitlines()}
    assert set(records) == set(submitted.values()), sacct
    threads = yaml.safe_load((REPO / "workflow/profiles/default/config.yaml").read_text())[
        "set-threads"]
    for jobid, job in jobs.items():
        _, state, cpus, mem, minutes, tres, comment = records[submitted[jobid]]
        rule, res = job["rule"], job["resources"]
        assert state == "COMPLETED", (job, records[submitted[jobid]])
        assert comment.startswith(f"rule_{rule}"), comment
        assert int(cpus) == threads.get(rule, 1), (job, cpus)
        assert mem == f"{res['mem_mb']}M" and int(minutes) == int(res["runtime"]), (job, sacct)
        assert "gpu" not in tres, tres
        if rule != "train":  # train's are per job (the rule); the others the profile's
            assert _profile_resources(rule) == {"runtime": int(minutes),
                                                "mem_mb": int(mem.rstrip("M"))}
        else:
            assert res["gpu"] == "0" and int(res["mem_mb"]) > 1000, job


def test_config_keys_set_account_and_partitions_keeping_every_resource(workflow_copy):
    """``slurm:`` in the config (issue 40 item 11): every job gets the account; GPU jobs the GPU
    partition, every other job the CPU one; runtime, mem_mb and gpu stay the profile's and the
    rules' (unlike ``--default-resources``, which replaces the profile's defaults)."""
    result = run_snakemake(
        workflow_copy, "--profile", PROFILE, "-n", "--config", "scale=paper",
        "experiments={dpdro: [table3], baselines: all}",
        "slurm={account: acc1, partition: cpuq, gpu_partition: gpuq}")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    jobs = list(_jobs(out).values())
    assert {"train", "figure", "prepare_data"} <= {job["rule"] for job in jobs}
    gpu_jobs = 0
    for job in jobs:
        resources = job["resources"]
        assert resources["slurm_account"] == "acc1", job
        gpu = int(resources.get("gpu", 0))
        gpu_jobs += gpu
        assert resources["slurm_partition"] == ("gpuq" if gpu else "cpuq"), job
        if job["rule"] in ("train", "train_unattacked"):
            assert int(resources["runtime"]) == (1440 if gpu else 240), job
            assert int(resources["mem_mb"]) == (32000 if gpu else 8000), job
        else:
            expected = _profile_resources(job["rule"])
            assert {key: int(resources[key]) for key in expected} == expected, job
    assert gpu_jobs > 0  # paper-scale networks ask for a GPU
