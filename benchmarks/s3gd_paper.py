"""Re-run the experiments of the S3GD paper (Figs. 3, 4, 6 and the eq. 47 protocol).

A thin command-line wrapper of :func:`stochsvm.bench.s3gd.run` (protocol, datasets and outputs
are documented there); ``stochsvm reproduce s3gd`` runs the same code.

Run::

    python benchmarks/s3gd_paper.py            # full run (the datasets of the issue)
    python benchmarks/s3gd_paper.py --quick    # smoke test, ~2 minutes, *_quick outputs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from stochsvm.bench import s3gd  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small data, about 2 minutes")
    parser.add_argument("--out", default=str(REPOSITORY / "benchmarks" / "results"))
    arguments = parser.parse_args(argv)
    return s3gd.run(arguments.quick, arguments.out,
                    benchmarks_md=REPOSITORY / "benchmarks" / "BENCHMARKS.md")


if __name__ == "__main__":
    main()
