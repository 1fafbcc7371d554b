"""Re-run the experiments of the TSGS3VM paper (Fig. 2 and Fig. 3) with scikit-learn peers.

The command line of :func:`stochsvm.bench.tsgs3vm.run` (protocol, datasets and outputs are
documented there); ``stochsvm reproduce tsgs3vm`` runs the same code.

Run::

    python benchmarks/tsgs3vm_paper.py            # full run, 31-42 minutes on 2 cores
    python benchmarks/tsgs3vm_paper.py --quick    # smoke test, under 3 minutes, *_quick outputs
"""

import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))  # this checkout's package, installed or not
from stochsvm.bench import harness, tsgs3vm  # noqa: E402

if __name__ == "__main__":
    harness.script_main(tsgs3vm.run, __doc__, REPOSITORY)
