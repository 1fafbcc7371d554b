"""One training loop (:mod:`stochsvm.linear.training`) for the in-memory and the Dask fits."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

import stochsvm
from stochsvm.linear import training

from .dask_cluster import local_client

da = pytest.importorskip("dask.array")
pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def client():
    with local_client() as client:
        yield client


def _data(n_classes):
    X, y = make_classification(600, 8, n_informative=5, n_classes=n_classes,
                               n_clusters_per_class=1, random_state=1)
    return StandardScaler().fit_transform(X), y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("make, n_classes", [
    (lambda: stochsvm.SADMMClassifier(penalty="l1", alpha=1e-3, shuffle=False,
                                      solver="stochastic", multi_class="ovr"), 3),
    (lambda: stochsvm.SADMMClassifier(alpha=1e-3, shuffle=False, solver="stochastic"), 2),
    (lambda: stochsvm.RDAClassifier(alpha=1e-3, shuffle=False, max_iter=300), 3),
])
def test_one_block_on_dask_is_the_in_memory_fit(client, make, n_classes):
    """With one row block (one partition) and the data's own order, a round is an in-memory
    epoch: the whole fit -- stopping per binary problem, the output of lowest objective, the
    l1 truncation, n_iter_, the records -- is the in-memory one, since both run the same
    loop."""
    X, y = _data(n_classes)
    in_memory = make().fit(X, y)
    on_dask = make().fit(da.from_array(X, chunks=len(X)), da.from_array(y, chunks=len(X)))
    np.testing.assert_allclose(on_dask.coef_, in_memory.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(on_dask.intercept_, in_memory.intercept_, rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_array_equal(on_dask.coef_ != 0, in_memory.coef_ != 0)
    assert on_dask.n_iter_ == in_memory.n_iter_ < in_memory.max_iter
    assert on_dask.t_ == in_memory.t_
    for key in ("problem", "iteration", "samples_seen"):
        assert [record[key] for record in on_dask.history_] == \
            [record[key] for record in in_memory.history_]
    np.testing.assert_allclose([record["objective"] for record in on_dask.history_],
                               [record["objective"] for record in in_memory.history_],
                               rtol=1e-9)
    np.testing.assert_allclose(
        [record["running_objective"] for record in on_dask.history_],
        [record["running_objective"] for record in in_memory.history_], rtol=1e-9)
    assert all(record["partitions"] == 1 for record in on_dask.history_)


class _ScriptedPasses(training.Passes):
    """Passes whose objectives follow a script (per problem), to drive the loop alone."""

    def __init__(self, scripts, diverge_at=None, scores_in_pass=False):
        self.scripts = scripts
        self.diverge_at = diverge_at or {}
        self.scores_in_pass = scores_in_pass
        self.n_samples = 10
        self.trained = []

    def run(self, problems, states, score=None):
        entries, diverged = {}, {}
        for index in problems:
            state = states[index]
            if self.diverge_at.get(index) == state.get("epochs_done", 0) + 1 \
                    and not state.get("restarted"):
                diverged[index] = training.StepDivergedError("diverged")
                continue
            state["samples_seen"] += self.n_samples
            state["w"] = np.full(2, float(state.get("epochs_done", 0) + 1))
            entries[index] = {"loss_sum": 1.0}
            self.trained.append((index, state.get("epochs_done", 0) + 1))
        objectives = None
        if score is not None:
            objectives = self.objectives(score)
        return {index: states[index] for index in problems}, entries, diverged, objectives

    def objectives(self, models):
        # the model's coefficients hold the pass that made it: look its objective up
        return {index: np.array([self.scripts[index][int(coef[0]) - 1]
                                 for coef, _ in candidates])
                for index, candidates in models.items()}

    def loss_gradients(self, models):
        return {index: np.zeros(2) for index in models}

    def zero_objective(self, problem):
        return 10.0


class _Solver(stochsvm.SADMMClassifier):
    """The hooks the loop calls, on a state that only counts its passes."""

    def _model(self, state, resolved):
        return state["w"].copy(), 0.0

    def _output_candidates(self, state, resolved):
        return [self._model(state, resolved)]

    def _candidate_names_of(self, state):
        return ("model",)

    def _restart_with_smaller_step(self, state):
        state["restarted"] = True
        return True


def _run(scripts, fused, n_passes=20, diverge_at=None):
    solver = _Solver(penalty="l2", tol=1e-3, n_iter_no_change=2)
    resolved = solver._settings()
    states = [{"samples_seen": 0, "w": np.zeros(2)} for _ in scripts]
    passes = _ScriptedPasses(scripts, diverge_at, fused)
    return training.train_passes(solver, passes, states, resolved, n_passes, True), passes


@pytest.mark.parametrize("fused", [False, True])
def test_each_problem_stops_on_its_own_and_returns_its_best_pass(fused):
    # problem 0 improves until pass 3, then stalls: stops after pass 5 with pass 3's model;
    # problem 1 keeps improving for 8 passes
    scripts = [[5.0, 4.0, 3.0, 3.5, 3.2, 1.0, 1.0, 1.0, 1.0, 1.0],
               [9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 2.0, 2.0, 2.0]]
    results, passes = _run(scripts, fused)
    first, second = results
    assert first.converged and first.epochs == 5
    np.testing.assert_array_equal(first.coef, [3.0, 3.0])
    assert first.state["epochs_done"] == 5  # the state of the last pass recorded
    assert [record["objective"] for record in first.history] == scripts[0][:5]
    assert second.converged and second.epochs == 10
    np.testing.assert_array_equal(second.coef, [10.0, 10.0])  # the last of equal bests
    # a Dask round scores the previous round's models: a stop discards one round of training
    trained_first = [number for index, number in passes.trained if index == 0]
    assert trained_first == list(range(1, 6 + fused))


@pytest.mark.parametrize("fused", [False, True])
def test_a_problem_stuck_above_the_zero_model_goes_on(fused):
    # above F(0, 0) = 10 the plateau is a transient, not the optimum: no stop until max
    scripts = [[11.0] * 8]
    (result,), _ = _run(scripts, fused, n_passes=8)
    assert not result.converged and result.epochs == 8


@pytest.mark.parametrize("fused", [False, True])
def test_a_diverged_pass_restarts_with_a_smaller_step(fused):
    scripts = [[5.0, 4.0, 3.0, 2.0, 1.0, 1.0, 1.0, 1.0]]
    (result,), passes = _run(scripts, fused, diverge_at={0: 2})
    assert result.state["restarted"]
    # the diverged pass is counted and not recorded
    assert [record["iteration"] for record in result.history][:3] == [1, 2, 3]
    assert result.epochs == len(result.history) + 1


def test_without_a_tol_the_output_is_the_last_pass():
    solver = _Solver(penalty="l2", tol=None)
    resolved = solver._settings()
    passes = _ScriptedPasses([[3.0, 2.0, 5.0]])
    (result,) = training.train_passes(
        solver, passes, [{"samples_seen": 0, "w": np.zeros(2)}], resolved, 3, False)
    np.testing.assert_array_equal(result.coef, [3.0, 3.0])
    assert "objective" not in result.history[-1] and result.epochs == 3


def test_passes_that_miss_a_method_are_refused():
    class Incomplete(training.Passes):
        def run(self, problems, states, score=None):
            return {}, {}, {}, None

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()
