"""``python -m stochsvm``: run the demo comparison (see :mod:`stochsvm.demo`).

``python -m stochsvm COMMAND ...`` runs that command of the ``stochsvm`` CLI instead.
"""

import sys

if len(sys.argv) > 1:
    from .cli import main

    main()
else:
    from .demo import run_demo

    run_demo()
