"""Tasks: what a method's runs are evaluated on and whether they are attacked (issue #17)."""

from dpminimax.tasks.base import Task
from dpminimax.tasks.classification import FairClassification
from dpminimax.tasks.dro import DroClassification
from dpminimax.tasks.optimization import SyntheticOptimization

FAIR_CLASSIFICATION = FairClassification()
SYNTHETIC_OPTIMIZATION = SyntheticOptimization()
DRO_CLASSIFICATION = DroClassification()

__all__ = ["DRO_CLASSIFICATION", "FAIR_CLASSIFICATION", "SYNTHETIC_OPTIMIZATION",
           "DroClassification", "FairClassification",
           "SyntheticOptimization", "Task"]
