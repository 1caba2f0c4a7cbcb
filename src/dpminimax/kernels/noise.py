"""Additive noise mechanisms for R runs: Gaussian (DP-SGD, Abadi et al. 2016, Alg. 1, "add
noise"), Laplace (the noisy histogram of RaCO-DP, Alg. 1 line 5) and the negated Gumbel of
report-noisy-min (the exponential mechanism drawn by the Gumbel-max trick).

Run r's release receives noise of scale s_r (the std sigma_r * C_r of the Gaussian, the scale b_r
of the Laplace) drawn from run r's own generator only, so a run draws the same noise whether it is
trained alone or batched with others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch


def fill_standard_laplace(out: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Fill the 1-d tensor ``out`` with i.i.d. Laplace(0, 1) draws: the difference of two Exp(1)
    variables (computed in float64).

    ``-log(1 - u)`` with ``u ~ U[0, 1)`` is Exp(1) and always finite; torch's Laplace
    distribution takes no generator, and every draw must come from the run's own stream.
    """
    u = torch.empty(2, out.numel(), dtype=torch.float64, device=generator.device)
    exponential = -torch.log1p(-u.uniform_(generator=generator))
    return out.copy_(exponential[0] - exponential[1])


def fill_negated_gumbel(out: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Fill the 1-d tensor ``out`` with i.i.d. negated standard Gumbel draws ``log(-log u)``,
    u ~ U(0, 1) (computed in float64): for scores s_k, ``argmin_k s_k + b Z_k`` is k with
    probability proportional to exp(-s_k / b) (the Gumbel-max trick on -s / b)."""
    u = torch.empty(out.numel(), dtype=torch.float64, device=generator.device)
    u.uniform_(generator=generator).clamp_(min=torch.finfo(torch.float64).tiny)
    return out.copy_(torch.log(-torch.log(u)))


def fill_standard_normal(out: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Fill the 1-d contiguous tensor ``out`` with i.i.d. N(0, 1) draws (the numbers
    ``torch.randn(out.numel(), generator=generator)`` gives, checked bit for bit)."""
    return out.normal_(generator=generator)


def add_noise(
    summed: Mapping[str, torch.Tensor] | torch.Tensor,
    noise_std: torch.Tensor,
    generators: Sequence[torch.Generator],
    distribution: str = "gaussian",
) -> dict[str, torch.Tensor] | torch.Tensor:
    """``summed + noise_std_r * Z`` per run, for a dict of (R, ...) tensors or one tensor, with
    Z i.i.d. standard normal (``distribution="gaussian"``), standard Laplace (``"laplace"``) or
    negated standard Gumbel (``"negated_gumbel"``).

    Run r draws one standard noise vector covering all of its parameters (in the dict's order)
    from ``generators[r]``, into row r of one (R, size) buffer. Runs with ``noise_std_r == 0``
    draw *nothing* (their generator does not advance) and add exact zeros; if no run is noisy
    the input values are returned unchanged. A run's stream position thus depends only on its
    own noise scale and step count, never on the other runs, which keeps batched and
    one-at-a-time training bit-identical.
    """
    if distribution not in _FILLERS:
        raise ValueError(f"noise distribution must be one of {sorted(_FILLERS)}, "
                         f"got {distribution!r}")
    if len(generators) != len(noise_std):
        raise ValueError(f"{len(noise_std)} noise scales but {len(generators)} generators")
    noisy = [std > 0.0 for std in noise_std.tolist()]
    if isinstance(summed, torch.Tensor):
        if not any(noisy):
            return summed
        flat = summed.reshape(len(generators), -1)
        return (flat + _scaled_draws(flat, noise_std, noisy, generators, distribution)
                ).view_as(summed)
    if not any(noisy):
        return dict(summed)
    flat = torch.cat([value.flatten(start_dim=1) for value in summed.values()], dim=1)
    noised = flat + _scaled_draws(flat, noise_std, noisy, generators, distribution)
    sizes = [value[0].numel() for value in summed.values()]
    return {
        name: chunk.view_as(value)
        for (name, value), chunk in zip(summed.items(), noised.split(sizes, dim=1), strict=True)
    }


def _scaled_draws(flat: torch.Tensor, noise_std: torch.Tensor, noisy: Sequence[bool],
                  generators: Sequence[torch.Generator], distribution: str) -> torch.Tensor:
    """``noise_std_r * Z_r`` (R, size) like ``flat``; rows of runs that are not ``noisy`` are
    zeros and draw nothing."""
    fill = _FILLERS[distribution]
    draws = torch.zeros(flat.shape, dtype=flat.dtype, device=generators[0].device)
    for row, draw, generator in zip(draws, noisy, generators, strict=True):
        if draw:
            fill(row, generator)
    return noise_std.to(flat.dtype).unsqueeze(1) * draws.to(flat.device)


_FILLERS = {"gaussian": fill_standard_normal, "laplace": fill_standard_laplace,
            "negated_gumbel": fill_negated_gumbel}
