from collections import Counter
from itertools import pairwise


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
