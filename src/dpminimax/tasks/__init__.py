"""Tasks: what a method's runs are evaluated on and whether they are attacked (issue #17)."""

from dpminimax.tasks.base import Task
from dpminimax.tasks.classification import FairClassification
from dpminimax.tasks.optimization import SyntheticOptimization

FAIR_CLASSIFICATION = FairClassification()
SYNTHETIC_OPTIMIZATION = SyntheticOptimization()

__all__ = ["FAIR_CLASSIFICATION", "SYNTHETIC_OPTIMIZATION", "FairClassification",
           "SyntheticOptimization", "Task"]
