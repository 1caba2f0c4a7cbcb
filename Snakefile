# dpminimax: regenerate every result of the reproduced papers.
#   snakemake --cores all                                   (default config, scale "quick")
#   snakemake --cores 2 --configfile workflow/config/smoke.yaml   (CI-sized)
from snakemake.utils import min_version

min_version("9.0")


configfile: "workflow/config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/tune.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/report_status.smk"
include: "workflow/rules/compare_plan.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/attack.smk"
include: "workflow/rules/compare.smk"


# Each selected paper's own stages (papers/<id>/rules.smk), before the default target reads
# the outputs they add to PAPER_TARGETS.
for _paper_rules in PAPER_RULES:
    include: _paper_rules


report: "workflow/report/workflow.rst"


rule all:
    input:
        report_targets() if REPORTING else all_targets() + compare_targets(),
    default_target: True


# The config's SLURM account and partitions (slurm:) on every rule, beside its own resources.
for _rule in workflow.rules:
    for _name, _value in slurm_resources(_rule.name).items():
        _rule.resources[_name] = _value
