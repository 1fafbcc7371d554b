"""The TSGS3VM paper benchmark: its pure functions, and a seconds-long run of the pipeline."""

import json

import numpy as np
import pytest

from stochsvm.bench import tsgs3vm

from .benchmark_scripts import load_script


def test_generated_clusters_are_reproducible_with_both_classes():
    X, y = tsgs3vm.generated_clusters(1000, 4, seed=3)
    again, _ = tsgs3vm.generated_clusters(1000, 4, seed=3)
    np.testing.assert_array_equal(X, again)
    assert X.shape == (1000, 4) and 0.4 < y.mean() < 0.6


def test_growth_exponents_fit_the_slope():
    records = [{"method": "a", "n": n, "status": "ok", "fit_seconds": 0.5 * n ** 1.5}
               for n in (10, 100, 1000)]
    records.append({"method": "a", "n": 10000, "status": "timed_out", "fit_seconds": None})
    records.append({"method": "b", "n": 10, "status": "ok", "fit_seconds": 1.0})
    exponents = tsgs3vm.growth_exponents(records)
    assert exponents["a"] == pytest.approx(1.5)
    assert "b" not in exponents


def test_scaling_targets_use_the_largest_tsgs3vm_run():
    records = [{"method": "TSGS3VM", "n": 1000, "status": "ok", "fit_seconds": 1.0,
                "peak_memory_bytes": 10.0},
               {"method": "TSGS3VM", "n": 10 ** 6, "status": "ok", "fit_seconds": 90.0,
                "peak_memory_bytes": 2.0 ** 30},
               {"method": "LabelSpreading", "n": 10 ** 7, "status": "ok", "fit_seconds": 1.0}]
    target = tsgs3vm.scaling_targets(records, 20)
    assert target["n"] == 10 ** 6 and target["one_pass_under_2_minutes"]
    assert target["memory_met"] and target["data_bytes"] == 8.0 * 20 * 10 ** 6


def test_targets_compare_with_the_best_peer():
    spread = lambda value: {"median": value, "min": value, "max": value, "count": 1}  # noqa
    summary = [
        {"dataset": "d", "method": "TSGS3VM", "test_accuracy": spread(0.9),
         "fit_seconds": spread(1.0)},
        {"dataset": "d", "method": "LabelSpreading", "test_accuracy": spread(0.85),
         "fit_seconds": spread(20.0)},
        {"dataset": "d", "method": "SelfTraining(SVC)", "test_accuracy": spread(0.8),
         "fit_seconds": spread(5.0)},
    ]
    target = tsgs3vm.evaluate_targets(summary)["d"]
    assert target["best_peer"] == "LabelSpreading"
    assert target["accuracy_met"] and target["speedup"] == pytest.approx(20.0)
    assert target["speedup_met"]


def test_smoke_run_writes_every_output(tmp_path):
    report = tsgs3vm.run(False, tmp_path, smoke=True, log=lambda message: None)
    for suffix in ("json", "md", "png"):
        assert (tmp_path / f"tsgs3vm_paper_smoke.{suffix}").is_file()
    saved = json.loads((tmp_path / "tsgs3vm_paper_smoke.json").read_text())
    assert saved["config"]["mode"] == "smoke"
    methods = {record["method"] for record in report["accuracy"]}
    assert {"BGS3VM", "CCCPTSVM", "SelfLabelingTSVM", "LabelSpreading", "SVC (labeled only)",
            "SVC (all labels)"} <= methods
    finished = [r for r in report["accuracy"] if r["status"] == "ok"]
    assert len(finished) == len(report["accuracy"])
    assert all(0.0 <= r["test_accuracy"] <= 1.0 for r in finished)
    assert all(r["peak_memory_bytes"] >= 0 for r in finished if "peak_memory_bytes" in r)
    # the model-selection protocol: every method chose a setting of its grid by CV
    selection = report["selection"]
    assert {r["method"] for r in selection} == set(tsgs3vm.SELECTION_METHODS)
    assert all(r["status"] == "ok" for r in selection), selection
    for record in selection:
        grid = tsgs3vm.selection_grid(record["method"], np.zeros((2, 1)) + [[0.0], [1.0]])
        assert set(grid) <= set(record["best_params"])
        assert 0.0 <= record["cv_accuracy"] <= 1.0
        assert record["selection_seconds"] >= record["fit_seconds"]
    assert "Fig. 3 with model selection" in (tmp_path / "tsgs3vm_paper_smoke.md").read_text()


def test_benchmarks_md_section_is_replaced(tmp_path):
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Benchmarks\n\n<!-- other:begin -->\nkeep\n<!-- other:end -->\n")
    tsgs3vm.update_benchmarks_md(path, "first")
    tsgs3vm.update_benchmarks_md(path, "second")
    text = path.read_text()
    assert "keep" in text and "second" in text and "first" not in text
    assert text.count("## TSGS3VM family") == 1


def test_kernel_approximation_error_falls_with_more_features():
    kernel_approximation_error = load_script("tsgs3vm_kernel_width").kernel_approximation_error
    X, _ = tsgs3vm.generated_clusters(200, 5, seed=0)
    few, mean_value = kernel_approximation_error(X, 0.1, 64, 0)
    many, same_mean = kernel_approximation_error(X, 0.1, 4096, 0)
    assert many < few / 4  # error ~ 1/sqrt(D): 8x fewer errors expected at 64x the features
    assert mean_value == same_mean and 0.0 < mean_value < 1.0
    # a narrower kernel has smaller values: the same features resolve them worse
    narrow, narrow_mean = kernel_approximation_error(X, 1.0, 4096, 0)
    assert narrow_mean < mean_value and narrow > many


def test_kernel_width_smoke_run_writes_its_outputs_and_section(tmp_path):
    tsgs3vm_width = load_script("tsgs3vm_kernel_width")
    report = tsgs3vm_width.run(False, tmp_path, smoke=True, log=lambda message: None)
    methods = set(report["widths"][0]["accuracy"])
    assert {"SVC (labeled only)", "CCCPTSVM (exact kernel)", "LabelSpreading",
            "RFF 64 + LinearSVC (labeled only)", "TSGS3VM (64 features)"} <= methods
    assert "LabelSpreading" not in report["widths"][1]["accuracy"]  # width-free peer: once
    for width in report["widths"]:
        assert all(0.0 <= value <= 1.0 for values in width["accuracy"].values()
                   for value in values)
    (label, rows), = report["unlabeled_term"].items()
    assert label.startswith("generated, n = 200")
    assert set(rows) == {"SVC (labeled only)", "TSGS3VM", "TSGS3VM, C_star=0",
                         "CCCPTSVM (exact kernel)"}
    saved = json.loads((tmp_path / "tsgs3vm_width_smoke.json").read_text())
    assert saved["config"]["mode"] == "smoke"
    text = (tmp_path / "tsgs3vm_width_smoke.md").read_text()
    assert "| CCCPTSVM (exact kernel) |" in text and "| generated, n = 200" in text
    # the BENCHMARKS.md block goes right after the family section, then is replaced in place
    benchmarks = tmp_path / "BENCHMARKS.md"
    benchmarks.write_text("# B\n<!-- tsgs3vm-family:begin -->\nx\n<!-- tsgs3vm-family:end -->\n"
                          "\n## Next\n")
    tsgs3vm_width.update_benchmarks_md(benchmarks, "first")
    tsgs3vm_width.update_benchmarks_md(benchmarks, "second")
    text = benchmarks.read_text()
    assert text.count("tsgs3vm-width:begin") == 1 and "second" in text and "first" not in text
    assert text.index("tsgs3vm-family:end") < text.index("second") < text.index("## Next")


def test_safe_benchmark_figure_draws_every_method_against_svc(tmp_path):
    script = load_script("tsgs3vm_safe")

    def medians(**values):
        return {name: {"median": value, "accuracies": [value], "seconds": 0.1}
                for name, value in values.items()}

    report = {"draws": 1, "results": {
        "one": {**medians(**{script.DEFAULT: 0.9, script.UNCHECKED: 0.85,
                             "SVC (labeled only)": 0.9, "LabelSpreading": 0.95})},
        "two (n=100)": {**medians(**{script.DEFAULT: 0.8, script.UNCHECKED: 0.82,
                                     "SVC (labeled only)": 0.8, "LabelSpreading": 0.7,
                                     "CCCPTSVM": 0.81})}}}
    script.figure(report, tmp_path / "safe.png")
    assert (tmp_path / "safe.png").stat().st_size > 0
    assert "results/tsgs3vm_safe.png" in script.FIGURE_LINK
