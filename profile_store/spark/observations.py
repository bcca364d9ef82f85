"""Reading a query's observed metrics (``DataFrame.observe``), which Spark may drop.

Adaptive execution replaces a query stage whose output turns out empty with an empty relation,
and the stage's observation goes with it: Spark then has no metrics for the observation
(PySpark's ``Observation.get`` fails an assertion). The rows observed inside that stage need
not have been none (a filter after the observation may have emptied it), so the caller counts
its figures with a query instead.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Observation


def observed_metrics(observation: Observation) -> dict[str, Any] | None:
    """The metrics of the observed query's first action, or None when Spark dropped them."""
    # The JVM's row of metrics has no schema when there are none; ``get`` would assert.
    if observation._jo is not None and observation._jo.getRow().length() == 0:
        return None
    return observation.get
