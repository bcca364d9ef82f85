"""``python -m profile_store.cli``: the ``profiles`` command."""

import sys

from profile_store.cli.main import main

sys.exit(main())
