"""A small lake of identity areas written with Arrow, each case of a link (or of its absence)
once: what ``identity_edges`` and ``identity_components`` would have written for it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from profile_store.identity.rules import BridgingRules

DAY = "2026-11-01"
RULES = BridgingRules(alt_id_weights={"email_sha256": 0.95, "partner_id": 0.6})

# One person over three devices: a login links d1-d2, a hashed email d2-d3.
D1, D2, D3 = "dev-1", "dev-2", "dev-3"
LOGIN = "ann@example.org"
EMAIL = "5f3c0e9a7b"
# A login shared by 64 profiles: quarantined as a super node, so q1 and r1 stay apart.
Q1, R1 = "dev-q1", "dev-r1"
SHARED_LOGIN = "test-account"
SUPER_NODE_PROFILES = 64
# A phone (not a bridging kind) on s1 and s2, only in the events.
S1, S2 = "dev-s1", "dev-s2"
PHONE = "+31205550001"
# A partner id (weight 0.6, below the components' 0.9) on t1 and t2.
T1, T2 = "dev-t1", "dev-t2"
PARTNER = "partner-77"
# Nothing shared.
U1, U2 = "dev-u1", "dev-u2"
EVERY_PROFILE = [D1, D2, D3, Q1, R1, S1, S2, T1, T2, U1, U2]


def _write(root: Path, area: str, rows: list[dict], schema: pa.Schema) -> None:
    folder = root / area / f"date={DAY}"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema), folder / "part-0.parquet")


def write_identity_lake(root: Path) -> Path:
    text = pa.string()
    _write(
        root,
        "identity_profiles",
        [{"profile": p, "id_type": "gaid"} for p in EVERY_PROFILE],
        pa.schema([("profile", text), ("id_type", text)]),
    )
    keys = [
        (D1, "member_id", LOGIN),
        (D2, "member_id", LOGIN),
        (D2, "email_sha256", EMAIL),
        (D3, "email_sha256", EMAIL),
        (Q1, "member_id", SHARED_LOGIN),
        (R1, "member_id", SHARED_LOGIN),
        (T1, "partner_id", PARTNER),
        (T2, "partner_id", PARTNER),
    ]
    _write(
        root,
        "identity_keys",
        [{"key_type": k, "key": v, "profile": p} for p, k, v in keys],
        pa.schema([("key_type", text), ("key", text), ("profile", text)]),
    )
    edges = [
        (D1, D2, "member_id", "member_id", LOGIN, 1.0),
        (D2, D3, "alt_id", "email_sha256", EMAIL, 0.95),
        (T1, T2, "alt_id", "partner_id", PARTNER, 0.6),
    ]
    _write(
        root,
        "identity_edges",
        [
            {"profile_a": a, "profile_b": b, "rule": r, "key_type": k, "key": v, "weight": w}
            for a, b, r, k, v, w in edges
        ],
        pa.schema(
            [
                ("profile_a", text),
                ("profile_b", text),
                ("rule", text),
                ("key_type", text),
                ("key", text),
                ("weight", pa.float64()),
            ]
        ),
    )
    _write(
        root,
        "identity_quarantine",
        [
            {
                "key_type": "member_id",
                "key": SHARED_LOGIN,
                "reason": "super_node",
                "profiles": SUPER_NODE_PROFILES,
            }
        ],
        pa.schema([("key_type", text), ("key", text), ("reason", text), ("profiles", pa.int64())]),
    )
    _write(
        root,
        "identity_components",
        [{"profile": p, "master": D1} for p in (D1, D2, D3)],
        pa.schema([("profile", text), ("master", text)]),
    )
    (root / "identity_components" / "_LATEST").write_text(f"identity_components/date={DAY}")
    alt_ids = {S1: [("phone", PHONE)], S2: [("phone", PHONE)]}
    _write(
        root,
        "events",
        [{"user_id": p, "alt_ids": alt_ids.get(p, [])} for p in EVERY_PROFILE],
        pa.schema([("user_id", text), ("alt_ids", pa.map_(text, text))]),
    )
    return root
