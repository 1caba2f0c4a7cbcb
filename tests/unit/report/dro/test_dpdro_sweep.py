"""``scripts/dpdro_sweep.py`` (issue #37's one-factor sweeps): variant run configs from one
job's, and the sweep's table split by the swept columns, with the final lambdas."""

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[4] / "scripts" / "dpdro_sweep.py"


@pytest.fixture(scope="module")
def sweep():
    spec = importlib.util.spec_from_file_location("dpdro_sweep", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_configs_update_the_params_and_give_each_variant_its_folder(sweep, tmp_path):
    base = tmp_path / "run_config.json"
    base.write_text(json.dumps({"method": "dp_recursive_spider_control", "experiment": "table3",
                                "out_dir": "/elsewhere", "params": {"clip": 1.0, "lr": 0.1}}))
    sweep.configs(str(base), str(tmp_path / "out"), "capped:weight_cap=1e6,estimator=momentum",
                  "held:lr_lam=0")
    capped = json.loads((tmp_path / "out" / "capped.json").read_text())
    assert capped["params"] == {"clip": 1.0, "lr": 0.1, "weight_cap": 1e6,
                                "estimator": "momentum"}
    assert capped["experiment"] == "sweep"
    assert capped["out_dir"] == str((tmp_path / "out" / "capped").resolve())
    held = json.loads((tmp_path / "out" / "held.json").read_text())
    assert held["params"]["lr_lam"] == 0 and "weight_cap" not in held["params"]
    with pytest.raises(SystemExit, match="NAME:KEY=VALUE"):
        sweep.variant("weight_cap=5")


def _job(folder: Path, cap: float, phis, lambdas) -> Path:
    rows = [{"experiment": "sweep", "dataset": "mnist-st", "method": "dp_recursive_spider",
             "epsilon": 10.0, "seed": seed, "p_weight_cap": cap, "test_accuracy": 0.9,
             "dro_objective": phi, "trivial_dro_objective": 0.70, "prior_dro_objective": 1.19,
             "data_standin": False,
             "curve": json.dumps([{"step": 1, "lambda": 9.0, "dro_lambda": 9.0},
                                  {"step": 2, "lambda": lam, "dro_lambda": 2 * lam}])}
            for seed, (phi, lam) in enumerate(zip(phis, lambdas, strict=True))]
    folder.mkdir()
    pd.DataFrame(rows).to_parquet(folder / "metrics.parquet")
    return folder


def test_table_splits_by_the_swept_column_and_reads_the_last_lambdas(sweep, tmp_path):
    low = _job(tmp_path / "w5", 5.0, [1.1, 1.2, 1.3], [0.1, 0.2, 0.3])
    high = _job(tmp_path / "w100", 100.0, [0.4, 0.45, 0.5], [1.0, 1.0, 1.3])
    sweep.table(str(tmp_path / "t.csv"), "p_weight_cap", str(low), str(high))
    table = pd.read_csv(tmp_path / "t.csv").set_index("p_weight_cap")
    assert list(table["verdict"]) == ["not below", "below"]
    assert table.loc[5.0, "lam_method"] == pytest.approx(0.2)
    assert table.loc[100.0, "lam_phi"] == pytest.approx(2.2)
    assert table.loc[5.0, "phi_final_mean"] == pytest.approx(1.2)


def test_a_job_released_at_t_equals_the_job_trained_at_t(sweep, tmp_path):
    """The output temperature is post-processing: re-releasing a T = 1 job's saved models at
    T = 4 gives the Phi, Phi(init) and lambdas the same job trained at T = 4 reports."""
    import numpy as np
    from toydata import toy_dataset

    from dpminimax.api import train
    from dpminimax.data import save_prepared

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    y = (x[:, 0] + 0.5 * rng.normal(size=300) > 1.0).astype(int)
    save_prepared(toy_dataset(x, y, np.zeros(300, dtype=int)), tmp_path / "data")
    jobs = {}
    for t in (1.0, 4.0):
        config = {"paper": "dpdro", "experiment": "sweep", "dataset": "toy",
                  "method": "dp_double_spider", "epsilon": "1", "delta": 1e-5, "seeds": [0, 1],
                  "params": {"model": "logistic_regression", "batch_size": 50, "epochs": 1.0,
                             "anchor_batch_size": 100, "eval_every": 5, "curve_rows": 300,
                             "temperature": t}}
        train(config, tmp_path / "data", tmp_path / f"t{t:g}")
        jobs[t] = pd.read_parquet(tmp_path / f"t{t:g}" / "metrics.parquet").sort_values("seed")
    released = sweep.released_at(tmp_path / "t1", [4.0]).sort_values("seed")
    for column in ("dro_objective", "trivial_dro_objective"):
        np.testing.assert_allclose(released[column], jobs[4.0][column], rtol=1e-5)
    last = [json.loads(c)[-1] for c in jobs[4.0]["curve"]]
    again = [json.loads(c)[-1] for c in released["curve"]]
    np.testing.assert_allclose([p["dro_lambda"] for p in again],
                               [p["dro_lambda"] for p in last], rtol=1e-5)
    assert not np.allclose(jobs[1.0]["dro_objective"], jobs[4.0]["dro_objective"])
    sweep.temperature(str(tmp_path / "t.csv"), "1,4", "-", str(tmp_path / "t1"))
    table = pd.read_csv(tmp_path / "t.csv").set_index("p_temperature")
    assert table.loc[4.0, "phi_final_mean"] == pytest.approx(jobs[4.0]["dro_objective"].mean(),
                                                             rel=1e-5)
