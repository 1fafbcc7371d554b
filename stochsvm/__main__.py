"""``python -m stochsvm``: run the demo (see :mod:`stochsvm.demo`).

Without arguments, or with options only (``python -m stochsvm --quick``), it runs
``stochsvm demo`` with those options; ``python -m stochsvm COMMAND ...`` runs that command of
the ``stochsvm`` command line instead, and ``--help`` / ``--version`` are the command line's.
"""

import sys

from .cli import main

COMMAND_LINE_OPTIONS = ("-h", "--help", "--version")

if __name__ == "__main__":
    arguments = sys.argv[1:]
    if not arguments or (arguments[0].startswith("-")
                         and arguments[0] not in COMMAND_LINE_OPTIONS):
        arguments = ["demo", *arguments]
    main(args=arguments, prog_name="python -m stochsvm")
