"""Identity areas of one day written as the identity pipeline writes them, for tests that need a
lake the resolution can read without running Spark."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from profile_store.lake.storage import LocalLakeStorage

DAY = "date=2026-11-01"
WEIGHTS = {"member_id": 1.0, "email_sha256": 0.95, "ip24_user_agent": 0.5}


def _write(root, area: str, columns: dict) -> None:
    folder = root / area / DAY
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), folder / "part-0.parquet")


def lake_with_keys(
    root,
    rows: list[tuple[str, str, str]],
    quarantined: list[tuple[str, str]] = (),
    id_types: dict[str, str] | None = None,
) -> LocalLakeStorage:
    """One day of identity areas from (key_type, key, profile) rows, as the pipeline writes
    them: the key table, a star of edges to each key's first profile (none for a quarantined
    key), the quarantine and the profiles."""
    kinds, keys, profiles = zip(*rows, strict=True)
    _write(root, "identity_keys", {"key_type": kinds, "key": keys, "profile": profiles})
    hubs: dict[tuple[str, str], str] = {}
    edges = []
    for kind, key, profile in rows:
        hub = hubs.setdefault((kind, key), profile)
        if hub != profile and (kind, key) not in quarantined:
            a, b = sorted((hub, profile))
            edges.append((a, b, kind, key, WEIGHTS[kind]))
    names = ["profile_a", "profile_b", "key_type", "key", "weight"]
    columns = list(zip(*edges, strict=True)) if edges else [[], [], [], [], []]
    types = [pa.string()] * 4 + [pa.float64()]
    _write(
        root,
        "identity_edges",
        {n: pa.array(c, t) for n, c, t in zip(names, columns, types, strict=True)},
    )
    q_kinds, q_keys = zip(*quarantined, strict=True) if quarantined else ([], [])
    quarantine = {"key_type": pa.array(q_kinds, pa.string()), "key": pa.array(q_keys, pa.string())}
    _write(root, "identity_quarantine", quarantine)
    known = sorted(set(profiles) | set(id_types or {}))
    kinds_of = [(id_types or {}).get(p, "cookie") for p in known]
    _write(root, "identity_profiles", {"profile": known, "id_type": kinds_of})
    return LocalLakeStorage(root)
