"""Where the KL-DRO objective Phi of trained DP-DRO models comes from (paper 004, Eq. (5)):
for every model.pt under a train folder (results/dpdro/train/<experiment>),
per run, on the first ROWS training rows: Phi (with the run's own lam0 and rho, read from the
``metrics.parquet`` beside the model), the minimising lambda, the share of rows
misclassified, the mass Phi's worst-case distribution puts on them, its largest density ratio,
the mean loss and the mean of the top 1% and 5% of the losses.

    python scripts/dpdro_phi_anatomy.py results/dpdro/train/table3 anatomy.csv [--rows 4096]

The prepared data is read from results/data/<dataset> beside the train folder."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from dpminimax.api.model_io import load_model
from dpminimax.data.storage import load_prepared
from dpminimax.metrics.kl_dro import best_lambda, psi


def anatomy(train: Path, rows: int) -> pd.DataFrame:
    """One row per (dataset, method, epsilon, run) of the models under ``train``."""
    out = []
    for dataset_dir in sorted(p for p in train.iterdir() if p.is_dir()):
        data = load_prepared(train.parents[2] / "data" / dataset_dir.name)
        x = torch.as_tensor(data.x_train[:rows])
        y = torch.as_tensor(np.asarray(data.y_train)[:rows])
        for path in sorted(dataset_dir.glob("*/eps~*/model.pt")):
            model, state, _ = load_model(path)
            params = pd.read_parquet(path.parent / "metrics.parquet", columns=["p_lam0", "p_rho"])
            lam0, rho = float(params["p_lam0"].iat[0]), float(params["p_rho"].iat[0])
            with torch.no_grad():
                losses = model.losses(state, x, y).double()
                wrong = model.predict(state, x) != y
            lam = best_lambda(losses, lam0, rho)
            phi = psi(losses, lam, rho)
            for r in range(losses.shape[0]):
                worst = torch.softmax(losses[r] / lam[r], 0)
                top = torch.sort(losses[r], descending=True).values
                out.append({"dataset": dataset_dir.name, "method": path.parts[-3],
                            "epsilon": path.parts[-2].split("~")[1], "run": r,
                            "phi": float(phi[r]), "lam": float(lam[r]),
                            "wrong_share": float(wrong[r].double().mean()),
                            "worst_case_mass_on_wrong": float(worst[wrong[r]].sum()),
                            "worst_case_max_ratio": float(worst.max() * rows),
                            "mean_loss": float(losses[r].mean()),
                            "top1pct_loss": float(top[: rows // 100].mean()),
                            "top5pct_loss": float(top[: rows // 20].mean())})
    return pd.DataFrame(out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=int, default=4096)
    args = parser.parse_args()
    anatomy(args.train, args.rows).to_csv(args.out, index=False)
