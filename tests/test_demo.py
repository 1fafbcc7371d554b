"""The README's main job: every comparison runs and a figure is written."""

import pytest

from stochsvm.demo import run_demo


def test_demo_runs_every_comparison_and_writes_the_figure(tmp_path):
    pytest.importorskip("matplotlib")
    lines = []
    figure = tmp_path / "demo.png"
    rows = run_demo(print_function=lines.append, figure_path=str(figure))
    assert {row["dataset"] for row in rows} == {"breast cancer", "digits (even/odd)"}
    assert {row["comparison"] for row in rows} == {
        "linear hinge", "linear logistic", "kernel rbf", "semi-supervised"}
    assert len(rows) == 24
    for row in rows:
        # every model learns something on both sets (chance is about 0.5-0.63)
        assert row["accuracy"] > 0.7, row
    fully_supervised = [row for row in rows if row["comparison"] != "semi-supervised"]
    assert min(row["accuracy"] for row in fully_supervised) > 0.85
    assert figure.stat().st_size > 10_000
    assert any("figure:" in line for line in lines)
