"""compacted_profiles end to end: a generated lake, the identity graph, rows in a real gateway."""

from __future__ import annotations

import json
from datetime import date

import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance, materialize

from profile_assets.compaction_assets import compacted_profiles
from profile_assets.identity_assets import identity_components, identity_edges
from profile_assets.profile_checks import profile_checks
from profile_assets.raw_events import raw_events
from profile_store.generator.lake import generate_lake
from profile_store.identity.pipeline import latest_assignment_dir
from profile_store.lake.storage import LocalLakeStorage
from profile_store.profiles.consistency import component_agreement, master_references
from profile_store.profiles.pipeline import end_of_day_ms
from profile_store.profiles.segment_rules import DEFAULT_RULES, parse_rules, rules_digest
from profile_store.profiles.table import (
    PROFILE_TABLE,
    column,
    decode_counter,
    decode_profile,
    edge_key,
    encode_ms,
    lookup_key,
    profile_key,
)
from resources.hbase import HBaseResource
from resources.identity import IdentityResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env

DAYS = ("2026-11-01", "2026-11-02")
FULL = {"ops": {"compacted_profiles": {"config": {"full_recompute": True}}}}


@pytest.fixture(scope="module")
def pipeline(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("profiles_lake")
    generate_lake(root, len(DAYS), 6000, seed=33, start_date=date.fromisoformat(DAYS[0]))
    hbase = HBaseResource(data_dir=str(tmp_path_factory.mktemp("hbase")))
    resources = {
        "spark": spark_resource_from_env({}),
        "lake": LakeResource(root=str(root)),
        "identity": IdentityResource(),
        "hbase": hbase,
    }
    instance = DagsterInstance.ephemeral()

    checks = {}

    def run(day: str, run_config: dict | None = None, *, upstream: bool = True) -> dict:
        """The day through compaction; ``upstream=False``: compaction (and checks) alone, over
        the events and identity components an earlier run of the day left."""
        inputs = [raw_events, identity_edges, identity_components] if upstream else []
        result = materialize(
            [*inputs, compacted_profiles, *profile_checks],
            partition_key=day,
            resources=resources,
            instance=instance,
            run_config=run_config,
        )
        assert result.success
        for evaluation in result.get_asset_check_evaluations():
            checks[(evaluation.check_name, day)] = evaluation
        (materialization,) = result.asset_materializations_for_node("compacted_profiles")
        return {key: value.value for key, value in materialization.metadata.items()}

    run.checks = checks
    yield root, hbase, run
    hbase.close()


@pytest.fixture(scope="module")
def built(pipeline):
    root, hbase, run = pipeline
    metadata = [run(day) for day in DAYS]  # the only runs of the upstream assets
    return root, hbase, run, metadata


def _table(hbase):
    return hbase.pool().connection()


def _components(root) -> dict[str, list[str]]:
    current = pq.read_table(root / latest_assignment_dir(LocalLakeStorage(root))).to_pylist()
    components: dict[str, list[str]] = {}
    for row in current:
        components.setdefault(row["master"], []).append(row["profile"])
    return components


def test_identity_quality_and_profile_checks_pass_on_every_day(built):
    _, _, run, _ = built
    for day in DAYS:
        quality = run.checks[("identity_quality_check", day)]
        assert quality.passed, quality.description
        assert quality.metadata["pairwise_precision_pct"].value >= 99.0
        assert quality.metadata["linkable_pairs"].value > 0
        assert run.checks[("profiles_master_consistency", day)].passed
        agreement = run.checks[("profiles_compaction_agreement", day)]
        assert agreement.passed and agreement.metadata["components_sampled"].value > 0


def test_every_profile_of_a_component_returns_the_same_segments_and_master(built):
    root, hbase, _, _ = built
    components = _components(root)
    assert len(components) > 10
    with _table(hbase) as connection:
        agreement = component_agreement(connection.table(PROFILE_TABLE), components)
    assert agreement.problems == [] and agreement.profiles == sum(map(len, components.values()))


def test_every_master_column_names_an_existing_master(built):
    _, hbase, _, _ = built
    with _table(hbase) as connection:
        references = master_references(connection.table(PROFILE_TABLE))
    assert references.dependents > 0 and references.problems == []


def test_the_second_day_rewrites_only_the_components_it_changed(built, spark):
    root, _, _, metadata = built
    first, second = metadata
    assert (first["mode"], second["mode"]) == ("full", "incremental")
    seen = spark.read.parquet(str(root / "identity_profiles")).select("profile").distinct().count()
    assert first["dagster/row_count"] < seen
    assert 0 < second["dagster/row_count"] < seen
    assert second["components_rewritten"] <= second["dagster/row_count"]


def test_each_day_records_the_digest_and_count_of_the_segment_rules_it_applied(built):
    *_, metadata = built
    in_force = parse_rules(DEFAULT_RULES)  # the generated lake has no rules file
    for day in metadata:
        assert day["segment_rules_digest"] == rules_digest(in_force)
        assert day["segment_rules_count"] == len(in_force)


def test_a_component_merges_the_segments_its_profiles_earned_separately(built, spark):
    root, hbase, _, _ = built
    segments = spark.read.parquet(str(root / "profile_segments" / f"date={DAYS[1]}"))
    per_profile = {}
    for row in segments.collect():
        per_profile.setdefault(row.profile, {})[row.segment] = row.expiry_ms
    merged = None
    for master, ids in _components(root).items():
        earned = [per_profile.get(i, {}) for i in ids]
        if sum(1 for e in earned if e) >= 2 and len({frozenset(e) for e in earned}) > 1:
            merged = (master, ids, earned)
            break
    assert merged is not None, "the sample has a person whose ids earned different segments"
    master, ids, earned = merged
    expected = {}
    for segments_of_id in earned:
        for segment, expiry in segments_of_id.items():
            expected[segment] = max(expiry, expected.get(segment, 0))
    with _table(hbase) as connection:
        table = connection.table(PROFILE_TABLE)
        for profile in ids:
            row = decode_profile(profile_key(profile), table.row(profile_key(profile)))
            assert row.segments == expected
            assert row.devices == len(ids)
            assert row.is_master == (profile == master)


def test_an_alternate_id_has_a_lookup_row_to_its_persons_master(built, spark):
    root, hbase, _, _ = built
    keys = spark.read.parquet(str(root / "identity_keys")).where("key_type = 'email_sha256'")
    assignment = pq.read_table(root / latest_assignment_dir(LocalLakeStorage(root))).to_pylist()
    current = {r["profile"]: r["master"] for r in assignment}
    linked = [r for r in keys.collect() if r.profile in current]
    assert linked
    sample = linked[0]
    with _table(hbase) as connection:
        row = connection.table(PROFILE_TABLE).row(lookup_key("email_sha256", sample.key))
    assert row[b"s:profile"].decode() == current[sample.profile]


def test_edge_rows_carry_the_weight_of_the_rule(built, spark):
    root, hbase, _, _ = built
    edge = spark.read.parquet(str(root / "identity_edges")).where("rule = 'member_id'").first()
    with _table(hbase) as connection:
        row = connection.table(PROFILE_TABLE).row(edge_key(edge.profile_b, edge.profile_a))
    assert float(row[b"p:weight"]) == 1.0 and b"member_id" in row[b"p:rules"].split(b",")


def test_an_unsynced_segment_reaches_every_id_of_the_person_and_is_consumed(built):
    root, hbase, run, _ = built
    master, ids = next((m, i) for m, i in _components(root).items() if len(i) >= 2)
    other = next(i for i in ids if i != master)
    expiry = 1_900_000_000_000
    with _table(hbase) as connection:
        table = connection.table(PROFILE_TABLE)
        table.put(profile_key(other), {column(b"u", "realtime_vip"): encode_ms(expiry)})
    run(DAYS[1], upstream=False)
    with _table(hbase) as connection:
        table = connection.table(PROFILE_TABLE)
        for profile in ids:
            row = decode_profile(profile_key(profile), table.row(profile_key(profile)))
            assert row.segments["realtime_vip"] == expiry
            assert row.unsynced == {}
    # A re-run of the same day still has it: consumed cells are kept in the lake.
    run(DAYS[1], upstream=False)
    with _table(hbase) as connection:
        row = connection.table(PROFILE_TABLE).row(profile_key(master))
    assert row[column(b"g", "realtime_vip")] == encode_ms(expiry)


def test_a_full_recompute_writes_the_same_rows_as_the_incremental_days(built, spark):
    root, hbase, run, _ = built

    def snapshot():
        with _table(hbase) as connection:
            table = connection.table(PROFILE_TABLE)
            rows = {}
            for key, cells in table.scan(row_prefix=b"p|"):
                row = decode_profile(key, cells)
                counters = {k: (round(v, 9), t) for k, (v, t, _) in row.counters.items()}
                rows[key] = (row.master, row.devices, row.segments, counters)
            return rows

    run(DAYS[1], upstream=False)
    incremental = snapshot()
    metadata = run(DAYS[1], FULL, upstream=False)
    assert metadata["mode"] == "full"
    assert snapshot() == incremental


def test_a_bad_segment_feed_line_fails_the_day_naming_the_field_and_applies_nothing(built):
    root, hbase, run, _ = built
    feed = root / "segment_feed" / f"date={DAYS[1]}"
    feed.mkdir(parents=True)
    lines = [
        {"profile": "anyone", "segment": "crm_gold", "expires_at": "2027-01-01T00:00:00Z"},
        {"profile": "anyone", "segment": "crm_gold", "expires_at": "next week"},
    ]
    (feed / "part-0.jsonl").write_text("\n".join(json.dumps(line) for line in lines))
    try:
        with pytest.raises(Exception) as failure:
            run(DAYS[1], upstream=False)
        error = str(getattr(failure.value, "user_exception", failure.value))
        assert "expires_at" in error and "nothing applied" in error
    finally:
        (feed / "part-0.jsonl").unlink()


def test_a_feed_segment_reaches_every_id_of_the_person_and_survives_a_full_recompute(built):
    root, hbase, run, _ = built
    master, ids = next((m, i) for m, i in _components(root).items() if len(i) >= 2)
    feed = root / "segment_feed" / f"date={DAYS[1]}"
    feed.mkdir(parents=True, exist_ok=True)
    line = {"profile": ids[-1], "segment": "crm_gold", "expires_at": "2031-01-01T00:00:00Z"}
    (feed / "part-1.jsonl").write_text(json.dumps(line) + "\n")
    expiry = encode_ms(1_924_992_000_000)  # 2031-01-01T00:00Z
    for run_config in (None, FULL):
        run(DAYS[1], run_config, upstream=False)
        with _table(hbase) as connection:
            table = connection.table(PROFILE_TABLE)
            for profile in ids:
                assert table.row(profile_key(profile))[column(b"g", "crm_gold")] == expiry


def test_a_day_loaded_in_bulk_restores_the_rows_its_thrift_run_wrote(built):
    root, hbase, run, metadata = built
    assert metadata[1]["profile_write"] == "thrift"  # below bulk_min_rows

    def snapshot():
        """Every profile cell; counters to 9 decimals, as Spark's sums of doubles may differ
        in their last bit from one run of a day to the next."""
        with _table(hbase) as connection:
            rows = dict(connection.table(PROFILE_TABLE).scan(row_prefix=b"p|"))
        for cells in rows.values():
            for name, value in cells.items():
                if name.startswith(b"f:") and len(value) == 24:
                    counter, last_ms, half_life_ms = decode_counter(value)
                    cells[name] = (round(counter, 9), last_ms, half_life_ms)
        return rows

    run(DAYS[1], upstream=False)  # the day's own rewrite: its members are listed in the lake
    before = snapshot()
    rewritten = pq.read_table(root / "compacted_profiles" / f"date={DAYS[1]}").to_pylist()
    dependents = [row["profile"] for row in rewritten if row["profile"] != row["master"]][:20]
    assert dependents
    with _table(hbase) as connection:
        table = connection.table(PROFILE_TABLE)
        for profile in dependents:  # what the day's rows must undo
            stored = before[profile_key(profile)]
            assert stored[b"s:master"]
            dropped = [name for name in stored if name.startswith((b"g:", b"f:", b"s:master"))]
            table.delete(profile_key(profile), columns=dropped or [b"s:master"])
            table.put(profile_key(profile), {b"g:stale_segment": b"1", b"f:view_item": b"x"})
    bulk = {"ops": {"compacted_profiles": {"config": {"profile_write": "bulk"}}}}
    again = run(DAYS[1], bulk, upstream=False)
    assert again["profile_write"] == "bulk"
    assert snapshot() == before


def test_an_earlier_day_run_again_judges_only_the_components_no_later_day_rewrote(built):
    """Its rows of a later day are left alone, so they cannot agree with the earlier day."""
    _, _, run, _ = built
    run(DAYS[0], upstream=False)
    agreement = run.checks[("profiles_compaction_agreement", DAYS[0])]
    assert agreement.passed, agreement.description
    assert agreement.metadata["components_of_a_later_day"].value > 0


def test_a_component_with_a_row_of_a_later_day_is_counted_apart_not_judged(built):
    root, hbase, _, _ = built
    components = dict(sorted(_components(root).items())[:20])
    with _table(hbase) as connection:
        table = connection.table(PROFILE_TABLE)
        latest = end_of_day_ms(date.fromisoformat(DAYS[-1]))
        of_the_latest_day = component_agreement(table, components, as_of_ms=latest)
        of_a_day_before_all = component_agreement(table, components, as_of_ms=0)
    assert (of_the_latest_day.components, of_the_latest_day.later) == (20, 0)
    assert of_the_latest_day.problems == []
    assert (of_a_day_before_all.components, of_a_day_before_all.later) == (0, 20)
    assert of_a_day_before_all.profiles == 0
