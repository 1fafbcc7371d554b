"""``python -m stochsvm``: run the demo comparison (see :mod:`stochsvm.demo`)."""

from .demo import run_demo

run_demo()
