"""The DP-DRO step benchmark (issue #20) runs at a tiny size and reports every timing."""

from dpminimax.bench.dpdro import run_dpdro_benchmarks

STEPS = {"nonprivate", "dp", "difference", "opacus_hooks", "opacus_difference"}
RATIOS = {"dp_over_nonprivate", "difference_over_nonprivate", "opacus_hooks_over_dp",
          "opacus_difference_over_difference"}


def test_tiny_run_reports_positive_timings():
    result = run_dpdro_benchmarks(repeats=1, warmup=0, batch=8,
                                  architectures=("resnet20_small", "small_cnn"))
    assert result["sizes"]["batch"] == 8 and result["threads"] >= 1
    for architecture in ("resnet20_small", "small_cnn"):
        entry = result[architecture]
        ghost = "opacus_ghost" in entry["median_ms"]
        assert ghost != ("opacus_ghost" in entry["failures"])
        assert set(entry["median_ms"]) == STEPS | ({"opacus_ghost"} if ghost else set())
        assert RATIOS <= set(entry)
        assert all(value > 0 for value in entry["median_ms"].values())
        assert all(entry[key] > 0 for key in RATIOS)
    assert result["resnet20_small"]["parameters"] == 68_378
