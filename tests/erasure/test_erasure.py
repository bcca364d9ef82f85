"""Forgetting a person: gone from every store within one run of the erasure step, for good.

On a generated lake of two days with ``scenario``'s three planted persons (P bridges A and B),
built by the daily assets: ``forget`` P by one id, then one run of the ``erasure`` asset, then
a third day whose landing files hold P's ids again.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import shutil
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance, materialize
from daily_runs import lake_resources
from killed_bulk_load import killed_load
from pyspark.sql import functions as F
from scenario import A_IDS, APP, B_IDS, EMAIL_A, EMAIL_B, FORGOTTEN_TEXTS, LOGINS, P_IDS, plant

from profile_assets.definitions import daily_assets
from profile_assets.erasure_assets import erasure
from profile_store.audiences.leaf_counts import day_leaf_counts
from profile_store.audiences.rowkey import day_component
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.cli.main import main
from profile_store.erasure.forget import forget
from profile_store.erasure.requests import REQUESTS, GivenId
from profile_store.erasure.sketch_retention import id_hashes, retention
from profile_store.generator.lake import generate_lake
from profile_store.hbase.pool import table_opener
from profile_store.hbase_gateway.bulk_staging import STAGING_PREFIX, staging_directory
from profile_store.identity.pipeline import latest_assignment_dir
from profile_store.lake.layout import AUDIENCE_LEAF_COUNTS, day_dir
from profile_store.lake.storage import LocalLakeStorage
from profile_store.profiles.table import PROFILE_TABLE, column, edge_key, lookup_key, profile_key
from resources.hbase import HBaseResource

D1 = date(2026, 11, 1)
DAYS = [D1 + timedelta(days=i) for i in range(2)]
LATER_DAY = D1 + timedelta(days=2)
P_EVENT_TYPES = {"add_to_cart", "purchase"}  # each of P's two ids, one of each a day


@dataclass
class Run:
    """One ``materialize``: its metadata by asset (and partition), and whether it succeeded."""

    success: bool
    metadata: dict


def _run(assets, resources, instance, day: date | None = None) -> Run:
    result = materialize(
        assets,
        partition_key=day.isoformat() if day else None,
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )
    metadata = {}
    for event in result.get_asset_materialization_events():
        materialization = event.event_specific_data.materialization
        name = (materialization.asset_key.to_user_string(), materialization.partition)
        metadata[name] = {k: v.value for k, v in materialization.metadata.items()}
    return Run(result.success, metadata)


def _aggregate_users(table, day: date) -> dict[str, float]:
    """Estimated users of every (event type) aggregate row of the scenario's app on ``day``."""
    from datasketches import compact_theta_sketch

    found = {}
    for key, cells in table.scan(row_prefix=f"{APP}|".encode(), columns=[b"s:theta", b"m:agg"]):
        parts = key.decode().split("|")
        if parts[2] == day_component(day) and b"m:agg" in cells:
            found[parts[1]] = compact_theta_sketch.deserialize(cells[b"s:theta"]).get_estimate()
    return found


def _events(storage: LocalLakeStorage, day: date) -> list[dict]:
    folder = Path(storage.root) / "events" / f"date={day.isoformat()}"
    rows = [row for f in sorted(folder.glob("*.parquet")) for row in pq.read_table(f).to_pylist()]
    return sorted(rows, key=lambda row: row["event_id"])


def _hbase_mentions(connection, texts: list[str]) -> list[str]:
    """Every row key or cell of every table that contains one of ``texts``."""
    hits = []
    needles = [t.encode() for t in texts]
    for name in connection.tables():
        for key, cells in connection.table(name).scan():
            blobs = [key, *cells.keys(), *cells.values()]
            if any(n in blob for n in needles for blob in blobs):
                hits.append(f"{name.decode()}: {key!r}")
    return hits


def _gateway_files_holding(data_dir: Path, needles: list[bytes]) -> list[str]:
    """Every file under the gateway's data directory whose bytes contain one of ``needles``."""
    return sorted(
        str(path.relative_to(data_dir))
        for path in data_dir.rglob("*")
        if path.is_file() and any(needle in path.read_bytes() for needle in needles)
    )


def _lake_mentions(root: Path, texts: list[str]) -> list[str]:
    """Every lake file whose content (Parquet decoded, gzip inflated) contains one of them."""
    hits = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.name.endswith(".crc"):
            continue
        data = path.read_bytes()
        if path.suffix == ".parquet":
            text = json.dumps(pq.read_table(io.BytesIO(data)).to_pylist(), default=str)
        elif path.suffix == ".gz":
            text = gzip.decompress(data).decode(errors="replace")
        else:
            text = data.decode(errors="replace")
        if any(t in text for t in texts):
            hits.append(str(path.relative_to(root)))
    return hits


def _user_hashes(spark, user_ids: list[str]) -> set[int]:
    """The 64-bit hashes the accuracy check's leaf counts keep of user ids."""
    rows = spark.createDataFrame([(u,) for u in user_ids], "u string").select(F.xxhash64("u"))
    return {row[0] for row in rows.collect()}


def _counted(spark, storage, day: date, hashes: set[int]) -> set[int]:
    """Of ``hashes``, those the day's leaf counts hold as the accuracy check reads them
    (counted from the day's events when none match them)."""
    users, _ = day_leaf_counts(spark, storage, day).arrays(storage)
    return hashes & set(users.tolist())


def _held(root: Path, day: date, hashes: set[int]) -> set[int]:
    """Of ``hashes``, those any leaf counts file of the day holds."""
    directory = root / day_dir(AUDIENCE_LEAF_COUNTS, day)
    found: set[int] = set()
    for path in directory.glob("*.parquet"):
        found |= hashes & set(pq.read_table(path).column("user_hash").to_pylist())
    return found


@pytest.fixture(scope="module")
def erased(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("erasure_lake")
    generate_lake(root, 3, 1500, seed=41, start_date=D1)
    held_back = tmp_path_factory.mktemp("held_back") / "later_day"
    shutil.move(root / "landing" / f"date={LATER_DAY.isoformat()}", held_back)
    for day in DAYS:
        plant(root, day, first_day=day == D1)
    storage = LocalLakeStorage(root)
    hbase_dir = tmp_path_factory.mktemp("erasure_hbase")
    hbase = HBaseResource(data_dir=str(hbase_dir))
    # The ids, the login, and the 64-bit hashes a sketch keeps of the ids.
    needles = [t.encode() for t in FORGOTTEN_TEXTS] + sorted(id_hashes(P_IDS))
    resources = lake_resources(root, hbase)
    instance = DagsterInstance.ephemeral()
    try:
        built = [_run(list(daily_assets), resources, instance, day) for day in DAYS]
        p_hashes = _user_hashes(spark, P_IDS)
        counted_before = {day: _counted(spark, storage, day, p_hashes) for day in DAYS}
        with hbase.connection() as connection:
            sketches = connection.table(SKETCH_TABLE)
            before = SimpleNamespace(
                events={day: _events(storage, day) for day in DAYS},
                users={day: _aggregate_users(sketches, day) for day in DAYS},
                retaining={
                    day: retention(sketches, storage, day, id_hashes(P_IDS)).rows_retaining
                    for day in DAYS
                },
                rows={p: connection.table(PROFILE_TABLE).row(profile_key(p)) for p in P_IDS},
                a_row=connection.table(PROFILE_TABLE).row(profile_key(A_IDS[0])),
                hbase_mentions=_hbase_mentions(connection, FORGOTTEN_TEXTS),
                lake_mentions=_lake_mentions(root, FORGOTTEN_TEXTS),
            )
        files_before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
        host, port = hbase.address
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = main(
                ["forget", P_IDS[0], "--lake", str(root), "--dry-run", "--json"]
                + ["--hbase-host", host, "--hbase-port", str(port)]
            )
        with hbase.connection() as connection:
            after_dry_run = SimpleNamespace(
                code=code,
                body=json.loads(printed.getvalue()),
                hbase_mentions=_hbase_mentions(connection, FORGOTTEN_TEXTS),
                lake_mentions=_lake_mentions(root, FORGOTTEN_TEXTS),
                lake_files=sorted(str(p.relative_to(root)) for p in root.rglob("*")),
                lake_files_before=files_before,
            )
        request = forget(storage, table_opener(hbase.pool(), PROFILE_TABLE), [GivenId(P_IDS[0])])
        with hbase.connection() as connection:
            table = connection.table(PROFILE_TABLE)
            immediate = SimpleNamespace(
                profile_rows={p: table.row(profile_key(p)) for p in P_IDS},
                login_lookup=table.row(lookup_key("member_id", LOGINS["p"])),
                edges={(p, o): table.row(edge_key(p, o)) for p in P_IDS for o in [*A_IDS, *B_IDS]},
                a_row=table.row(profile_key(A_IDS[0])),
            )
            request_file = json.loads(
                (root / REQUESTS / f"{request.request.request_id}.json").read_text()
            )
        # A bulk load killed mid-way left the person's ids in its staging directory; another
        # load is running while the erasure does.
        with staging_directory(hbase_dir) as running:
            killed = killed_load(hbase_dir, b" ".join(needles))
            gateway_files_before = _gateway_files_holding(hbase_dir, needles)
            step = _run([erasure], resources, instance)
            gateway_files_after = _gateway_files_holding(hbase_dir, needles)
            staging_after = sorted(hbase_dir.glob(f"{STAGING_PREFIX}*"))
        with hbase.connection() as connection:
            sketches = connection.table(SKETCH_TABLE)
            after = SimpleNamespace(
                events={day: _events(storage, day) for day in DAYS},
                users={day: _aggregate_users(sketches, day) for day in DAYS},
                hbase_mentions=_hbase_mentions(connection, FORGOTTEN_TEXTS),
                lake_mentions=_lake_mentions(root, FORGOTTEN_TEXTS),
                assignment=pq.read_table(root / latest_assignment_dir(storage)).to_pylist(),
                a_row=connection.table(PROFILE_TABLE).row(profile_key(A_IDS[0])),
                email_lookups={
                    email: connection.table(PROFILE_TABLE).row(lookup_key("email_sha256", email))
                    for email in (EMAIL_A, EMAIL_B)
                },
            )
        held_after = {day: _held(root, day, p_hashes) for day in DAYS}
        counted_after = {day: _counted(spark, storage, day, p_hashes) for day in DAYS}
        shutil.move(held_back, root / "landing" / f"date={LATER_DAY.isoformat()}")
        plant(root, LATER_DAY, first_day=False, only_p=True)
        later_day = _run(list(daily_assets), resources, instance, LATER_DAY)
        with hbase.connection() as connection:
            later_day_mentions = _hbase_mentions(connection, FORGOTTEN_TEXTS)
        later_day_gateway_files = _gateway_files_holding(hbase_dir, needles)
        nobody = forget(
            storage, table_opener(hbase.pool(), PROFILE_TABLE), [GivenId("never-seen-id")]
        )
        nothing = _run([erasure], resources, instance)
        yield SimpleNamespace(
            root=root,
            storage=storage,
            built=built,
            before=before,
            request=request,
            request_file=request_file,
            dry_run=after_dry_run,
            immediate=immediate,
            step=step,
            gateway_files_before=gateway_files_before,
            gateway_files_after=gateway_files_after,
            staging=SimpleNamespace(killed=killed, running=running, after=staging_after),
            later_day_gateway_files=later_day_gateway_files,
            counted_before=counted_before,
            held_after=held_after,
            counted_after=counted_after,
            after=after,
            later_day=later_day,
            later_day_mentions=later_day_mentions,
            later_day_lake_mentions=_lake_mentions(root, FORGOTTEN_TEXTS),
            nobody=nobody,
            nothing=nothing,
        )
    finally:
        hbase.close()


def _report(run: Run) -> dict:
    (report,) = run.metadata[("erasure", None)]["reports"]
    return report


def test_the_daily_assets_built_every_day_with_the_person_in_them(erased):
    assert all(run.success for run in erased.built)
    assert all(erased.before.rows[p] for p in P_IDS)
    # The sketches of every day retained the person's hashes: the later check is not vacuous.
    assert all(count > 0 for count in erased.before.retaining.values())
    assert len(erased.before.hbase_mentions) > 10
    assert len(erased.before.lake_mentions) > 10


def test_the_person_bridged_a_and_b_into_one_component_mastered_by_them(erased):
    assert erased.before.a_row[b"s:master"] == P_IDS[0].encode()


def test_the_request_resolves_every_id_of_the_person_through_their_login(erased):
    assert erased.request.found
    assert erased.request.profiles_resolved == 2


def test_a_dry_run_shows_the_resolution_the_request_then_records(erased):
    dry, plan = erased.dry_run.body, erased.request_file["plan"]
    assert erased.dry_run.code == 0 and dry["dry_run"] is True and dry["found"] is True
    assert dry["profiles"] == plan["profiles"] == sorted(P_IDS)
    assert dry["keys"] == plan["keys"] and dry["suppressed_ids"] == plan["suppressed_ids"]
    immediate = erased.request.request.immediate
    for count in ("profile_rows", "lookup_rows", "edge_rows", "association_cells"):
        assert dry[count] == immediate[f"{count}_deleted"], count
    assert dry["profile_rows"] == len(P_IDS)


def test_a_dry_run_changes_nothing(erased):
    assert erased.dry_run.hbase_mentions == erased.before.hbase_mentions
    assert erased.dry_run.lake_mentions == erased.before.lake_mentions
    assert erased.dry_run.lake_files == erased.dry_run.lake_files_before


def test_the_persons_hbase_rows_are_deleted_at_once(erased):
    now = erased.immediate
    assert now.profile_rows == {p: {} for p in P_IDS}
    assert now.login_lookup == {}
    assert all(row == {} for row in now.edges.values())
    assert column(b"a", P_IDS[0]) in erased.before.a_row
    assert not any(name.startswith(b"a:p-") for name in now.a_row)
    assert now.a_row[b"s:type"] == b"profile"  # the others stay readable


def test_the_suppression_list_holds_digests_not_ids(erased):
    listed = list((erased.root / "erasure" / "suppression").glob("*.json"))
    text = "".join(path.read_text() for path in listed)
    assert listed and not any(t in text for t in FORGOTTEN_TEXTS)
    mine = erased.root / "erasure" / "suppression" / f"{erased.request.request.request_id}.json"
    # two profiles, the IDFA's other spelling (ingest may meet either), one login
    assert len(json.loads(mine.read_text())["digests"]) == 4


def test_the_request_is_kept_in_the_lake_until_the_erasure_step(erased):
    assert [given["id"] for given in erased.request_file["ids"]] == [P_IDS[0]]
    assert not list((erased.root / REQUESTS).glob("*.json"))


def test_one_erasure_run_leaves_no_trace_in_any_lake_file(erased):
    assert erased.step.success
    assert erased.after.lake_mentions == []


def test_the_accuracy_checks_leaf_counts_lose_the_person(erased):
    assert all(erased.counted_before.values())  # each day counted the person's ids
    assert erased.held_after == {day: set() for day in DAYS}  # no file left holding them
    assert erased.counted_after == {day: set() for day in DAYS}


def test_one_erasure_run_leaves_no_trace_in_any_hbase_table(erased):
    assert erased.after.hbase_mentions == []


def test_once_the_run_reports_done_no_gateway_file_holds_an_id_the_login_or_a_hash(erased):
    # Before the run the files held them (delete markers, old sketch versions, the pending
    # log): the search is not vacuous.
    assert erased.gateway_files_before
    assert erased.gateway_files_after == []
    assert erased.later_day_gateway_files == []


def test_the_erasure_removes_a_killed_bulk_loads_staging_but_not_a_running_loads(erased):
    assert erased.staging.after == [erased.staging.running]
    killed = erased.staging.killed.name
    assert any(path.startswith(killed) for path in erased.gateway_files_before)  # it held ids


def test_the_components_the_person_bridged_split_with_the_oldest_as_master(erased):
    masters = {row["profile"]: row["master"] for row in erased.after.assignment}
    assert masters[A_IDS[1]] == A_IDS[0]
    assert masters[B_IDS[1]] == B_IDS[0]
    assert A_IDS[0] not in masters.values() or masters[A_IDS[0]] == A_IDS[0]
    assert b"s:master" not in erased.after.a_row  # a-cookie is a master again, in HBase too
    # The emails P shared: their lookups name A's and B's masters again.
    assert erased.after.email_lookups[EMAIL_A][b"s:profile"] == A_IDS[0].encode()
    assert erased.after.email_lookups[EMAIL_B][b"s:profile"] == B_IDS[0].encode()


def test_other_persons_events_are_unchanged(erased):
    for day in DAYS:
        expected = [e for e in erased.before.events[day] if e["user_id"] not in P_IDS]
        assert erased.after.events[day] == expected
        assert len(expected) < len(erased.before.events[day])


def test_audience_estimates_lose_exactly_the_person(erased):
    # Under 4,096 users a day, theta sketches are exact: the person was one user per profile.
    for day in DAYS:
        before, after = erased.before.users[day], erased.after.users[day]
        assert set(after) == set(before)
        lost = {event: before[event] - after[event] for event in before}
        assert lost == {event: 2.0 if event in P_EVENT_TYPES else 0.0 for event in before}


def test_the_report_says_what_was_removed_without_personal_data(erased):
    report = _report(erased.step)
    batch = report["batch"]
    assert report["outcome"] == "erased"
    assert report["profiles_resolved"] == 2
    assert report["sketch_days_rebuilt"] == [day.isoformat() for day in DAYS]
    assert batch["sketch_days_rebuilt"] == report["sketch_days_rebuilt"]
    assert batch["sketch_rows_checked"] > 0 and report["sketch_rows_retaining"] == 0
    assert batch["hbase_major_compaction"] == {
        "tables": ["profiles", "sketches"],
        "state": "completed",
    }
    assert batch["requests"] == 1 and batch["runs"] == 1
    assert report["rows_removed"]["events"] == len(DAYS) * 4  # 2 events of each P id a day
    assert report["rows_removed"]["quarantine"] == len(DAYS)  # P's bad line of each day
    assert report["rows_removed"]["landing"] == len(DAYS) * 5
    assert report["rows_removed"] == batch["rows_removed"]  # a batch of one
    assert "identity_components/date=2026-11-01" in batch["partitions_rewritten"]
    assert not any(t in json.dumps(report) for t in FORGOTTEN_TEXTS)
    saved = json.loads(
        (erased.root / "erasure" / "reports" / f"{report['request_id']}.json").read_text()
    )
    assert saved == report


def test_the_rebuilt_sketch_days_are_recorded_as_materializations(erased):
    rebuilt = {partition for name, partition in erased.step.metadata if name == "audience_sketches"}
    assert rebuilt == {day.isoformat() for day in DAYS}


def test_a_new_day_with_the_persons_ids_does_not_bring_them_back(erased):
    assert erased.later_day.success
    ingest = erased.later_day.metadata[("raw_events", LATER_DAY.isoformat())]
    assert ingest["suppressed"] == 5  # 4 events of P, and P's bad line
    assert erased.later_day_mentions == []
    assert erased.later_day_lake_mentions == [
        f"landing/date={LATER_DAY.isoformat()}/part-erasure.jsonl.gz"
    ]


def test_a_request_for_unknown_ids_completes_with_nothing_found(erased):
    assert not erased.nobody.found
    assert _report(erased.nothing)["outcome"] == "nothing found"
