"""The Dagster UI of `make ui` over the local instance, opening on a true picture.

- Partitions start where the lake's data starts: Dagster fixes them when it loads the code, from
  ``PROFILES_START_DATE``; unset, it is the lake's first landing day (the demo sets the same),
  so the UI does not open on weeks of "Missing" days that never had data. A deployment sets
  the variable itself (docs/configuration.md).
- The job page's "Auto-materialize" tag shows the instance-wide switch of Dagster's
  pre-sensor automation daemon, which Dagster stores as paused until someone flips it. With
  automation sensors (Dagster's default since 1.9) the switch is ignored: the sensors run the
  conditions. Left paused, the tag says "off" beside a running ``automation_sensor``; the
  switch is set to follow that sensor's default state instead
  (``sensors.automation_sensor.automation_tag_follows_the_sensor``, which the demo calls too).
- Dagster's first-run pop-up is off in the instance file (``nux: enabled: false`` in
  examples/dagster.local.yaml).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import PurePosixPath

from profile_store.lake.layout import LANDING
from profile_store.lake.settings import START_DATE_ENV, LakeSettings
from profile_store.lake.storage import LakeStorage

DAY_FOLDER = "date="
DEV_WARNING = "ignore:Function `dev_command` is superseded"
"""`dagster dev` warns on every start that `dg dev` (a CLI needing its own project layout)
supersedes it; that one warning is hidden, by exact message."""


def first_landing_day(storage: LakeStorage) -> date | None:
    """The oldest ``landing/date=YYYY-MM-DD`` holding a file, or None for an empty lake."""
    if not storage.exists(LANDING):
        return None
    days = set()
    for found in storage.list_files(LANDING):
        parts = PurePosixPath(found.path).parts
        if len(parts) > 2 and parts[1].startswith(DAY_FOLDER):
            try:
                days.add(date.fromisoformat(parts[1][len(DAY_FOLDER) :]))
            except ValueError:
                continue  # not a day folder: ingest never reads it either
    return min(days, default=None)


def with_lake_start_date(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with ``PROFILES_START_DATE`` set to the lake's first landing day, unless it is
    set already or the lake has no landing day."""
    result = dict(env)
    if result.get(START_DATE_ENV):
        return result
    first = first_landing_day(LakeSettings.from_env(result).storage())
    if first is not None:
        result[START_DATE_ENV] = first.isoformat()
    return result


def main(argv: Sequence[str] | None = None) -> None:
    """``dagster dev`` with ``argv`` (after the instance is prepared), in this process."""
    from dagster import DagsterInstance

    from sensors.automation_sensor import automation_tag_follows_the_sensor

    env = with_lake_start_date(os.environ)
    os.environ.update(env)
    with DagsterInstance.get() as instance:
        automation_tag_follows_the_sensor(instance)
    args = list(sys.argv[1:] if argv is None else argv)
    command = [sys.executable, "-W", DEV_WARNING, "-m", "dagster", "dev", *args]
    os.execve(sys.executable, command, env)


if __name__ == "__main__":
    main()
