from collections import Counter
from datetime import date
from itertools import pairwise

import pytest

from profile_store.generator.events import day_events
from profile_store.generator.identity_noise import NoiseLedger
from profile_store.generator.lake import generate_lake
from profile_store.generator.population import build_population, cohort_sizes


def _users_per_day(lake) -> dict[str, Counter]:
    return {
        day: Counter(record["user_id"] for record in lake.well_formed(day)) for day in lake.lines
    }


def test_users_return_on_later_days_and_new_ones_appear(lake) -> None:
    users = _users_per_day(lake)
    days = sorted(users)
    for earlier, later in pairwise(days):
        returning = set(users[earlier]) & set(users[later])
        assert len(returning) > 0.3 * len(users[later])
        assert set(users[later]) - set().union(*(users[d] for d in days if d < later))
    union = set().union(*users.values())
    assert len(union) < 0.8 * sum(len(day) for day in users.values())


def test_activity_is_heavy_tailed(lake) -> None:
    counts = sorted(_users_per_day(lake)["2026-11-01"].values(), reverse=True)
    top = counts[: max(1, len(counts) // 20)]
    assert sum(top) > 0.25 * sum(counts)  # the top 5% of ids send over a quarter of events
    assert counts[len(counts) // 2] <= 3  # while the median id sends a handful


def test_event_mix_makes_impressions_and_sessions_common_and_purchases_rare(lake) -> None:
    types = Counter(record["event_type"] for record in lake.well_formed("2026-11-01"))
    assert types.most_common(2)[0][0] in ("impression", "session")
    assert types["impression"] > 10 * types["purchase"] > 0


def _day_users(events_per_person: float) -> int:
    sizes = cohort_sizes(20_000, 2, events_per_person)
    population = build_population(5, sizes)
    events = day_events(
        population, 0, date(2026, 11, 1), 20_000, 5, NoiseLedger(), events_per_person
    )
    return len(set(events.column("user_id").to_pylist()))


def test_fewer_events_per_person_spread_the_same_traffic_over_more_users() -> None:
    assert _day_users(2.0) > 2 * _day_users(8.0)


def test_events_per_person_below_one_is_refused_naming_the_field(tmp_path) -> None:
    with pytest.raises(ValueError, match="events_per_person must be at least 1, got 0.5"):
        generate_lake(tmp_path, days=1, events_per_day=100, seed=1, events_per_person=0.5)
    assert not (tmp_path / "landing").exists()
