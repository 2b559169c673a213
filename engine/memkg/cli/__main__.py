"""``python -m memkg.cli``: the ``memkg`` command."""

import sys

from memkg.cli import main

sys.exit(main())
