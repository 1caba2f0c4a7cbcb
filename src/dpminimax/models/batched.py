"""Models with a leading run axis: the state of R independent runs as one set of tensors.

A *batched model* knows how to initialise R runs, compute per-example losses and predictions for
all of them at once, and compute the sum of clipped per-example gradients (the privacy-critical
quantity of DP-SGD, Abadi et al. 2016 Alg. 1) through the kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from dpminimax.kernels.gather import IndexedRows, as_tensor
from dpminimax.kernels.linear import (
    linear_clipped_grad_sum,
    linear_logits,
    linear_losses,
    private_linear_step,
)

if TYPE_CHECKING:
    from dpminimax.privacy.release import BatchedRelease


@dataclass(frozen=True)
class BatchedLogisticRegression:
    """Logistic regression for R runs: ``weight`` (R, K, d), ``bias`` (R, K).

    ``num_classes == 1`` is binary logistic regression (sigmoid, labels in {0, 1}); ``K >= 2`` is
    multinomial logistic regression (softmax cross-entropy). Gradients use the closed form of
    :mod:`dpminimax.kernels.linear` (never materialising per-example gradients).
    """

    num_features: int
    num_classes: int = 1

    name = "logistic_regression"

    def init_state(self, runs: int, device: torch.device,
                   seeds: Sequence[int] | None = None) -> dict[str, torch.Tensor]:
        """Zero initialisation (the convex problem does not need random starts; ``seeds`` are
        accepted for the common interface with :class:`~dpminimax.models.network.BatchedNetwork`
        and not used)."""
        return {
            "weight": torch.zeros(runs, self.num_classes, self.num_features, device=device),
            "bias": torch.zeros(runs, self.num_classes, device=device),
        }

    def logits(self, state: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Logits (R, n, K) for inputs ``x`` of shape (n, d) shared by all runs or (R, n, d)."""
        return linear_logits(state["weight"], state["bias"], x)

    def scale_logits(self, state: dict[str, torch.Tensor], factor: torch.Tensor
                     ) -> dict[str, torch.Tensor]:
        """The state whose logits are run r's times ``factor[r]`` (R,) (post-processing)."""
        return {"weight": state["weight"] * factor.reshape(-1, 1, 1),
                "bias": state["bias"] * factor.reshape(-1, 1)}

    def losses(self, state: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor):
        """Per-example losses (R, n)."""
        yr = y if y.dim() == 2 else y.unsqueeze(0).expand(state["weight"].shape[0], -1)
        return linear_losses(state["weight"], state["bias"], x, yr)

    def predict(self, state: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Predicted labels (R, n)."""
        logits = self.logits(state, x)
        if self.num_classes == 1:
            return (logits[..., 0] > 0).long()
        return logits.argmax(dim=-1)

    def predict_shared(self, state: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Predicted labels (R, n) of inputs ``x`` (n, d) shared by all runs, by ONE matrix
        product ``x @ W^T`` over every run's weights: much faster than :meth:`predict` for
        many runs, but its last bits may depend on the number of runs (BLAS blocking), so it is
        used only where that cannot matter (monitoring checkpoints), never for reported metrics.
        """
        runs, classes, features = state["weight"].shape
        logits = (x @ state["weight"].reshape(runs * classes, features).T
                  + state["bias"].reshape(-1)).view(-1, runs, classes).transpose(0, 1)
        if classes == 1:
            return (logits[..., 0] > 0).long()
        return logits.argmax(dim=-1)

    def clipped_grad_sum(self, state, x, y, mask, max_norm) -> dict[str, torch.Tensor]:
        """Sum over the batch of per-example gradients clipped to ``max_norm`` (R,)."""
        grad_w, grad_b = linear_clipped_grad_sum(
            state["weight"], state["bias"], x, y, mask, max_norm
        )
        return {"weight": grad_w, "bias": grad_b}

    def per_example_grads(self, state: dict[str, torch.Tensor], x: torch.Tensor | IndexedRows,
                          residual_fn: Callable[[torch.Tensor], torch.Tensor]
                          ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Logits (R, B, K) and per-example gradients ``{"weight": (R, B, K, d), "bias":
        (R, B, K)}`` of the batch ``x`` (R, B, d) for the logit gradients ``residual_fn(logits)``
        (R, B, K), in closed form: ``r_i x_i^T`` and ``r_i`` (same contract as
        :meth:`dpminimax.models.network.BatchedNetwork.per_example_grads`)."""
        logits = linear_logits(state["weight"], state["bias"], x)
        residual = residual_fn(logits)
        rows = as_tensor(x)
        return logits, {"weight": residual.unsqueeze(-1) * rows.unsqueeze(-2), "bias": residual}

    def private_step(self, state: dict[str, torch.Tensor], x: torch.Tensor | IndexedRows,
                     mask: torch.Tensor,
                     residual_fn: Callable[[torch.Tensor], torch.Tensor], *,
                     release: BatchedRelease,
                     generators: Sequence[torch.Generator], step_size: torch.Tensor,
                     dropout_streams: Sequence[torch.Generator] | None = None) -> torch.Tensor:
        """One clipped, noised step from the per-example logit gradients ``residual_fn(logits)``
        (R, B, K) of the batch ``x`` (R, B, d), in place; returns the logits (same contract as
        :meth:`dpminimax.models.network.BatchedNetwork.private_step`; no dropout here). ``x``
        may be :class:`~dpminimax.kernels.gather.IndexedRows`, read without a copy."""
        logits = linear_logits(state["weight"], state["bias"], x)
        private_linear_step(state, residual_fn(logits), x, mask, release=release,
                            generators=generators, step_size=step_size)
        return logits
