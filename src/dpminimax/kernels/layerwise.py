"""Per-example gradients of Linear / Conv2d / GroupNorm networks from layer inputs and output
gradients.

For a layer y = W a + b, the gradient of example i's loss is ``g_i^T a_i`` where ``g_i`` is the
gradient of that example's loss with respect to the layer output (Goodfellow 2015, "Efficient
per-example gradient computations"); for a convolution the same holds after unfolding the input
into patches (im2col), and a GroupNorm's affine gradients are sums over positions of ``g_i``
times the normalised input. One forward pass records every layer's input and output, one backward
pass of the summed loss yields all ``g`` at once (autograd is asked for output gradients only,
so it skips the weight gradients a normal backward would compute), and one batched matrix product
per layer forms the per-example gradients. This is the book-keeping idea of Bu et al. 2022
("Differentially private optimization on large model at small cost"): the clipped sum then needs
no second backward pass. The result is exact (same contract as
:func:`dpminimax.kernels.per_sample.per_sample_grads`). On a CPU a convolution's per-example
weight gradients are instead one weight gradient of the convolution with the batch folded into
groups (oneDNN), which beats materialising the im2col patches (issue #20, BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from dpminimax.kernels.clip import clip_factors

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
SUPPORTED = (nn.Linear, nn.Conv2d, nn.GroupNorm)


def supports_layerwise(model: nn.Module) -> bool:
    """Whether every trainable parameter of ``model`` sits in a Linear, an ungrouped Conv2d or a
    GroupNorm (its affine scale and shift)."""
    for module in model.modules():
        own = [p for p in module.parameters(recurse=False) if p.requires_grad]
        if not own:
            continue
        if not isinstance(module, SUPPORTED) or getattr(module, "groups", 1) != 1:
            return False
    return True


def layerwise_per_sample_grads(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss_fn: LossFn
) -> dict[str, torch.Tensor]:
    """``{name: (B, *shape)}`` per-example gradients of ``model``'s parameters.

    ``loss_fn(outputs, targets)`` must be the *mean* of per-example losses (every torch loss with
    ``reduction="mean"``), as for :func:`~dpminimax.kernels.per_sample.per_sample_grads`; it is
    multiplied by B to give the summed loss whose output gradients are per-example gradients.
    """
    tape = LayerTape(model, x)
    return tape.per_sample_grads(loss_fn(tape.outputs, y) * x.shape[0])


def layerwise_clipped_grad_sum(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss_fn: LossFn, max_norm: float
) -> dict[str, torch.Tensor]:
    """``{name: sum_i clip(g_i, C)}``: the clipped per-example gradient sum (Abadi et al. 2016,
    Alg. 1), fused; see :meth:`LayerTape.clipped_sum`. Exactly equal in value to
    ``clip_and_accumulate`` of :func:`layerwise_per_sample_grads` (up to rounding)."""
    tape = LayerTape(model, x)
    return tape.clipped_sum_of_loss(loss_fn(tape.outputs, y) * x.shape[0], max_norm)


class LayerTape:
    """One recorded forward pass of ``model`` on ``x``: the outputs, and every Linear / Conv2d /
    GroupNorm layer's input and output, so that per-example gradients of ANY per-example
    objective of the outputs follow from one backward pass (Goodfellow 2015).

    A method whose per-example loss gradient w.r.t. the outputs (its "residual") depends on
    batch-level statistics of the same forward pass (RaCO-DP's noisy histogram, DP-FERMI's W
    step) reads :attr:`outputs`, forms the residual from them and calls
    :meth:`clipped_sum` with it: one forward, one backward, nothing recomputed. ``parameters``
    (name -> tensor requiring grad) replaces the model's own for this pass (``functional_call``),
    which is how one module serves R runs.
    """

    def __init__(self, model: nn.Module, x: torch.Tensor,
                 parameters: Mapping[str, torch.Tensor] | None = None) -> None:
        if not supports_layerwise(model):
            raise ValueError(
                "layerwise per-sample gradients support only Linear, ungrouped Conv2d and "
                "GroupNorm parameters; use dpminimax.kernels.per_sample.per_sample_grads "
                "(torch.func) for this model"
            )
        records: dict[nn.Module, tuple[torch.Tensor, torch.Tensor]] = {}

        def record(module: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor):
            if module in records:
                raise ValueError(f"layer {module} is called twice in one forward pass")
            records[module] = (inputs[0].detach(), output)

        layers = {name: m for name, m in model.named_modules() if isinstance(m, SUPPORTED)}
        handles = [m.register_forward_hook(record) for m in layers.values()]
        try:
            self.outputs = (model(x) if parameters is None
                            else functional_call(model, dict(parameters), (x,)))
        finally:
            for handle in handles:
                handle.remove()
        self._used = [(name, m, *records[m]) for name, m in layers.items()
                      if m in records and _trainable(m)]
        self._batch = x.shape[0]
        self._device = x.device

    def clipped_sum(self, output_grad: torch.Tensor, max_norm: float | torch.Tensor
                    ) -> dict[str, torch.Tensor]:
        """``{name: sum_i clip(J_i^T r_i, C)}`` for the per-example output gradients
        ``output_grad`` (B, *outputs.shape[1:]) (row i = d loss_i / d outputs_i; a zero row, for
        example a padding slot, contributes nothing)."""
        signals = torch.autograd.grad(self.outputs, [out for *_, out in self._used],
                                      grad_outputs=output_grad)
        return self._clip_and_sum(signals, max_norm)

    def clipped_sum_of_loss(self, summed_loss: torch.Tensor, max_norm: float | torch.Tensor
                            ) -> dict[str, torch.Tensor]:
        """As :meth:`clipped_sum`, for the SUM over examples of a per-example loss of
        :attr:`outputs`."""
        signals = torch.autograd.grad(summed_loss, [out for *_, out in self._used])
        return self._clip_and_sum(signals, max_norm)

    def per_sample_grads(self, summed_loss: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{name: (B, *shape)}`` per-example gradients of a summed per-example loss."""
        signals = torch.autograd.grad(summed_loss, [out for *_, out in self._used])
        return self._per_example(signals)

    def per_example(self, output_grad: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{name: (B, *shape)}`` per-example gradients ``J_i^T r_i`` for the output gradients
        ``output_grad`` (B, *outputs.shape[1:]) (row i = d loss_i / d outputs_i), unclipped:
        what a method that clips a combination of gradients (a SPIDER difference) needs."""
        signals = torch.autograd.grad(self.outputs, [out for *_, out in self._used],
                                      grad_outputs=output_grad)
        return self._per_example(signals)

    def _per_example(self, signals) -> dict[str, torch.Tensor]:
        """Every recorded layer's per-example gradients from its output gradients ``signals``."""
        grads: dict[str, torch.Tensor] = {}
        for (name, module, activation, _), grad_out in zip(self._used, signals, strict=True):
            grads.update(_named(name, _layer_grads(module, activation, grad_out)))
        return grads

    def _clip_and_sum(self, signals, max_norm) -> dict[str, torch.Tensor]:
        """Per-example norms of a Linear layer on (B, in) inputs come from the "ghost norm"
        identity ``||g_i a_i^T||^2 = ||g_i||^2 ||a_i||^2`` (Goodfellow 2015; Li et al. 2022) and
        its clipped sum is one matrix product ``(c * G)^T A``, so no per-example gradient is
        formed for it; convolutions and norms materialise their (small) per-example gradients,
        which is cheaper than their ghost norm over all pairs of positions (the mixed strategy
        of Bu et al. 2022)."""
        parts = []
        squared = torch.zeros(self._batch, device=self._device)
        for (name, module, activation, _), grad_out in zip(self._used, signals, strict=True):
            if _is_ghost(module, activation):
                squared = squared + grad_out.square().sum(dim=1) * (
                    activation.square().sum(dim=1) + (1.0 if module.bias is not None else 0.0)
                )
                parts.append((name, module, activation, grad_out, None))
            else:
                per_example = _layer_grads(module, activation, grad_out)
                for value in per_example.values():
                    squared = squared + value.flatten(start_dim=1).square().sum(dim=1)
                parts.append((name, module, activation, grad_out, per_example))
        factors = clip_factors(squared.sqrt(), max_norm)
        summed: dict[str, torch.Tensor] = {}
        for name, module, activation, grad_out, per_example in parts:
            if per_example is None:
                scaled = grad_out * factors.unsqueeze(1)
                layer = {"weight": scaled.T @ activation, "bias": scaled.sum(dim=0)}
            else:
                layer = {k: torch.einsum("b,b...->...", factors, v)
                         for k, v in per_example.items()}
            summed.update(_named(name, {k: v for k, v in layer.items()
                                        if getattr(module, k) is not None
                                        and getattr(module, k).requires_grad}))
        return summed


def _trainable(module: nn.Module) -> bool:
    return any(p.requires_grad for p in module.parameters(recurse=False))


def _is_ghost(module: nn.Module, activation: torch.Tensor) -> bool:
    return isinstance(module, nn.Linear) and activation.dim() == 2


def _named(prefix: str, values: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {f"{prefix}.{key}" if prefix else key: value for key, value in values.items()}


def _layer_grads(
    module: nn.Module, activation: torch.Tensor, grad_out: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Per-example ``{"weight": (B, *W), "bias": (B, *b)}`` of one layer."""
    batch = activation.shape[0]
    if isinstance(module, nn.GroupNorm):
        return _group_norm_grads(module, activation, grad_out)
    if isinstance(module, nn.Conv2d) and activation.device.type == "cpu":
        grads = {"weight": _conv_weight_grads(module, activation, grad_out)}
        if module.bias is not None:
            grads["bias"] = grad_out.sum(dim=(2, 3))
        return {key: value for key, value in grads.items() if getattr(module, key).requires_grad}
    if isinstance(module, nn.Conv2d):
        patches = F.unfold(
            activation, module.kernel_size, dilation=module.dilation, padding=module.padding,
            stride=module.stride,
        )  # (B, C_in * kh * kw, L)
        outputs = grad_out.flatten(start_dim=2)  # (B, C_out, L)
    else:
        patches = activation.reshape(batch, -1, activation.shape[-1]).transpose(1, 2)
        outputs = grad_out.reshape(batch, -1, grad_out.shape[-1]).transpose(1, 2)
    weight = torch.bmm(outputs, patches.transpose(1, 2))
    grads = {"weight": weight.view(batch, *module.weight.shape)}
    if module.bias is not None:
        grads["bias"] = outputs.sum(dim=-1)
    return {key: value for key, value in grads.items() if getattr(module, key).requires_grad}


def _conv_weight_grads(
    module: nn.Conv2d, activation: torch.Tensor, grad_out: torch.Tensor
) -> torch.Tensor:
    """Per-example conv weight gradients (B, *W) as ONE weight gradient of a convolution with
    the batch folded into groups (example i = group i): on a CPU (oneDNN) faster than
    im2col + bmm for most ResNet20 / SmallCNN / ResNet16 layers (BENCHMARKS.md)."""
    batch = activation.shape[0]
    out_channels = module.weight.shape[0]
    weight = torch.ops.aten.convolution_backward(
        grad_out.reshape(1, batch * out_channels, *grad_out.shape[2:]),
        activation.reshape(1, -1, *activation.shape[2:]),
        activation.new_empty(batch * out_channels, *module.weight.shape[1:]),
        None, module.stride, module.padding, module.dilation, False, (0, 0), batch,
        (False, True, False),
    )[1]
    return weight.view(batch, *module.weight.shape)


def _group_norm_grads(
    module: nn.GroupNorm, activation: torch.Tensor, grad_out: torch.Tensor
) -> dict[str, torch.Tensor]:
    """GroupNorm ``y = gamma * x_hat + beta`` (Wu & He 2018) normalises each example by its own
    statistics, so example i's gradients are ``sum over positions of g_i * x_hat_i`` (scale) and
    ``sum of g_i`` (shift), with x_hat recomputed from the recorded input."""
    normalised = F.group_norm(activation, module.num_groups, eps=module.eps)
    positions = tuple(range(2, activation.dim()))
    grads = {"weight": (grad_out * normalised).sum(dim=positions),
             "bias": grad_out.sum(dim=positions)}
    return {key: value for key, value in grads.items()
            if getattr(module, key) is not None and getattr(module, key).requires_grad}
