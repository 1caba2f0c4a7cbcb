"""What every base solver of BYOA (paper 003) shares: the subproblem it solves, the oracle that
counts per-sample gradient evaluations, the accuracy target and the deterministic certificate
that is its only stopping rule (our choice; the paper names solvers, not their stopping).

Everything is written in operator form over a problem's blocks: G(z) has block b equal to
grad_b of the objective on a minimized block and -grad_b on a maximized one, so a minimization
and a saddle-point problem are both the variational inequality "find z* in Z with
<G(z*), z - z*> >= 0 for all z in Z" (Z the product of the blocks' balls). The objective is the
empirical mean of the per-example losses (the *data* part, reached only through the counted
oracle) plus the proximal term (the *regularizer*: moduli[b] / 2 ||z_b - c_b||^2, with a minus
on a maximized block; free, our convention).

A :class:`Subproblem` holds R runs at once (the run axis): every block is (R, dim) and every
per-run scalar (a modulus, a step size, a radius) is a column (R, 1) that broadcasts against it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import torch

from dpminimax.problems.base import Block, Examples, Point, Problem, Prox


class SolverError(RuntimeError):
    """A base solver could not certify its target within its budget (it never returns an
    uncertified point)."""


@dataclass(frozen=True)
class Target:
    """The accuracy a caller needs: sqrt(sum_b weights[b] ||z_b - z*_b||^2) <= ``radius`` for
    the exact subproblem solution z* (``weights`` None: 1 on every block, the plain distance).

    Alg. 1: radius L / (mu n); Alg. 2: L / (mu_k nbar); Alg. 3, condition (3): weights
    (mu_x, mu_y), radius L / (sqrt(mu) n); Algs. 4 / 5: weights (mu_k, mu) / (mu, mu_k), radius
    L / (sqrt(mu) nbar) (Algs. 1-5)."""

    radius: float
    weights: Mapping[str, float] | None = None

    def weight(self, block: str) -> float:
        return 1.0 if self.weights is None else float(self.weights[block])


@dataclass(frozen=True)
class Quadratic:
    """R isotropic quadratics per block in operator form, moduli[b] / 2 ||z_b - centers[b]||^2
    (minus on a maximized block; moduli (R, 1), centers (R, dim)): their operator and their prox
    step with the ball's indicator."""

    moduli: Mapping[str, torch.Tensor]
    centers: Mapping[str, torch.Tensor]

    @classmethod
    def of(cls, proxes: Sequence[Prox | None], blocks: Mapping[str, Block],
           like: torch.Tensor) -> Quadratic:
        """The run axis of R proximal terms (None, or a block absent from one: modulus 0,
        center 0)."""
        terms = [prox if prox is not None else ({}, {}) for prox in proxes]
        return cls({b: like.new_tensor([[float(moduli.get(b, 0.0))] for _, moduli in terms])
                    for b in blocks},
                   {b: torch.stack([centers[b].to(like) if b in centers else
                                    like.new_zeros(block.dim) for centers, _ in terms])
                    for b, block in blocks.items()})

    def operator(self, point: Point) -> Point:
        """moduli[b] (z_b - c_b) per block."""
        return {b: self.moduli[b] * (z - self.centers[b]) for b, z in point.items()}

    def prox(self, blocks: Mapping[str, Block], point: Point,
             step: float | torch.Tensor) -> Point:
        """argmin_z ||z - u||^2 / (2 step) + this quadratic over Z (the product of ``blocks``'
        balls), block by block: Pi((u + step m c) / (1 + step m))."""
        return {b: blocks[b].project((u + step * self.moduli[b] * self.centers[b])
                                     / (1.0 + step * self.moduli[b])) for b, u in point.items()}


def smallest(moduli: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """The per-run minimum (R, 1) over the blocks of per-run scalars (R, 1)."""
    return torch.stack(list(moduli.values())).amin(0)


class Subproblem:
    """R runs' finite-sum subproblems: ``problem``'s empirical objective on each run's examples
    (``samples`` (R, n, ...)) plus its proximal term (``proxes``), each to be certified at its
    :class:`Target` (``targets``) with its own sampling stream (``generators``); the a-priori
    constants the solvers' step sizes come from (never from the sample) and the per-run counter
    of per-sample oracle calls: one call returns every block's gradient at one example and
    costs 1, a full operator costs n (our convention). A certified run is recorded in
    :attr:`solution` and stops counting (and drawing); a run past ``budget`` evaluations is a
    :class:`SolverError`."""

    def __init__(self, problem: Problem, samples: Examples, proxes: Sequence[Prox | None],
                 targets: Sequence[Target], generators: Sequence[torch.Generator],
                 budget: int) -> None:
        self.problem, self.examples, self.generators = problem, samples, generators
        sample = next(iter(samples.values()))
        self.runs, self.n = sample.shape[:2]
        self.blocks = {block.name: block for block in problem.blocks}
        self.names = tuple(self.blocks)
        self.regularizer = Quadratic.of(proxes, self.blocks, sample)
        #: Strong convexity (concavity) of the data part, per block (per-sample, Assumption
        #: 3.2 / 4.2), and of each run's whole subproblem (data plus regularizer; (R, 1)).
        self.data_moduli = {b: float(problem.constants.strong_convexity[b]) for b in self.names}
        self.moduli = {b: self.data_moduli[b] + self.regularizer.moduli[b] for b in self.names}
        if float(smallest(self.moduli).min()) <= 0:
            raise ValueError(f"a base solver needs a strongly monotone subproblem; its moduli "
                             f"(problem plus proximal term) are {self.moduli}")
        #: Per-sample smoothness l of the data part, and each run's Lipschitz constant L_G of
        #: the whole operator (data plus regularizer): l + its largest proximal modulus.
        self.smoothness = float(problem.constants.smoothness)
        self.lipschitz = self.smoothness + torch.stack(
            list(self.regularizer.moduli.values())).amax(0)
        self.targets = targets
        self.radii = sample.new_tensor([target.radius for target in targets])
        self.weights = {b: sample.new_tensor([[target.weight(b)] for target in targets])
                        for b in self.names}
        #: The certificate's constants (:func:`certificate`): max_b w_b / m_b, and min_b m_b.
        self.factor = torch.stack([self.weights[b] / self.moduli[b] for b in self.names]).amax(0)
        self.least = smallest(self.moduli)
        self.budget = budget
        self.device = sample.device
        self.evaluations = torch.zeros(self.runs, dtype=torch.long, device=self.device)
        self.pending = torch.ones(self.runs, dtype=torch.bool, device=self.device)
        self.last_bound = torch.full((self.runs,), torch.inf, dtype=sample.dtype,
                                     device=self.device)
        self.solution = {b: torch.zeros_like(z) for b, z in self.regularizer.centers.items()}
        #: Markov stopping: each run's planned iterations (None: certify),
        #: and for the audit (:meth:`audit`) the exact solutions, the iterations of each audit
        #: level and the ratio ||z - z*||_w / r measured there (NaN until reached), and the
        #: first check at which the point met its condition (-1 until it did).
        self.planned: torch.Tensor | None = None
        self.checks = torch.zeros_like(self.evaluations)
        self.exact: Point | None = None
        self.probes: dict[str, torch.Tensor] = {}
        self.probed: dict[str, torch.Tensor] = {}
        self.met = torch.full_like(self.evaluations, -1)

    def operator_rows(self, point: Point, batch: Examples) -> Point:
        """The data operator of every run's examples of ``batch`` ((R, B, ...)), blocks
        (R, B, dim); not counted (the caller counts)."""
        grads = self.problem.per_example_grads(point, batch)
        return {b: -grads[b] if b in self.problem.maximized else grads[b] for b in self.names}

    def draw(self, sizes: torch.Tensor) -> torch.Tensor:
        """sizes[r] indices uniform with replacement from run r's stream (none from a certified
        run's), padded with 0 to (R, max size)."""
        width = int(sizes.max())
        return torch.stack([torch.nn.functional.pad(torch.randint(
            self.n, (size,), generator=generator), (0, width - size)) if size else
            torch.zeros(width, dtype=torch.long)
            for size, generator in zip(sizes.tolist(), self.generators, strict=True)]
        ).to(self.device)

    def epoch(self, snapshot: Point, full: Point, inner: int | torch.Tensor
              ) -> Iterator[tuple[Examples, Point, torch.Tensor | None]]:
        """The inner steps of an SVRG-type epoch of ``inner`` steps (per run (R,), or one for
        all): each pending run draws its examples uniformly with replacement; each step (one
        example per run, batch (R, 1, ...)) comes with its variance-reduction correction
        full - B_i(snapshot) and the mask (R, 1) of the runs it moves (pending, with steps
        left; None where every pending run makes every step: a certified run's further
        iterates are not returned). The anchors B_i(snapshot) are computed at once; all is
        counted here: 2 ``inner`` evaluations per pending run (the anchor and the step's
        B_i(z))."""
        sizes = torch.as_tensor(inner).expand(self.runs) * self.pending
        self.count(2 * sizes)
        indices = self.draw(sizes)
        runs = torch.arange(self.runs, device=self.device).unsqueeze(1)
        batch = {key: value[runs, indices] for key, value in self.examples.items()}
        anchor = self.operator_rows(snapshot, batch)
        corrections = zip(*((full[b].unsqueeze(1) - anchor[b]).unbind(1) for b in self.names),
                          strict=True)
        examples = zip(*(value.split(1, dim=1) for value in batch.values()), strict=True)
        steps = torch.arange(indices.shape[1], device=self.device)
        masks = (steps < sizes.unsqueeze(1)).T.unsqueeze(-1)
        if bool(masks[-1][self.pending].all()):
            masks = [None] * len(masks)
        for parts, correction, mask in zip(examples, corrections, masks, strict=True):
            yield (dict(zip(batch, parts, strict=True)),
                   dict(zip(self.names, correction, strict=True)), mask)

    def data_operator(self, point: Point, runs: torch.Tensor | None = None) -> Point:
        """The data part's operator (its mean over the n examples); counted: n evaluations per
        pending run of ``runs`` (a mask (R,); None: all)."""
        self.count(self.n, runs)
        return {b: g.mean(1) for b, g in self.operator_rows(point, self.examples).items()}

    def operator(self, point: Point, runs: torch.Tensor | None = None) -> Point:
        """G(z) of the whole subproblem (data plus regularizer); n evaluations per run."""
        return add(self.data_operator(point, runs), self.regularizer.operator(point))

    def shifted(self) -> Quadratic:
        """The regularizer plus the data part's own strong convexity, moved into the prox (the
        splitting of Palaniappan-Bach and Katyusha: the data part left is merely monotone):
        modulus mu_b + p_b, center p_b c_b / (mu_b + p_b)."""
        return Quadratic(self.moduli, {
            b: self.regularizer.moduli[b] / self.moduli[b] * self.regularizer.centers[b]
            for b in self.names})

    @property
    def shifted_smoothness(self) -> float:
        """A Lipschitz constant of the per-example operator minus the data moduli: l + max_b
        mu_b - min_b mu_b (removing min_b mu_b from a mu_b-strongly monotone l-Lipschitz
        operator keeps it l-Lipschitz; the rest changes it by at most the spread)."""
        moduli = self.data_moduli.values()
        return self.smoothness + max(moduli) - min(moduli)

    def project(self, point: Point) -> Point:
        return {b: self.blocks[b].project(z) for b, z in point.items()}

    def count(self, evaluations: int | torch.Tensor, runs: torch.Tensor | None = None) -> None:
        """Add ``evaluations`` (one number, or (R,)) to every pending run of ``runs``."""
        counted = self.pending if runs is None else self.pending & runs
        self.evaluations += torch.as_tensor(evaluations) * counted
        if int(self.evaluations.max()) > self.budget:
            run = int(torch.argmax((self.evaluations > self.budget).long()))
            raise SolverError(
                f"run {run} (target radius {float(self.radii[run]):.3g}): no certified point "
                f"within {self.budget} gradient evaluations ({self.budget // self.n} passes "
                f"over n = {self.n}); the last certified bound was "
                f"{float(self.last_bound[run]):.3g}")

    def certify(self, point: Point, operator: Point, runs: torch.Tensor | None = None) -> bool:
        """Record in :attr:`solution` every pending run (of ``runs``, a mask (R,); None: all)
        whose certificate at ``point`` (``operator`` = G(point), already counted) meets its
        radius; the bounds are kept as ``last_bound``. Whether every run is certified. Under
        Markov stopping (:attr:`planned`), a run is recorded, uncertified, at its check number
        ``planned`` (after that many iterations)."""
        checked = self.pending if runs is None else self.pending & runs
        if self.planned is not None:
            ratio = self.ratio(point)
            for level, due in self.probes.items():
                reached = checked & (self.checks == due)
                self.probed[level] = torch.where(reached, ratio, self.probed[level])
            self.met = torch.where(checked & (self.met < 0) & (ratio <= 1.0), self.checks,
                                   self.met)
            return self.record(point, checked & (self.checks >= self.planned), checked)
        bound = certificate(self, point, operator)
        self.last_bound = torch.where(checked, bound, self.last_bound)
        if not bool(torch.isfinite(bound[checked]).all()):
            raise SolverError(f"the certificate is {bound.tolist()} (the iterates diverged)")
        return self.record(point, checked & (bound <= self.radii), checked)

    def audit(self, exact: Point, probes: Mapping[str, torch.Tensor]) -> None:
        """Measure, under Markov stopping, each run's ratio at the check numbers ``probes``
        (per level, (R,)) against the exact subproblem solutions ``exact`` (blocks (R, dim))."""
        self.exact, self.probes = exact, dict(probes)
        self.probed = {level: torch.full((self.runs,), torch.nan, dtype=self.radii.dtype,
                                         device=self.device) for level in self.probes}

    def ratio(self, point: Point) -> torch.Tensor:
        """Per run (R,), sqrt(sum_b w_b ||z_b - z*_b||^2) / r against :attr:`exact` (the audit:
        above 1, the point misses its accuracy condition)."""
        return sum(self.weights[b].squeeze(1) * (point[b] - self.exact[b]).square().sum(-1)
                   for b in self.names).sqrt() / self.radii

    def record(self, point: Point, done: torch.Tensor, checked: torch.Tensor) -> bool:
        """Keep ``point`` as the solution of the runs ``done`` (they stop); count a check of
        the runs ``checked``. Whether every run is done."""
        self.solution = {b: torch.where(done.unsqueeze(1), point[b], z)
                         for b, z in self.solution.items()}
        self.pending = self.pending & ~done
        self.checks += checked
        return not bool(self.pending.any())


def certificate(subproblem: Subproblem, point: Point, operator: Point) -> torch.Tensor:
    """Per run (R,), a deterministic upper bound on sqrt(sum_b w_b ||z_b - z*_b||^2) (w the
    run's target weights) at a feasible ``point`` from its operator G, with m_b
    the subproblem's moduli, so that M(D) = sum_b m_b ||D_b||^2 <= <G(z) - G(z*), z - z*>, and
    the weights' factor sum_b w_b ||D_b||^2 <= max_b (w_b / m_b) M. The smaller of:

    * sqrt(M) <= sqrt(sum_b ||G_b(z)||^2 / m_b) (strong monotonicity and <G(z*), z - z*> >= 0;
      the unconstrained residual, tight at an interior solution);
    * with the natural residual r = z - Pi_Z(z - G(z) / l_G): sqrt(M) <= l_G ||r|| /
      sqrt(min_b m_b) + l_G sqrt(sum_b ||r_b||^2 / m_b) (the projection inequality at
      Pi_Z(...) against the VI at z*; the weighted form of the usual
      (1 + eta l_G) / (eta mu) ||r||, valid when z* is on the boundary).

    The computed r is exact only up to rounding: it gets 4 eps (||z|| + ||G|| / l_G + 1) added
    (eps the dtype's machine epsilon), or a step G / l_G below z's last digit would give r = 0
    and certify any radius.
    """
    moduli, lipschitz = subproblem.moduli, subproblem.lipschitz

    def squares(point: Point, scaled: bool) -> torch.Tensor:
        return sum(point[b].square().sum(-1, keepdim=True) / (moduli[b] if scaled else 1.0)
                   for b in moduli)

    residual_bound = squares(operator, True).sqrt()
    moved = subproblem.project(add(point, {b: g / lipschitz for b, g in operator.items()}, -1.0))
    natural = add(point, moved, -1.0)
    rounding = 4.0 * torch.finfo(next(iter(point.values())).dtype).eps * (
        squares(point, False).sqrt() + squares(operator, False).sqrt() / lipschitz + 1.0)
    natural_bound = lipschitz * (
        (squares(natural, False).sqrt() + rounding) / subproblem.least.sqrt()
        + (squares(natural, True).sqrt() + rounding / subproblem.least.sqrt()))
    return (subproblem.factor * torch.minimum(residual_bound, natural_bound).square()
            ).sqrt().squeeze(1)


def markov_failure(problem: Problem, delta: float) -> float:
    """The probability the proofs allow a Markov-stopped call to miss its accuracy condition:
    delta / 4 on a minimization problem (Alg. 1), delta / 8 on a game (Alg. 3, Lemma B.1)."""
    return delta / 8.0 if problem.maximized else delta / 4.0


#: The audit levels of Markov stopping (issue 36, E9 on a randomized solver): besides the
#: planned stop, each call's ratio ||z - z*||_w / r is also measured at the iteration after
#: which the same route bounds the miss probability by 1/2, 1/10 and 1/100 (column tag: level).
AUDIT_LEVELS: dict[str, float] = {"p50": 0.5, "p10": 0.1, "p1": 0.01}


def distance_potential(subproblem: Subproblem, start: Point) -> torch.Tensor:
    """Per run (R,), the a-priori bound sum_b (||z_0,b|| + R_b)^2 on ||z_0 - z*||^2 (z* in the
    balls): what a solver whose squared distance contracts per iteration starts from."""
    return sum((z.norm(dim=-1) + subproblem.blocks[b].radius).square()
               for b, z in start.items())


def markov_iterations(subproblem: Subproblem, initial: torch.Tensor, contraction: torch.Tensor,
                      failure: float) -> torch.Tensor:
    """Per run (R,), the iterations after which a solver with E||z_t - z*||^2 <= contraction^t
    ``initial`` (contraction (R, 1), initial (R,)) meets the in-expectation accuracy of the
    paper's Markov route with miss probability ``failure`` (Algs. 1 and 3, Sec. 5),
    in the target's squared norm and radius r: E||z - z*||_w^2 <= failure^2 r^2 on a
    minimization problem (Alg. 1's gamma = delta^2 L^2 / (32 mu n^2) at failure delta / 4, with
    strong convexity and Jensen: E||z - z*|| <= failure r, so Markov misses with probability
    <= failure), failure r^2 on a saddle-point problem (Alg. 3's gamma = delta L^2 /
    (16 mu n^2) at failure delta / 8, Lemma B.1 with the target's weights the moduli). From
    ||.||_w^2 <= max_b w_b ||.||^2."""
    if any(math.isinf(block.radius) for block in subproblem.blocks.values()):
        raise ValueError("Markov stopping needs bounded blocks (an a-priori ||z_0 - z*||)")
    share = failure if subproblem.problem.maximized else failure ** 2
    accuracy = share * subproblem.radii.square()
    scale = torch.stack(list(subproblem.weights.values())).amax(0).squeeze(1)
    needed = torch.log(scale * initial / accuracy) / -torch.log(contraction.squeeze(1))
    return needed.ceil().clamp(min=0).long()


def variance_reduced(subproblem: Subproblem, start: Point, prox: Quadratic,
                     shift: Mapping[str, float], step: float | torch.Tensor,
                     inner: int | torch.Tensor, average: bool = False) -> Point:
    """The SVRG loop shared by prox-SVRG, Xiao-Zhang's Prox-SVRG and
    Palaniappan-Bach: per epoch the full data operator at the snapshot (n; it
    certifies the snapshot), then ``inner`` steps z <- prox(z - step g) with g = B_i(z) - shift z
    - B_i(snapshot) + B(snapshot), i uniform (the data's own moduli ``shift`` moved into
    ``prox``); the next snapshot is the last iterate, or with ``average`` the mean of the
    epoch's ``inner`` iterates (Xiao and Zhang 2014, Alg. 1). n + 2 ``inner`` evaluations per
    epoch. One torch call per step for all runs (``step``, ``inner``: per run, or one for
    all)."""
    snapshot = start
    steps = torch.as_tensor(inner).expand(subproblem.runs).unsqueeze(1).clamp(min=1)
    while True:
        full = subproblem.data_operator(snapshot)
        if subproblem.certify(snapshot, add(full, subproblem.regularizer.operator(snapshot))):
            return subproblem.solution
        point = snapshot
        total = {b: torch.zeros_like(z) for b, z in point.items()}
        for example, correction, mask in subproblem.epoch(snapshot, full, inner):
            grad = subproblem.operator_rows(point, example)
            moved = prox.prox(subproblem.blocks, {
                b: z - step * (grad[b][:, 0] + correction[b] - shift[b] * z)
                for b, z in point.items()}, step)
            point = moved if mask is None else {b: torch.where(mask, moved[b], z)
                                                for b, z in point.items()}
            if average:
                total = {b: t + (point[b] if mask is None else torch.where(mask, point[b], 0.0))
                         for b, t in total.items()}
        snapshot = {b: t / steps.to(t) for b, t in total.items()} if average else point


def add(first: Point, second: Point, scale: float | torch.Tensor = 1.0) -> Point:
    """first + scale x second, block by block."""
    return {b: first[b] + scale * second[b] for b in first}
