"""Pending requests carried out together: one rewrite, one rebuild per day, one compaction per
table, a report per request; a refused request alone left pending; a failed run resumed.

A generated lake of two days (2 x 1,500 events) with ``scenario``'s planted persons, built by
the daily assets into a gateway run as its own server (``profiles hbase-gateway``, as a
deployment runs it; the resource points at it by host), whose metrics count its major
compactions. Then, in order:

1. **One run, eight requests.** P and five generated persons (GAIDs among their ids) are
   forgotten; two requests recorded earlier are refused now: one whose person grew past the
   request's bound of 1 profile since, one naming the blocklisted login ``unknown``. One run of
   the ``erasure`` asset.
2. **A failed run, resumed.** The refused requests withdrawn, three more persons forgotten; a
   first run fails (injected) after the lake rewrite, before any sketch is rebuilt; the next
   finds a rebuilt sketch row holding one person's hash again (a late writer puts back a cell
   read before the erasure) and completes the two others only; the run after completes it.
"""

from __future__ import annotations

import json
import urllib.request
from datetime import date, timedelta
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance, materialize
from daily_runs import build_days, lake_resources
from prometheus_client.parser import text_string_to_metric_families
from scenario import P_IDS, plant

from profile_assets.audience_assets import SKETCH_LG_K
from profile_assets.compaction_assets import CompactionConfig
from profile_assets.erasure_assets import erasure
from profile_store.audiences.day_sketches import build_day_sketches
from profile_store.audiences.sketch_rows import MAX_PAIR_ROWS
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.erasure.batch import BATCHES, unfinished_batches
from profile_store.erasure.erasure_step import ErasureTargets, carry_out_pending
from profile_store.erasure.forget import forget
from profile_store.erasure.report import REPORTS
from profile_store.erasure.requests import (
    REQUESTS,
    ErasureRefused,
    GivenId,
    new_request,
    pending_requests,
    save_request,
)
from profile_store.erasure.resolution import IdentityGraph, Person
from profile_store.erasure.sketch_retention import id_hashes, retention
from profile_store.generator.lake import generate_lake
from profile_store.hbase.pool import table_opener
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.lake.storage import LocalLakeStorage
from profile_store.profiles.rules_in_force import read_rules_in_force
from profile_store.profiles.table import PROFILE_TABLE, profile_key
from resources.hbase import HBaseResource

D1 = date(2026, 11, 1)
DAYS = [D1 + timedelta(days=i) for i in range(2)]


def _major_compactions(gateway: EmbeddedGateway) -> float:
    with urllib.request.urlopen(gateway.metrics_url, timeout=30) as response:
        text = response.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "hbase_gateway_compactions_total" and sample.labels["kind"] == "major"
    )


def _files_holding(store: Path, needles: dict[str, bytes]) -> list[str]:
    """The names of ``needles`` found in any file under the gateway's store directory (its
    SQLite files, WALs, pending log, anything else), read as raw bytes."""
    contents = [path.read_bytes() for path in store.rglob("*") if path.is_file()]
    return sorted(name for name, needle in needles.items() if any(needle in c for c in contents))


def _needles(persons: dict[str, Person]) -> dict[str, bytes]:
    """Every forgotten id as stored (UTF-8) and each profile's 64-bit sketch hash."""
    found: dict[str, bytes] = {}
    for rid, person in persons.items():
        for value in person.suppressed_ids:
            found[f"{rid}: id {value}"] = value.encode()
        for digest in id_hashes(person.profiles):
            found[f"{rid}: hash {digest.hex()}"] = digest
    return found


def _events_of(root: Path, profiles: frozenset[str]) -> int:
    rows = pq.read_table(root / "events", columns=["user_id"]).column("user_id").to_pylist()
    return sum(1 for user in rows if user in profiles)


def _pick(storage: LocalLakeStorage, count: int, taken: set[str], min_profiles: int = 1):
    """``count`` persons of the lake with events on both days, GAIDs first, none sharing a
    profile with ``taken`` or each other; each as (the device id to name, the person)."""
    graph = IdentityGraph.load(storage)
    table = pq.read_table(
        Path(storage.root) / "events", columns=["user_id", "id_type", "date"]
    ).to_pylist()
    days_of: dict[str, set] = {}
    kinds = {}
    for row in table:
        days_of.setdefault(row["user_id"], set()).add(row["date"])
        kinds[row["user_id"]] = row["id_type"]
    candidates = sorted(days_of, key=lambda user: (kinds[user] != "gaid", user))
    picked = []
    for user in candidates:
        if len(days_of[user]) < len(DAYS) or user in taken:
            continue
        try:
            person = graph.resolve([GivenId(user)])
        except ErasureRefused:
            continue
        if len(person.profiles) < min_profiles or person.profiles & taken:
            continue
        taken |= person.profiles
        picked.append((user, person))
        if len(picked) == count:
            return picked
    raise AssertionError(f"the lake has fewer than {count} such persons")


def _forget(built, given: GivenId):
    opener = table_opener(built.hbase.pool(), PROFILE_TABLE)
    return forget(built.storage, opener, [given]).request


def _sketch_rows(built, days: list[str]) -> int:
    """Every sketch row of ``days``, as one search of each day reads them."""
    with built.hbase.connection() as connection:
        table = connection.table(SKETCH_TABLE)
        return sum(
            retention(table, built.storage, date.fromisoformat(day), set()).rows_checked
            for day in days
        )


def _reports(root: Path) -> dict[str, dict]:
    folder = root / REPORTS
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def _sketch_materializations(result) -> list[str]:
    return sorted(
        event.event_specific_data.materialization.partition
        for event in result.get_asset_materialization_events()
        if event.event_specific_data.materialization.asset_key.to_user_string()
        == "audience_sketches"
    )


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("batch_lake")
    generate_lake(root, len(DAYS), 1500, seed=43, start_date=D1)
    for day in DAYS:
        plant(root, day, first_day=day == D1)
    store = tmp_path_factory.mktemp("batch_gateway")
    with EmbeddedGateway(store, metrics_port=0) as gateway:
        hbase = HBaseResource(host=gateway.host, port=gateway.port)
        resources = lake_resources(root, hbase)
        instance = DagsterInstance.ephemeral()
        build_days(DAYS, resources, instance)
        try:
            yield SimpleNamespace(
                root=root,
                storage=LocalLakeStorage(root),
                store=store,
                gateway=gateway,
                hbase=hbase,
                resources=resources,
                instance=instance,
            )
        finally:
            hbase.close()


@pytest.fixture(scope="module")
def one_run(built):
    """Phase 1: six requests carried out in one run, two refused."""
    graph = IdentityGraph.load(built.storage)
    p_person = graph.resolve([GivenId(P_IDS[0])])
    taken = set(p_person.profiles)
    picked = _pick(built.storage, 5, taken)
    grown_device, grown = _pick(built.storage, 1, taken, min_profiles=2)[0]
    requests = {_forget(built, GivenId(P_IDS[0])).request_id: p_person}
    for device, person in picked:
        requests[_forget(built, GivenId(device)).request_id] = person
    # Recorded while the person had one profile (the bound then held); it has more now.
    over_bound = new_request([GivenId(grown_device)], max_profiles=1)
    placeholder = new_request([GivenId("unknown", "member_id")])
    for request in (over_bound, placeholder):
        save_request(built.storage, request)
    refused_files = {
        r.request_id: (built.root / r.path).read_bytes() for r in (over_bound, placeholder)
    }
    needles = _needles(requests)
    before = SimpleNamespace(
        files=_files_holding(built.store, needles),
        events={rid: _events_of(built.root, p.profiles) for rid, p in requests.items()},
        grown_events=_events_of(built.root, grown.profiles),
        majors=_major_compactions(built.gateway),
    )
    result = materialize(
        [erasure], resources=built.resources, instance=built.instance, raise_on_error=False
    )
    (check,) = result.get_asset_check_evaluations()
    with built.hbase.connection() as connection:
        grown_rows = connection.table(PROFILE_TABLE).rows(
            [profile_key(p) for p in sorted(grown.profiles)]
        )
    return SimpleNamespace(
        requests=requests,
        refused={
            over_bound.request_id: "more than the bound of 1",
            placeholder.request_id: "quarantined",
        },
        refused_files=refused_files,
        grown=grown,
        grown_rows=grown_rows,
        needles=needles,
        before=before,
        result=result,
        check=check,
        reports=_reports(built.root),
        pending={r.request_id for r in pending_requests(built.storage)},
        refused_after={
            rid: (built.root / REQUESTS / f"{rid}.json").read_bytes() for rid in refused_files
        },
        files=_files_holding(built.store, needles),
        grown_events=_events_of(built.root, grown.profiles),
        majors=_major_compactions(built.gateway),
        rebuilt=_sketch_materializations(result),
    )


def test_every_forgotten_id_and_hash_was_in_the_gateway_files_before(one_run):
    # The search below is not vacuous: each person's ids and hashes were there.
    assert {name.split(":")[0] for name in one_run.before.files} == set(one_run.requests)
    assert len(one_run.before.files) > 2 * len(one_run.requests)


def test_the_requests_are_carried_out_in_one_batch_with_a_report_each(one_run):
    assert set(one_run.reports) == set(one_run.requests)
    batches = {report["batch"]["batch_id"] for report in one_run.reports.values()}
    assert len(batches) == 1
    for report in one_run.reports.values():
        assert report["outcome"] == "erased"
        assert report["batch"]["requests"] == len(one_run.requests) == 6
        assert report["batch"]["runs"] == 1
        assert report["sketch_rows_retaining"] == 0


def test_each_sketch_day_is_rebuilt_once_and_each_table_compacted_once(one_run):
    (report, *_) = one_run.reports.values()
    assert one_run.rebuilt == [day.isoformat() for day in DAYS]
    assert report["batch"]["sketch_days_rebuilt"] == one_run.rebuilt
    assert one_run.majors - one_run.before.majors == 2  # profiles and sketches, once each
    assert report["batch"]["hbase_major_compaction"]["tables"] == ["profiles", "sketches"]


def test_each_day_is_searched_once_for_every_hash_of_the_batch(one_run, built):
    (report, *_) = one_run.reports.values()
    checked = report["batch"]["sketch_rows_checked"]
    assert checked == _sketch_rows(built, report["batch"]["sketch_days_rebuilt"]) > 0


def test_a_standalone_gateway_reports_the_major_compaction_completed(one_run):
    for report in one_run.reports.values():
        assert report["batch"]["hbase_major_compaction"]["state"] == "completed"


def test_each_report_counts_its_own_persons_rows_and_the_batch_all_of_them(one_run):
    reports = one_run.reports
    for rid, report in reports.items():
        assert report["rows_removed"]["events"] == one_run.before.events[rid] > 0
        assert report["profiles_resolved"] == len(one_run.requests[rid].profiles)
        assert report["hbase_rows_deleted"]["profile_rows"] == 0  # gone at the request
        assert report["immediate"]["profile_rows_deleted"] >= 1
        assert report["sketch_days_rebuilt"] == [day.isoformat() for day in DAYS]
    (batch, *_) = {json.dumps(r["batch"]["rows_removed"]) for r in reports.values()}
    totals = json.loads(batch)
    assert totals["events"] == sum(one_run.before.events.values())
    for area, total in totals.items():
        assert sum(r["rows_removed"].get(area, 0) for r in reports.values()) >= total, area


def test_no_report_holds_a_forgotten_id(one_run):
    text = json.dumps(one_run.reports)
    ids = {value for person in one_run.requests.values() for value in person.suppressed_ids}
    assert ids and [value for value in ids if value in text] == []


def test_no_gateway_file_holds_a_forgotten_id_or_hash_once_the_run_reports(one_run):
    assert one_run.files == []


def test_refused_requests_stay_pending_untouched_and_fail_the_run_by_name(one_run):
    assert one_run.pending == set(one_run.refused)
    assert one_run.refused_after == one_run.refused_files
    # The others materialized, then the blocking check failed the run, naming each.
    assert not one_run.result.success and not one_run.check.passed
    assert one_run.check.check_name == "requests_carried_out"
    described = one_run.check.description
    for rid, why in one_run.refused.items():
        assert rid not in one_run.reports
        assert f"{rid}: refused, still pending" in described and why in described
    assert set(one_run.check.metadata["refused"].value) == set(one_run.refused)


def test_a_refused_persons_rows_are_left_where_they_were(one_run):
    assert one_run.grown_events == one_run.before.grown_events > 0
    assert len(one_run.grown_rows) == len(one_run.grown.profiles)


@pytest.fixture(scope="module")
def resumed(built, one_run, spark):
    """Phase 2: a run failing after the lake rewrite; a resumed run finding one person's hash
    put back; the run after."""
    for rid in one_run.refused:  # withdrawn, as an operator would
        (built.root / REQUESTS / f"{rid}.json").unlink()
    taken = {p for person in one_run.requests.values() for p in person.profiles}
    taken |= one_run.grown.profiles
    picked = _pick(built.storage, 3, taken)
    requests = {_forget(built, GivenId(device)).request_id: person for device, person in picked}
    late = sorted(requests)[-1]  # whose hash a late writer puts back
    needles = _needles(requests)
    files_before = _files_holding(built.store, needles)
    events = {rid: _events_of(built.root, p.profiles) for rid, p in requests.items()}
    with built.hbase.connection() as connection:
        sketches = connection.table(SKETCH_TABLE)
        found = retention(sketches, built.storage, D1, id_hashes(requests[late].profiles))
        stale_row = found.examples[0].encode()
        stale_cells = sketches.row(stale_row)
    settings = CompactionConfig().settings(read_rules_in_force(built.storage).rules)
    targets = ErasureTargets(built.hbase.connection, built.hbase.thrift_address(), settings)

    def rebuild(day: date, batch_id: str) -> dict:
        return build_day_sketches(
            spark,
            built.storage,
            built.hbase.connection,
            targets.address,
            day,
            SKETCH_LG_K,
            MAX_PAIR_ROWS,
            500,
        )

    def failing(day: date, batch_id: str) -> dict:
        raise RuntimeError("injected: the run dies after the lake rewrite")

    def late_writer(day: date, batch_id: str) -> dict:
        counts = rebuild(day, batch_id)
        if day == D1:  # a writer that read the events before the erasure, writing late
            with built.hbase.connection() as connection:
                connection.table(SKETCH_TABLE).put(stale_row, stale_cells)
        return counts

    pending = pending_requests(built.storage)
    with pytest.raises(RuntimeError, match="injected"):
        carry_out_pending(spark, built.storage, targets, pending, failing)
    (journal,) = unfinished_batches(built.storage)
    crashed = SimpleNamespace(
        pending={r.request_id for r in pending_requests(built.storage)},
        reports=set(_reports(built.root)) - set(one_run.reports),
        steps=sorted(journal.steps),
        events={rid: _events_of(built.root, p.profiles) for rid, p in requests.items()},
    )
    outcomes = carry_out_pending(
        spark, built.storage, targets, pending_requests(built.storage), late_writer
    )
    retained = SimpleNamespace(
        outcomes=outcomes,
        pending={r.request_id for r in pending_requests(built.storage)},
        reports={rid: r for rid, r in _reports(built.root).items() if rid in requests},
        journals=unfinished_batches(built.storage),
    )
    result = materialize([erasure], resources=built.resources, instance=built.instance)
    return SimpleNamespace(
        requests=requests,
        late=late,
        events=events,
        crashed=crashed,
        retained=retained,
        result=result,
        reports={rid: r for rid, r in _reports(built.root).items() if rid in requests},
        pending={r.request_id for r in pending_requests(built.storage)},
        batches=list((built.root / BATCHES).glob("*.json")),
        files_before=files_before,
        files=_files_holding(built.store, needles),
        needles=needles,
    )


def test_a_failed_run_leaves_every_request_pending_and_no_report(resumed):
    assert resumed.crashed.pending == set(resumed.requests)
    assert resumed.crashed.reports == set()
    assert resumed.crashed.steps == ["components", "hbase", "lake", "resolve"]
    # The lake was rewritten before the failure: only the journal knows them now.
    assert all(count == 0 for count in resumed.crashed.events.values())
    assert all(count > 0 for count in resumed.events.values())


def test_the_next_run_resumes_the_batch_and_keeps_only_the_retained_request_pending(resumed):
    (outcome,) = resumed.retained.outcomes
    assert outcome.retained == [resumed.late]
    assert resumed.retained.pending == {resumed.late}
    assert set(resumed.retained.reports) == set(resumed.requests) - {resumed.late}
    (journal,) = resumed.retained.journals
    assert set(journal.persons) == {resumed.late}
    for report in resumed.retained.reports.values():
        assert report["batch"]["runs"] == 2
        assert report["batch"]["sketch_rows_retaining"] >= 1  # the late row, not theirs
        assert report["sketch_rows_retaining"] == 0


def test_a_resumed_batch_reports_the_lake_rewrite_of_the_run_that_did_it(resumed):
    for rid, report in resumed.reports.items():
        assert report["rows_removed"]["events"] == resumed.events[rid] > 0
        assert report["batch"]["rows_removed"]["events"] == sum(resumed.events.values())


def test_the_run_after_completes_the_retained_request_and_the_journal_goes(resumed):
    assert resumed.result.success
    assert set(resumed.reports) == set(resumed.requests)
    assert resumed.pending == set() and resumed.batches == []
    assert resumed.reports[resumed.late]["batch"]["runs"] == 3
    assert {r["batch"]["requests"] for r in resumed.reports.values()} == {3}


def test_no_gateway_file_holds_the_resumed_persons_ids_or_hashes(resumed):
    assert {name.split(":")[0] for name in resumed.files_before} == set(resumed.requests)
    assert resumed.files == []
