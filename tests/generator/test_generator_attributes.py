import json
from collections import defaultdict
from datetime import date

from profile_store.generator import catalog
from profile_store.generator.events import day_events
from profile_store.generator.identity_noise import NoiseLedger
from profile_store.generator.population import build_population, cohort_sizes

KINDS = {
    (app.app_id, event_type, spec.name): spec.kind
    for app in catalog.APPS
    for event_type, specs in app.attributes.items()
    for spec in specs
}


def _values(rows) -> dict[tuple[str, str, str], list[str]]:
    values = defaultdict(list)
    for app_id, event_type, attributes in rows:
        for name, value in attributes.items():
            values[(app_id, event_type, name)].append(value)
    return values


def test_attributes_differ_by_app_and_event_and_are_schemaless(lake) -> None:
    rows = [
        (r["app_id"], r["event_type"], r["event_attributes"])
        for r in lake.well_formed("2026-11-01")
    ]
    assert {app for app, _, _ in rows} == {app.app_id for app in catalog.APPS}
    assert set(_values(rows)) <= set(KINDS)
    key_sets = defaultdict(set)
    for app_id, event_type, attributes in rows:
        key_sets[(app_id, event_type)].add(frozenset(attributes))
    assert all(len(sets) > 1 for group, sets in key_sets.items() if len(sets) > 0)


def test_low_cardinality_attributes_never_exceed_100_values(lake) -> None:
    rows = [
        (r["app_id"], r["event_type"], r["event_attributes"])
        for day in lake.lines
        for r in lake.well_formed(day)
    ]
    for key, values in _values(rows).items():
        if KINDS[key] == "low":
            assert len(set(values)) <= 100, key


def test_seed_001_trimming_keeps_low_cardinality_and_drops_noisy_at_200k_per_day() -> None:
    # Rule: keep an attribute of an (app, event, day) if it has at most 100 distinct values
    # and distinct / appearances < 0.1. Checked on day 1 (returning and new persons).
    population = build_population(3, cohort_sizes(200_000, 2))
    events = day_events(population, 1, date(2026, 11, 2), 200_000, 3, NoiseLedger())
    rows = zip(
        events["app_id"].to_pylist(),
        events["event_type"].to_pylist(),
        map(json.loads, events["event_attributes"].to_pylist()),
        strict=True,
    )
    verdicts = {}
    for key, values in _values(rows).items():
        distinct = len(set(values))
        kept = distinct <= 100 and distinct / len(values) < 0.1
        verdicts[key] = (KINDS[key], kept, distinct)
    assert set(verdicts) == set(KINDS)
    for key, (kind, kept, distinct) in verdicts.items():
        assert kept == (kind == "low"), (key, kind, distinct)
        if kind == "borderline":
            assert 100 < distinct <= 150, key
