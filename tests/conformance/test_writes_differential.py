"""Writes whose outcome HBase defines exactly: the gateway must give the same answers."""

from __future__ import annotations

from differential import Differential

FAMILIES = {"cf": {"max_versions": 3}, "other": {"max_versions": 1}}


def test_a_put_at_the_timestamp_of_an_existing_cell_replaces_its_value(
    pair: Differential,
) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"1"}, timestamp=5))
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"2"}, timestamp=5))
    pair.same(lambda c: c.table(name).cells(b"r", b"cf:a", versions=3, include_timestamp=True))


def test_several_writes_of_one_cell_in_one_batch_keep_the_last(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)

    def write(connection) -> None:
        with connection.table(name).batch() as batch:
            for value in (b"1", b"2", b"3"):
                batch.put(b"r", {b"cf:a": value})

    pair.same(write)
    pair.same(lambda c: c.table(name).cells(b"r", b"cf:a", versions=3))


def test_counter_set_right_after_an_increment_replaces_the_count(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).counter_inc(b"r", b"cf:n", 10))
    pair.same(lambda c: c.table(name).counter_set(b"r", b"cf:n", 0))
    assert pair.same(lambda c: c.table(name).counter_inc(b"r", b"cf:n")) == ("ok", 1)


def test_an_older_put_after_a_newer_one_is_kept_as_an_older_version(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"new"}, timestamp=20))
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"old"}, timestamp=10))
    pair.same(lambda c: c.table(name).row(b"r", include_timestamp=True))
    pair.same(lambda c: c.table(name).cells(b"r", b"cf:a", versions=5, include_timestamp=True))


def test_a_delete_with_a_timestamp_masks_later_puts_of_older_timestamps(
    pair: Differential,
) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"v"}, timestamp=10))
    pair.same(lambda c: c.table(name).delete(b"r", columns=[b"cf:a"], timestamp=15))
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"masked"}, timestamp=12))
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"kept"}, timestamp=16))
    pair.same(lambda c: c.table(name).cells(b"r", b"cf:a", versions=5, include_timestamp=True))


def test_writing_to_a_missing_table_fails_alike(pair: Differential) -> None:
    pair.same(lambda c: c.table(b"no_such_table_here").put(b"r", {b"cf:a": b"1"}))
    pair.same(lambda c: c.table(b"no_such_table_here").row(b"r"))


def test_writing_to_a_missing_family_fails_alike(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"nope:a": b"1"}))
    pair.same(lambda c: c.table(name).row(b"r"))


def test_a_bad_filter_string_fails_alike(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"1"}))
    pair.same(lambda c: c.table(name).scan(filter=b"NoSuchFilter('x')"))
    pair.same(lambda c: c.table(name).scan(filter=b"ValueFilter(=, 'binary:1'"))
