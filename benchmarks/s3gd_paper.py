"""Re-run the experiments of the S3GD paper (Figs. 3, 4, 6 and the eq. 47 protocol).

The command line of :func:`stochsvm.bench.s3gd.run` (protocol, datasets and outputs are
documented there); ``stochsvm reproduce s3gd`` runs the same code.

Run::

    python benchmarks/s3gd_paper.py            # full run (the datasets of the issue)
    python benchmarks/s3gd_paper.py --quick    # smoke test, ~2 minutes, *_quick outputs
"""

import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))  # this checkout's package, installed or not
from stochsvm.bench import harness, s3gd  # noqa: E402

if __name__ == "__main__":
    harness.script_main(s3gd.run, __doc__, REPOSITORY)
