"""The answer key beside the lake: which person owns which ids, and which keys are noise.

Written for evaluation of the identity graph and the super-node guard only; the pipeline
must never read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from profile_store.generator import catalog
from profile_store.generator.arrow_strings import take
from profile_store.generator.identity_noise import NoiseLedger
from profile_store.generator.population import Population

GROUND_TRUTH_DIR = "ground_truth"
IDENTITIES_FILE = "identities.parquet"
NOISE_FILE = "noise.parquet"
MALFORMED_FILE = "malformed.parquet"


@dataclass
class EmissionTracker:
    """What each device actually sent over the run (not merely what it was configured to).

    ``emitted``: the device's id appears on some line. ``sent_login`` / ``sent_email``: a
    well-formed line carries the person's own member_id / email hash, i.e. evidence the
    pipeline can use once malformed rows are quarantined.
    """

    n_devices: int
    emitted: np.ndarray = field(init=False)
    sent_login: np.ndarray = field(init=False)
    sent_email: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.emitted = np.zeros(self.n_devices, dtype=bool)
        self.sent_login = np.zeros(self.n_devices, dtype=bool)
        self.sent_email = np.zeros(self.n_devices, dtype=bool)

    def record(self, events: pa.Table, has_user_id: np.ndarray, well_formed: np.ndarray) -> None:
        device = events["device"].to_numpy()
        self.emitted[device[has_user_id]] = True
        login = events["own_login"].to_numpy(zero_copy_only=False) & well_formed
        email = pc.is_valid(events["email_sha256"]).to_numpy(zero_copy_only=False) & well_formed
        self.sent_login[device[login]] = True
        self.sent_email[device[email]] = True


def identities(population: Population, tracker: EmissionTracker) -> pa.Table:
    """One row per device or cookie id that appears in the lake."""
    device = np.flatnonzero(tracker.emitted)
    person = population.device_person[device]
    return pa.table(
        {
            "person_id": take(population.person_id, person),
            "user_id": take(population.user_id, device),
            "id_type": take(pa.array(catalog.ID_TYPES), population.id_type[device]),
            "member_id": take(population.member_id, person),
            "email_sha256": take(population.email_sha256, person),
            "logs_in": pa.array(tracker.sent_login[device]),
            "carries_email": pa.array(tracker.sent_email[device]),
        }
    )


def write_ground_truth(
    out_dir: Path,
    population: Population,
    tracker: EmissionTracker,
    ledger: NoiseLedger,
    malformed: pa.Table,
) -> Path:
    """Write identities, noise keys and the malformed-row list; return the directory."""
    directory = out_dir / GROUND_TRUTH_DIR
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(identities(population, tracker), directory / IDENTITIES_FILE)
    pq.write_table(ledger.table(), directory / NOISE_FILE)
    pq.write_table(malformed, directory / MALFORMED_FILE)
    return directory
