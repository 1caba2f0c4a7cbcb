"""One paper-scale network job on the current device, timed: DP-DRO Table 3's DP Double-SPIDER
(ResNet20-GN, MNIST-ST, epsilon 1, the paper scale's parameters and seeds) trained for a
fraction of its 30 epochs, to extrapolate the full job's cost. Usage:
``python scripts/gpu/paper_scale_job.py OUT_DIR EPOCHS``."""

import json
import sys
import time
from pathlib import Path

import torch

from dpminimax.api import prepare_dataset, train

out, epochs = Path(sys.argv[1]), float(sys.argv[2])
data_dir = out / "data" / "mnist-st"
start = time.perf_counter()
prepare_dataset("mnist-st", data_dir)
prepared_s = time.perf_counter() - start
config = {
    "paper": "dpdro", "experiment": "table3", "dataset": "mnist-st",
    "method": "dp_double_spider", "epsilon": "1", "delta": 1.036e-5, "scale": "paper",
    "seeds": [0, 1, 2],
    "params": {"lr": 0.1, "lam": 10.0, "period": 10, "anchor_batch_size": 1024,
               "model": "resnet20", "epochs": epochs, "eval_every": 500, "curve_rows": 5000},
}
start = time.perf_counter()
table = train(config, data_dir, out / "job")
trained_s = time.perf_counter() - start
record = {
    "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
    "torch": torch.__version__, "epochs_trained": epochs, "runs": len(config["seeds"]),
    "prepare_s": round(prepared_s, 1), "train_s": round(trained_s, 1),
    "paper_job_estimate_h": round(trained_s * 30.0 / epochs / 3600.0, 2),
    "test_accuracy": table["test_accuracy"].tolist() if "test_accuracy" in table else None,
    "epsilon_spent": table["epsilon_spent"].tolist() if "epsilon_spent" in table else None,
}
print(json.dumps(record, indent=1))
(out / "paper_scale_job.json").write_text(json.dumps(record, indent=1))
