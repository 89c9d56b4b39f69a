"""``python -m tinytc.tune``: the same as ``tinytc-tune``."""

import sys

from .cli import main

sys.exit(main())
