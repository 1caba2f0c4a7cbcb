"""What a method's runs are for: the data a task needs, how its runs are evaluated, and whether
membership attacks apply (issue #17 item 4).

``api.train`` calls the method's task to turn a :class:`~dpminimax.fit_result.FitResult`
into one metrics row per run; the workflow attacks a job only where its task is ``attacked``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

import torch

if TYPE_CHECKING:
    from dpminimax.data import PreparedDataset
    from dpminimax.fit_result import FitResult


class Task(ABC):
    """A kind of learning problem a method solves."""

    name: ClassVar[str]
    #: Whether a trained run's model is attacked (membership inference needs models trained
    #: on a member set and held-out rows of the same distribution).
    attacked: ClassVar[bool]
    #: Whether its runs draw their own data (a synthetic problem) instead of training on a
    #: prepared dataset: the workflow then names the problem where a dataset would go.
    draws_data: ClassVar[bool]

    @abstractmethod
    def evaluate(self, fit: FitResult, data: PreparedDataset,
                 device: torch.device) -> list[dict[str, Any]]:
        """One metrics row per run of ``fit`` (method-specific metrics included: what the task
        needs of the method that fitted it is ``fit.method``)."""
