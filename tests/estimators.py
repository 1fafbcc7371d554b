"""Small, fast instances of every registered estimator, for the cross-estimator tests."""

from stochsvm import registry

# iteration budgets that keep a fit on a few dozen samples well under a second, and a record
# after every iteration (so that callbacks fire); everything else is the default
_SMALL = {
    "max_iter": 3,
    "record_every": 1,
}
_PER_ESTIMATOR = {
    "SCSKernelSVC": {"max_iter": 10},
    "WolfeKernelSVC": {"max_iter": 10},
    "SelfLabelingTSVM": {"max_iter": 10},
    "CCCPTSVM": {"max_iter": 5},
    "TSGS3VM": {"max_iter": 4},
    "FRS3VM": {"max_iter": 4},
    "BGS3VM": {"record_every": 1},
}


def small_estimator(name, **params):
    """``name``'s estimator with small iteration budgets, ``random_state=0`` and ``params``."""
    cls = registry.solver_class(name)
    defaults = cls().get_params()
    settings = {key: value for key, value in _SMALL.items() if key in defaults}
    settings.update(_PER_ESTIMATOR.get(name, {}))
    if "random_state" in defaults:
        settings["random_state"] = 0
    settings.update(params)
    return cls(**settings)


def assert_each_sequence_plateaued(model, keys=("objective_average", "objective_last")):
    """Each of the last ``n_iter_no_change`` records of every sequence ``keys`` of
    ``model.history_`` is above the lowest value before it minus ``tol`` (the stopping rule
    that watches several candidate outputs, each on its own)."""
    window, tol = model.n_iter_no_change, model.tol
    for key in keys:
        values = [record[key] for record in model.history_]
        for position in range(len(values) - window, len(values)):
            best = min(values[:position])
            assert values[position] > best - tol * abs(best), (key, position)
