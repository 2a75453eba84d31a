"""``python -m flock3d.cli``: the ``flock3d`` command."""

import sys

from flock3d.cli import main

sys.exit(main())
