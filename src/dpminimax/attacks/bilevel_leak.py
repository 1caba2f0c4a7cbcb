"""The leak of DP bilevel §3 as an attack (our design) on P-D (Example 3.1): the neighbouring
datasets S+ and S- share xi_1..xi_{n-1} (uniform in the unit ball) and set xi_n = +u or -u,
u = e_1. Mechanisms, each run N times per dataset (one batched program):

* M0: one exact hypergradient at 0, grad F_S(0) = xi_bar (Eq. (1));
* M1: NP-Pen (``np_pen``), x_out -> -xi_bar; M2: the naive outer step (``bilevel_naive_outer``:
  noise for f's data dependence, none here), so M2 = M1;
* M3: Algorithm 1 (``dp_bilevel``) at the run's epsilon, each epsilon on its own noise seeds;
* M3-control, the positive control: M3's statistics on an un-noised release, Alg. 1 with
  exact inner solutions and sigma 0 (``np_pen``) fitted through M3's path (every run fitted,
  both statistics): it must reach AUC 1, or the test could not see a leak.

The attacker's statistics, why they need no d, and how a study is batched:
``papers/bilevel/NOTES.md`` ("The leak attack")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.attacks.lira import epsilon_lower_bound_from_roc
from dpminimax.epsilon import Epsilon
from dpminimax.metrics.classification import roc_auc
from dpminimax.problems import FixedSample, LeakExample
from dpminimax.problems.bilevel import ball
from dpminimax.seeding import make_generator

PROBLEM = "pd_leak_example"
#: M3's positive control: the same statistics on an un-noised release.
CONTROL = "M3-control"
#: Mechanisms whose inner releases are attacked too (every run fitted through Alg. 1's program).
RELEASING = ("M3", CONTROL)
#: The method each trained mechanism runs (M0 is one exact hypergradient, no method).
MECHANISMS = {"M1": "np_pen", "M2": "bilevel_naive_outer", "M3": "dp_bilevel",
              CONTROL: "np_pen"}
#: The target M2 is calibrated to (its record says epsilon inf: the inner solutions are exact).
NAIVE_TARGET = 1.0
#: Mechanisms whose output is a function of the dataset alone (no noise on P-D).
DETERMINISTIC = ("M0", "M1", "M2")
#: The most per-example values (runs x n x d) one fitted chunk of runs holds: 2^19 doubles,
#: 4 MiB (about 50 runs at d = 10, n = 1000; faster per run than 1000 runs at once,
#: BENCHMARKS.md).
CHUNK_ELEMENTS = 2**19
#: What one entry of a leak block's ``settings`` may set (the rest is the block's).
SETTING_KEYS = ("d", "n", "runs")
#: Which way each mechanism's output moves with xi_n (M0 returns +xi_bar, the rest -xi_bar).
SIGNS = {"M0": 1.0, "M1": -1.0, "M2": -1.0, "M3": -1.0, CONTROL: -1.0}


def neighbours(d: int, n: int, seed: int) -> tuple[FixedSample, FixedSample]:
    """S+ and S-: n - 1 shared points uniform in the unit ball, then xi_n = +e_1 / -e_1."""
    base = ball(n - 1, d, make_generator(seed, "attack_base"), torch.float64)
    target = torch.zeros(1, d, dtype=torch.float64)
    target[0, 0] = 1.0
    return (FixedSample({"xi": torch.cat([base, target])}),
            FixedSample({"xi": torch.cat([base, -target])}))


def direction(plus: FixedSample, minus: FixedSample) -> torch.Tensor:
    """u: the unit vector along which the neighbours differ, (xi_n^+ - xi_n^-) normalised."""
    gap = plus.examples["xi"][-1] - minus.examples["xi"][-1]
    return gap / torch.linalg.vector_norm(gap)


def released(method, sample: FixedSample, runs: Sequence[RunSpec]
             ) -> dict[str, torch.Tensor]:
    """Alg. 1's program for ``runs`` on ``sample``, stepped to the end: its output x_out and
    the inner releases' likelihood-ratio sum sum_t sum_k (r_k / sigma_k^2) y~_{k,t} (module
    docstring), each (R, d)."""
    resolved, shared, plans = method.plan_runs(sample, runs)
    program = method.program(sample, runs, resolved, shared, plans, torch.device("cpu"))
    weights = {}
    lam = torch.tensor([p["lam"] for p in resolved], dtype=torch.float64).unsqueeze(-1)
    response = {"y": torch.ones_like(lam), "y_lambda": lam / (1.0 + lam)}
    for name in response:
        sigma = torch.tensor([[_sigma(plan, f"inner_{name}")] for plan in plans],
                             dtype=torch.float64)
        weights[name] = response[name] / torch.where(sigma > 0, sigma ** 2, 1.0)
    inner = torch.zeros(len(runs), program.x.shape[-1], dtype=torch.float64)
    for _ in range(program.steps):
        program.step()
        inner = inner + sum(weights[name] * program.released[name] for name in weights)
    return {"x": program.state["x"], "inner": inner}


def _sigma(plan, name: str) -> float:
    """The noise std of release ``name`` of ``plan`` (0: un-noised)."""
    release = plan.release(name)
    return release.noise_multiplier * release.sensitivity if release.noise_multiplier else 0.0


def outputs(mechanism: str, sample: FixedSample, seeds: Sequence[int], epsilon: float,
            delta: float, params: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """Each run's output ``x`` (N, d) of ``mechanism`` on ``sample`` (M0: grad F_S(0); M1-M3:
    x_out of the method fitted with ``params`` on P-D at ``epsilon``, one run per seed) and,
    for M3 and its control, ``inner``: the weighted sum of its inner releases
    (:func:`released`). M1, M2 are fitted on two seeds (raising unless both outputs are equal)
    and repeated N times; M3 and its control in chunks of runs (module docstring)."""
    n, d = sample.examples["xi"].shape
    if mechanism == "M0":
        problem = LeakExample(d)
        stats = problem.statistics({"xi": sample.examples["xi"].unsqueeze(0)})
        return {"x": problem.hypergradient(torch.zeros(1, d, dtype=torch.float64),
                                           stats).expand(len(seeds), d)}
    name = MECHANISMS[mechanism]
    method = get_method(name)
    grid = {"problem": PROBLEM, "d_x": d, "d_y": d, **params}

    def specs(chunk: Sequence[int]) -> list[RunSpec]:
        return [RunSpec(seed, epsilon, delta, grid) for seed in chunk]

    seeds = list(seeds)
    if mechanism in DETERMINISTIC:
        probe = method.fit(sample, specs(seeds[:2]), torch.device("cpu")).state["x"]
        if not torch.equal(probe[0], probe[-1]):
            raise RuntimeError(f"{mechanism} ({name}) gave different outputs on seeds "
                               f"{seeds[:2]}: it is not a function of the dataset alone")
        return {"x": probe[:1].expand(len(seeds), d)}
    size = max(1, CHUNK_ELEMENTS // (n * d))
    chunks = [released(method, sample, specs(seeds[i:i + size]))
              for i in range(0, len(seeds), size)]
    return {key: torch.cat([chunk[key] for chunk in chunks]) for key in chunks[0]}


def distinguish(plus: torch.Tensor, minus: torch.Tensor, sign: float, delta: float,
                u: torch.Tensor | None = None) -> dict[str, float]:
    """AUC and the empirical epsilon lower bound of the test "S+" on sign <x_out, u> (u: the
    unit vector the neighbours differ along, :func:`direction`; default e_1)."""
    if u is None:
        u = torch.zeros(plus.shape[-1], dtype=plus.dtype)
        u[0] = 1.0
    scores = sign * torch.cat([plus @ u, minus @ u]).numpy()
    labels = np.concatenate([np.ones(len(plus), bool), np.zeros(len(minus), bool)])
    return {"auc": float(roc_auc(scores, labels)),
            "epsilon_hat": epsilon_lower_bound_from_roc(scores, labels, delta)}


def reconstruct(mechanism: str, output: torch.Tensor, sample: FixedSample) -> torch.Tensor:
    """xi_n from one output (d,) and xi_1..xi_{n-1} (M0 and the penalty methods M1, M2)."""
    xi = sample.examples["xi"]
    return SIGNS[mechanism] * len(xi) * output - xi[:-1].sum(0)


def leak_table(d: int, n: int, runs: int, epsilons: Sequence[float], delta: float,
               seed: int = 0, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per mechanism (and per epsilon for M3): AUC, epsilon_hat and, for M0-M2, the
    reconstruction error ||xi_n_hat - xi_n|| (largest over runs and both datasets); for M3
    and its control also ``auc_inner``, ``epsilon_hat_inner`` of the attack on the inner
    releases. Case k runs on seeds 2 k N .. 2 k N + N - 1 (S+) and the next N (S-)."""
    params = dict(params or {})
    plus, minus = neighbours(d, n, seed)
    u = direction(plus, minus)
    cases = [("M0", math.inf), ("M1", math.inf), ("M2", NAIVE_TARGET),
             *(("M3", epsilon) for epsilon in epsilons), (CONTROL, math.inf)]
    rows = []
    for k, (mechanism, target) in enumerate(cases):
        start = 2 * k * runs
        out_plus = outputs(mechanism, plus, range(start, start + runs), target, delta, params)
        out_minus = outputs(mechanism, minus, range(start + runs, start + 2 * runs), target,
                            delta, params)
        row = {"mechanism": mechanism, "epsilon": target if mechanism == "M3" else math.inf,
               "d": d, "n": n, "runs": runs,
               **distinguish(out_plus["x"], out_minus["x"], SIGNS[mechanism], delta, u)}
        if mechanism in RELEASING:
            inner = distinguish(out_plus["inner"], out_minus["inner"], 1.0, delta, u)
            row |= {f"{key}_inner": value for key, value in inner.items()}
        else:
            row["reconstruction_error"] = max(
                float(torch.linalg.vector_norm(
                    reconstruct(mechanism, out["x"], sample) - sample.examples["xi"][-1],
                    dim=-1).max()) for out, sample in ((out_plus, plus), (out_minus, minus)))
        rows.append(row)
    return rows


def leak_settings(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The (d, n) settings of a ``leak:`` block (its scale already applied), each a full set of
    :func:`leak_table` arguments: ``settings: [{d, n[, runs]}, ...]`` with the block's
    ``runs``, ``epsilons``, ``delta``, ``seed`` and ``params`` shared (an entry's ``runs``
    overrides the block's); a block with top-level ``d`` and ``n`` (the one-setting form) is
    one setting. Raises on both forms at once, an unknown key or a repeated (d, n)."""
    if "settings" in block:
        if "d" in block or "n" in block:
            raise ValueError("a leak block takes either settings: [{d, n}, ...] or one d and n, "
                             "not both")
        entries = list(block["settings"])
    else:
        entries = [{"d": block["d"], "n": block["n"]}]
    if not entries:
        raise ValueError("a leak block needs at least one (d, n) setting")
    shared = {"runs": int(block["runs"]), "epsilons": [float(Epsilon.parse(e, "leak.epsilons"))
                                                      for e in block["epsilons"]],
              "delta": float(block["delta"]), "seed": int(block.get("seed", 0)),
              "params": dict(block.get("params") or {})}
    settings, seen = [], set()
    for entry in entries:
        unknown = set(entry) - set(SETTING_KEYS)
        if unknown or not {"d", "n"} <= set(entry):
            raise ValueError(f"a leak setting takes d, n and optionally runs; got {dict(entry)}")
        setting = {**shared, **{key: int(value) for key, value in entry.items()}}
        key = setting["d"], setting["n"]
        if key in seen:
            raise ValueError(f"leak setting d = {key[0]}, n = {key[1]} listed twice")
        seen.add(key)
        settings.append(setting)
    return settings


def leak_study(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """:func:`leak_table` at every setting of a ``leak:`` block (:func:`leak_settings`), the
    rows in the order of the settings."""
    return [row for setting in leak_settings(block) for row in leak_table(**setting)]
