"""``python -m profile_store.hbase_gateway``: the gateway CLI without the ``profiles`` wrapper."""

import sys

from .cli import main

sys.exit(main())
