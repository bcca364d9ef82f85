"""A bulk load killed mid-way (``kill -9``), for the tests of what removes its staging directory."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

_LOAD_KILLED_MIDWAY = """
import sys, time
from pathlib import Path
from profile_store.hbase_gateway.bulk_staging import staging_directory
with staging_directory(Path(sys.argv[1])) as staging:
    (staging / "cells").mkdir()
    (staging / "cells" / "part-0.parquet").write_bytes(bytes.fromhex(sys.argv[2]))
    print(staging, flush=True)
    time.sleep(600)
"""


def killed_load(data_dir: Path, cells: bytes) -> Path:
    """The staging directory of a load that wrote ``cells`` under ``data_dir`` and was killed."""
    load = subprocess.Popen(
        [sys.executable, "-c", _LOAD_KILLED_MIDWAY, str(data_dir), cells.hex()],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert load.stdout is not None
    staging = Path(load.stdout.readline().strip())
    load.send_signal(signal.SIGKILL)
    load.wait()
    load.stdout.close()
    return staging
