"""The README's main job: the package's headline solvers against the peers a user would
otherwise pick.

* Default (``python -m stochsvm``, ``stochsvm demo``): :mod:`stochsvm.demo.scale`, the
  comparisons where size matters (a kernel SVM on 10^5 samples, a semi-supervised SVM with 10
  labels of each of ten classes among 20000 samples, sparse linear models on 10^5 x 10^5 text, and one model trained
  on a local Dask cluster), in about a minute on two cores, with a progress
  bar, one table and the figure ``stochsvm-demo.png``.
* Quick (``python -m stochsvm --quick``, ``stochsvm demo --quick``): :mod:`stochsvm.demo.quick`,
  the four headline solvers and their peers on scikit-learn's bundled breast-cancer and digits
  data in about ten seconds, where the exact peers are faster.
"""

from .quick import demo_models, run_quick_demo
from .scale import DemoSettings, run_scale_demo

__all__ = ["DemoSettings", "demo_models", "run_demo", "run_quick_demo", "run_scale_demo"]


def run_demo(quick=False, print_function=print, figure_path="stochsvm-demo.png",
             settings=None, progress=True):
    """Run the demo and print its table; write its figure.

    Parameters
    ----------
    quick : bool, default=False
        The ten-second version on small bundled data (:func:`run_quick_demo`) instead of the
        comparisons where size matters (:func:`run_scale_demo`).
    print_function : callable, default=print
        Receives each line of output.
    figure_path : str or None, default="stochsvm-demo.png"
        Where to write the figure (skipped when None or without matplotlib).
    settings : DemoSettings or None
        Sizes and limits of the default mode (None: the defaults); unused with ``quick``.
    progress : bool, default=True
        Draw a progress bar on stderr (default mode only).

    Returns
    -------
    rows : list of dict
        One per fitted model (see :func:`run_quick_demo` and :func:`run_scale_demo`).
    """
    if quick:
        return run_quick_demo(print_function=print_function, figure_path=figure_path)
    return run_scale_demo(settings, print_function=print_function, figure_path=figure_path,
                          progress=progress)
