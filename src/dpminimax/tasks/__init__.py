"""Tasks: what a method's runs are evaluated on and whether they are attacked (issue #17)."""

from dpminimax.tasks.base import Task
from dpminimax.tasks.classification import FairClassification

FAIR_CLASSIFICATION = FairClassification()

__all__ = ["FAIR_CLASSIFICATION", "FairClassification", "Task"]
