"""Where TSGS3VM's accuracy is bounded on the generated clusters: kernel width, random
features and the S3VM objective, separated on one data set (see
:mod:`stochsvm.bench.tsgs3vm_width`).

Run::

    python benchmarks/tsgs3vm_kernel_width.py           # about 4 minutes on 2 cores
    python benchmarks/tsgs3vm_kernel_width.py --quick   # seconds, *_quick outputs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from stochsvm.bench import tsgs3vm_width  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small data, seconds")
    parser.add_argument("--out", default=str(REPOSITORY / "benchmarks" / "results"))
    arguments = parser.parse_args(argv)
    return tsgs3vm_width.run(arguments.quick, arguments.out,
                             benchmarks_md=REPOSITORY / "benchmarks" / "BENCHMARKS.md")


if __name__ == "__main__":
    main()
