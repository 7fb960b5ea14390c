"""``python -m jsonl_store.cli``: the same as the ``jsonl-store`` script."""

import sys

from . import main

sys.exit(main())
