"""The paper's checkpoint rule (App. E.2): every ``every`` steps, evaluate each run; keep the
checkpoint with the highest validation accuracy among those that satisfy the constraints on the
training set (hard rates, max_j Gamma_j - gamma_j <= 0). A run that never satisfies them keeps
its last iterate and is flagged ``satisfied = False``.

Checkpoints are scored with the model's fast shared-input prediction where it has one (one matrix
product for all runs; see ``BatchedLogisticRegression.predict_shared``).

The rule reads non-private quantities (train-set constraint values, validation accuracy): it is
outside the privacy guarantee, as in the paper (App. E.2).
"""

from __future__ import annotations

from collections.abc import Callable

import torch


class CheckpointSelector:
    """A training monitor (``Method.fit(..., monitor=selector)``) for R runs.

    ``violation(predicted_train (R, n)) -> (R,)`` is the largest hard constraint violation of
    each run on the training set (``-inf`` for unconstrained methods).
    """

    def __init__(self, x_train: torch.Tensor, x_val: torch.Tensor, y_val: torch.Tensor,
                 violation: Callable[[torch.Tensor], torch.Tensor], every: int) -> None:
        if every < 1:
            raise ValueError(f"eval_every must be >= 1, got {every}")
        self.x_train, self.x_val, self.y_val = x_train, x_val, y_val
        self.violation = violation
        self.every = every
        self.best_state: dict[str, torch.Tensor] | None = None
        self.best_accuracy: torch.Tensor | None = None
        self.best_violation: torch.Tensor | None = None
        self.best_step: torch.Tensor | None = None
        self.evaluations = 0

    def __call__(self, step: int, model, state: dict[str, torch.Tensor]) -> None:
        if step % self.every == 0:
            self.evaluate(step, model, state)

    def evaluate(self, step: int, model, state: dict[str, torch.Tensor]) -> None:
        """Score the current iterate of every run and keep it where it is the best so far."""
        self.evaluations += 1
        predict = getattr(model, "predict_shared", model.predict)
        accuracy = (predict(state, self.x_val) == self.y_val).float().mean(dim=1)
        violation = self.violation(predict(state, self.x_train)).to(accuracy.dtype)
        runs = accuracy.shape[0]
        if self.best_state is None:
            self.best_state = {k: v.clone() for k, v in state.items()}
            self.best_accuracy = torch.full((runs,), -1.0, dtype=accuracy.dtype,
                                            device=accuracy.device)
            self.best_violation = torch.full((runs,), float("inf"), dtype=accuracy.dtype,
                                             device=accuracy.device)
            self.best_step = torch.zeros(runs, dtype=torch.long, device=accuracy.device)
        satisfied = violation <= 0
        was_satisfied = self.best_violation <= 0
        better = satisfied & (~was_satisfied | (accuracy > self.best_accuracy))
        for key, value in state.items():
            self.best_state[key][better] = value[better]
        self.best_accuracy = torch.where(better, accuracy, self.best_accuracy)
        self.best_violation = torch.where(better, violation, self.best_violation)
        self.best_step = torch.where(better, torch.full_like(self.best_step, step), self.best_step)
        self._last = (step, accuracy, violation)

    def select(self, final_step: int, model, final_state: dict[str, torch.Tensor]):
        """The selected state of every run and its record, after scoring the final iterate.

        Returns ``(state, records)`` with one dict per run: ``selected_step``,
        ``val_accuracy``, ``selection_train_violation`` and ``satisfied``; unsatisfied runs get
        their final iterate.
        """
        if self.best_state is None or self._last[0] != final_step:
            self.evaluate(final_step, model, final_state)
        step, accuracy, violation = self._last
        satisfied = self.best_violation <= 0
        state = {k: torch.where(_expand(satisfied, v), self.best_state[k], v)
                 for k, v in final_state.items()}
        records = [
            {"selected_step": int(self.best_step[r]) if satisfied[r] else step,
             "val_accuracy": float(self.best_accuracy[r] if satisfied[r] else accuracy[r]),
             "selection_train_violation": float(
                 self.best_violation[r] if satisfied[r] else violation[r]),
             "satisfied": bool(satisfied[r])}
            for r in range(len(satisfied))
        ]
        return state, records


def _expand(flags: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return flags.to(like.device).view(-1, *[1] * (like.dim() - 1))
