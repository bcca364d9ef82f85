"""``checkAndPut`` (Thrift-1; happybase reaches it as ``connection.client.checkAndPut``): the
compare-and-set that saved audiences' unique names and segment ids rest on, compared with Apache
HBase case by case."""

from __future__ import annotations

from differential import Differential
from Hbase_thrift import Mutation

FAMILIES = {"cf": {"max_versions": 3}, "other": {"max_versions": 1}}


def check_and_put(name: bytes, column: bytes, expected: bytes | None, put: Mutation):
    return lambda c: c.client.checkAndPut(name, b"r", column, expected, put, {})


def written(pair: Differential, name: bytes) -> None:
    """The row, every version with its timestamp, alike on both servers."""
    pair.same(lambda c: c.table(name).row(b"r", include_timestamp=True))
    pair.same(lambda c: c.table(name).cells(b"r", b"cf:a", versions=3, include_timestamp=True))


def test_a_matching_value_puts_and_a_different_one_does_not(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"v"}, timestamp=5))
    put = Mutation(column=b"other:b", value=b"written")
    assert pair.same(check_and_put(name, b"cf:a", b"other", put)) == ("ok", False)
    assert pair.same(check_and_put(name, b"cf:a", b"v", put)) == ("ok", True)
    written(pair, name)


def test_no_expected_value_means_the_cell_must_be_absent(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    first = Mutation(column=b"cf:a", value=b"first")
    assert pair.same(check_and_put(name, b"cf:a", None, first)) == ("ok", True)
    second = Mutation(column=b"cf:a", value=b"second")
    assert pair.same(check_and_put(name, b"cf:a", None, second)) == ("ok", False)
    written(pair, name)


def test_an_empty_expected_value_matches_an_absent_or_empty_cell(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    claim = Mutation(column=b"cf:a", value=b"")
    assert pair.same(check_and_put(name, b"cf:a", b"", claim)) == ("ok", True)  # absent
    taken = Mutation(column=b"cf:a", value=b"owner")
    assert pair.same(check_and_put(name, b"cf:a", b"", taken)) == ("ok", True)  # empty
    assert pair.same(check_and_put(name, b"cf:a", b"", claim)) == ("ok", False)  # "owner"
    written(pair, name)


def test_the_newest_version_is_compared(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"old"}, timestamp=1))
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"new"}, timestamp=2))
    put = Mutation(column=b"cf:a", value=b"newest")
    assert pair.same(check_and_put(name, b"cf:a", b"old", put)) == ("ok", False)
    assert pair.same(check_and_put(name, b"cf:a", b"new", put)) == ("ok", True)
    written(pair, name)


def test_a_deleted_cell_is_absent(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"v"}))
    pair.same(lambda c: c.table(name).delete(b"r", columns=[b"cf:a"]))
    put = Mutation(column=b"cf:a", value=b"again")
    assert pair.same(check_and_put(name, b"cf:a", b"v", put)) == ("ok", False)
    assert pair.same(check_and_put(name, b"cf:a", None, put)) == ("ok", True)
    pair.same(lambda c: c.table(name).row(b"r"))


def test_a_put_without_a_value_writes_an_empty_cell(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    assert pair.same(check_and_put(name, b"cf:a", None, Mutation(column=b"cf:a"))) == ("ok", True)
    pair.same(lambda c: c.table(name).row(b"r"))


def test_a_mutation_marked_as_a_delete_is_put_all_the_same(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    delete = Mutation(column=b"cf:a", value=b"v", isDelete=True)
    assert pair.same(check_and_put(name, b"cf:a", None, delete)) == ("ok", True)
    pair.same(lambda c: c.table(name).row(b"r"))


def test_bad_columns_and_tables_fail_alike(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    put = Mutation(column=b"cf:a", value=b"v")
    pair.same(check_and_put(name, b"nope:a", None, put), "a missing family in the check")
    pair.same(check_and_put(name, b"cf:a", None, Mutation(column=b"nope:a", value=b"v")))
    pair.same(check_and_put(name, b"cf", None, put), "a check column without a qualifier")
    pair.same(check_and_put(name, b"cf:a", None, Mutation(column=b"cf", value=b"v")))
    pair.same(check_and_put(b"no_such_table_here", b"cf:a", None, put))
    pair.same(lambda c: c.table(name).row(b"r"))
