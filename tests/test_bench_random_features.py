"""The random-feature comparison benchmark: a seconds-long run of its pipeline."""

import json

from .benchmark_scripts import load_script


def test_random_features_comparison_writes_its_outputs(tmp_path):
    random_features = load_script("random_features")
    report = random_features.run(True, tmp_path, log=lambda message: None)
    assert {(row["n_features"], row["dtype"]) for row in report["rows"]} == {
        (20, "float64"), (20, "float32"), (784, "float64"), (784, "float32")}
    for row in report["rows"]:
        # the same frequencies give the same map: float64 to rounding, float32 to its cosine
        assert row["largest_difference"] < (1e-12 if row["dtype"] == "float64" else 1e-5)
        assert row["ours_seconds"] > 0 and row["rbfsampler_seconds"] > 0
    saved = json.loads((tmp_path / "random_features_quick.json").read_text())
    assert saved["config"]["mode"] == "quick"
    assert "| 784 | float32 |" in (tmp_path / "random_features_quick.md").read_text()
