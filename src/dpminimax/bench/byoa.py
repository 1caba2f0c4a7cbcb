"""BYOA (paper 003) base-solver throughput: per-sample gradient evaluations per second on one
core (torch at one thread), to set against our CPU cost model (which assumes 2e7
per second per core).

Three rates per problem (P1 least squares, G1 quadratic game) at ``d`` and ``n``, each in
per-sample gradients per second (all blocks of one example = one gradient, our convention):

* ``full``: one ``per_example_grads`` call on all n examples (R = 1), what GD, AGD,
  extragradient and every certificate or snapshot cost;
* ``single``: one call on one example, what an SVRG-type inner step costs (Python-bound);
* ``svrg``: a whole solve (``svrg`` on P1, ``pb_svrg`` on G1) to Alg. 1's / Alg. 3's radius,
  its counted evaluations over its wall time.

And per iterative solver fit for the problem, on ``runs`` runs of ``runs_n`` examples each
(their own samples and streams, the same radius): the counted evaluations of all runs over the
wall time of ``runs`` sequential ``solve`` calls (``sequential``) and of one ``solve_runs``
call (``batched``; one torch call per step for all runs).
"""

from __future__ import annotations

import time

import torch

from dpminimax.algorithms.minimax.output_perturbation import output_target
from dpminimax.bench.common import interleaved_medians
from dpminimax.problems import get_problem
from dpminimax.seeding import make_generator
from dpminimax.solvers import SOLVERS, solve, solve_runs

SOLVER = {"p1_least_squares": "svrg", "g1_quadratic_game": "pb_svrg"}


def run_gradient_throughput(d: int = 20, n: int = 2 ** 14, repeats: int = 30,
                            warmup: int = 3, threads: int = 1, runs: int = 10,
                            runs_n: int = 2 ** 10) -> dict[str, float]:
    """Per-sample gradients per second of each problem and call size (module docstring) with
    torch at ``threads`` threads: the medians over ``repeats`` interleaved rounds (one solve
    each for ``svrg``, and one sequential and one batched solve of ``runs`` runs)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return (_throughput(d, n, repeats, warmup) | _runs_throughput(d, runs_n, runs)
                | {"torch_threads": threads, "runs": runs, "runs_n": runs_n})
    finally:
        torch.set_num_threads(previous)


def _runs_throughput(d: int, n: int, runs: int) -> dict[str, float]:
    """Evaluations per second of every iterative solver fit for each problem, ``runs`` runs
    solved one by one against at once (module docstring)."""
    result = {}
    for name in SOLVER:
        problem = get_problem(name, d=d, seed=0)
        samples = [problem.sample(n, make_generator(r, "data")) for r in range(runs)]
        targets = [output_target(problem, n)] * runs
        for solver in (key for key, value in SOLVERS.items()
                       if value.run is not None and (value.saddle or not problem.maximized)):
            start = time.perf_counter()
            sequential = [solve(solver, problem, sample, None, target, stream)
                          for sample, target, stream in zip(samples, targets, _streams(runs),
                                                            strict=True)]
            middle = time.perf_counter()
            batched = solve_runs(solver, problem, samples, [None] * runs, targets,
                                 _streams(runs))
            end = time.perf_counter()
            for mode, solutions, seconds in (("sequential", sequential, middle - start),
                                             ("batched", batched, end - middle)):
                total = sum(solution.gradient_evaluations for solution in solutions)
                result[f"{name}_{solver}_runs_{mode}_per_second"] = total / seconds
    return result


def _streams(runs: int) -> list[torch.Generator]:
    return [make_generator(r, "solver") for r in range(runs)]


def _throughput(d: int, n: int, repeats: int, warmup: int) -> dict[str, float]:
    cpu = torch.device("cpu")
    steps, sizes, result = {}, {}, {}
    for name in SOLVER:
        problem = get_problem(name, d=d, seed=0)
        examples = problem.sample(n, make_generator(0, "data"))
        point = {block.name: torch.zeros(1, block.dim, dtype=problem.dtype)
                 for block in problem.blocks}
        every = {key: value.unsqueeze(0) for key, value in examples.items()}
        one = {key: value[None, :1] for key, value in examples.items()}
        steps[f"{name}_full"] = lambda p=problem, z=point, e=every: p.per_example_grads(z, e)
        steps[f"{name}_single"] = lambda p=problem, z=point, e=one: p.per_example_grads(z, e)
        sizes[f"{name}_full"], sizes[f"{name}_single"] = n, 1
        start = time.perf_counter()
        _, evaluations = solve(SOLVER[name], problem, examples, None, output_target(problem, n),
                               make_generator(0, "solver"))
        result[f"{name}_{SOLVER[name]}_per_second"] = evaluations / (time.perf_counter() - start)
        result[f"{name}_{SOLVER[name]}_evaluations_per_sample"] = evaluations / n
    medians = interleaved_medians(steps, repeats, warmup, cpu)
    for key, milliseconds in medians.items():
        result[f"{key}_per_second"] = sizes[key] / (milliseconds / 1e3)
    return result
