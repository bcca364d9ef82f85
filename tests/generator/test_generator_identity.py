from collections import Counter, defaultdict

from profile_store.generator.catalog import BLOCKLIST_MEMBER_IDS, SHARED_LOGINS


def _emitted_user_ids(lake) -> set[str]:
    return {
        record["user_id"]
        for day in lake.lines
        for record in lake.records(day)
        if record.get("user_id")
    }


def test_ground_truth_covers_every_user_id_emitted(lake) -> None:
    identities = lake.ground_truth("identities.parquet")
    assert identities.column_names == [
        "person_id",
        "user_id",
        "id_type",
        "member_id",
        "email_sha256",
        "logs_in",
        "carries_email",
    ]
    truth = identities["user_id"].to_pylist()
    assert len(truth) == len(set(truth))
    assert _emitted_user_ids(lake) == set(truth)


def test_persons_own_one_to_five_devices_and_many_own_several(lake) -> None:
    devices = Counter(lake.ground_truth("identities.parquet")["person_id"].to_pylist())
    counts = Counter(devices.values())
    assert set(counts) <= {1, 2, 3, 4, 5}
    assert counts[1] > counts[2] > counts[3] > 0


def test_logins_and_emails_are_sent_by_the_devices_the_ground_truth_names(lake) -> None:
    truth = lake.ground_truth("identities.parquet").to_pylist()
    by_user = {row["user_id"]: row for row in truth}
    sent_login, sent_email = set(), set()
    for day in lake.lines:
        for record in lake.well_formed(day):
            row = by_user[record["user_id"]]
            if record["member_id"] is not None and record["member_id"] == row["member_id"]:
                sent_login.add(record["user_id"])
            if record["alt_ids"]:
                assert record["alt_ids"] == {"email_sha256": row["email_sha256"]}
                sent_email.add(record["user_id"])
    assert sent_login == {row["user_id"] for row in truth if row["logs_in"]}
    assert sent_email == {row["user_id"] for row in truth if row["carries_email"]}
    persons_with_login = {row["person_id"] for row in truth if row["member_id"]}
    assert 0.25 < len(persons_with_login) / len({row["person_id"] for row in truth}) < 0.45


def test_logged_in_devices_send_member_id_on_some_events_only(lake) -> None:
    logs_in = {
        row["user_id"]
        for row in lake.ground_truth("identities.parquet").to_pylist()
        if row["logs_in"]
    }
    with_login = without_login = 0
    for record in lake.well_formed("2026-11-01"):
        if record["user_id"] in logs_in:
            if record["member_id"] is None:
                without_login += 1
            else:
                with_login += 1
    assert with_login > 0 and without_login > 0


def test_noise_file_lists_shared_logins_on_many_devices_and_blocklist_values(lake) -> None:
    noise = {row["value"]: row for row in lake.ground_truth("noise.parquet").to_pylist()}
    assert set(noise) == set(SHARED_LOGINS) | set(BLOCKLIST_MEMBER_IDS)
    for login in SHARED_LOGINS:
        assert noise[login]["kind"] == "shared_login" and noise[login]["devices"] > 100
    for value in BLOCKLIST_MEMBER_IDS:
        assert noise[value]["kind"] == "blocklist" and noise[value]["events"] > 0

    devices_per_value, persons_per_value = defaultdict(set), defaultdict(set)
    person_of = {
        row["user_id"]: row["person_id"]
        for row in lake.ground_truth("identities.parquet").to_pylist()
    }
    for record in lake.well_formed("2026-11-01"):
        if record["member_id"] in noise:
            devices_per_value[record["member_id"]].add(record["user_id"])
            persons_per_value[record["member_id"]].add(person_of[record["user_id"]])
    for login in SHARED_LOGINS:
        assert len(devices_per_value[login]) > 100
        assert len(persons_per_value[login]) > 100
    assert set(BLOCKLIST_MEMBER_IDS) <= set(devices_per_value)


def test_devices_of_a_person_share_a_household_prefix_that_others_sometimes_share(lake) -> None:
    person_of = {
        row["user_id"]: row["person_id"]
        for row in lake.ground_truth("identities.parquet").to_pylist()
    }
    prefixes = defaultdict(Counter)  # person -> /24 -> events
    for day in lake.lines:
        for record in lake.well_formed(day):
            prefix = record["ip"].rsplit(".", 1)[0]
            prefixes[person_of[record["user_id"]]][prefix] += 1
    households = defaultdict(set)
    for person, counter in prefixes.items():
        households[counter.most_common(1)[0][0]].add(person)
    shared = [persons for persons in households.values() if len(persons) > 1]
    assert shared, "unrelated persons should sometimes share an address block"
    multi = [p for p, counter in prefixes.items() if len(counter) > 1]
    assert multi, "mobile events behind carrier NAT move devices off the household block"
