"""Re-run Table 1 and Figs. 1-2 of the SCS paper with scikit-learn peers side by side.

The command line of :func:`stochsvm.bench.scs.run` (protocol, datasets and outputs are
documented there); ``stochsvm reproduce scs`` runs the same code.

Run::

    python benchmarks/scs_paper.py            # full run, sized for about 20 minutes on 2 cores
    python benchmarks/scs_paper.py --quick    # under 2 minutes, *_quick outputs
"""

import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))  # this checkout's package, installed or not
from stochsvm.bench import harness, scs  # noqa: E402

if __name__ == "__main__":
    harness.script_main(scs.run, __doc__, REPOSITORY, benchmarks_md=False)
