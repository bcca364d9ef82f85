"""Specification of the HBase filter language as implemented by the gateway.

Expected results follow HBase 2.x (ParseFilter, the filter classes, FilterList
and the region scanner's use of them).  Rows are written as
``"family:qualifier=value@timestamp"`` strings; ``@1`` is the default.
"""

from __future__ import annotations

import pytest

from profile_store.hbase_gateway import filters as fl
from profile_store.hbase_gateway.filter_language import FilterSyntaxError, parse_filter
from profile_store.hbase_gateway.row_filter import Cell

# ----------------------------------------------------------------- helpers


def cells(*specs: str) -> list[Cell]:
    out = []
    for spec in specs:
        column, _, rest = spec.partition("=")
        value, _, ts = rest.partition("@")
        family, _, qualifier = column.partition(":")
        out.append(Cell(family.encode(), qualifier.encode(), int(ts or 1), value.encode()))
    return sorted(out, key=lambda c: (c.family, c.qualifier, -c.timestamp))


def fmt(cell: Cell) -> str:
    value = cell.value.decode("latin-1")
    text = f"{cell.family.decode()}:{cell.qualifier.decode()}={value}"
    return text if cell.timestamp == 1 else f"{text}@{cell.timestamp}"


def scan(text: str, table: dict[str, list[Cell]], max_versions: int | None = None) -> dict:
    """Drive a filter over rows in key order the way the gateway does."""
    f = parse_filter(text)
    f.reset()
    out = {}
    for key in sorted(table):
        if f.filter_all_remaining():
            break
        kept = f.filter_row(key.encode(), table[key], max_versions=max_versions)
        if kept is not None:
            out[key] = [fmt(c) for c in kept]
    return out


def keys(text: str, table: dict[str, list[Cell]]) -> list[str]:
    return list(scan(text, table))


def one_row(text: str, *specs: str, max_versions: int | None = None) -> list[str] | None:
    return scan(text, {"r": cells(*specs)}, max_versions).get("r")


def error(text: str | bytes) -> FilterSyntaxError:
    with pytest.raises(FilterSyntaxError) as info:
        parse_filter(text)
    return info.value


ABC = {k: cells("cf:q=v") for k in ("a", "b", "c")}


# ----------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("KeyOnlyFilter()", fl.KeyOnlyFilter),
        ("FirstKeyOnlyFilter()", fl.FirstKeyOnlyFilter),
        ("PrefixFilter('r')", fl.PrefixFilter),
        ("ColumnPrefixFilter('q')", fl.ColumnPrefixFilter),
        ("MultipleColumnPrefixFilter('a','b')", fl.MultipleColumnPrefixFilter),
        ("ColumnCountGetFilter(2)", fl.ColumnCountGetFilter),
        ("PageFilter(10)", fl.PageFilter),
        ("ColumnPaginationFilter(3, 1)", fl.ColumnPaginationFilter),
        ("InclusiveStopFilter('z')", fl.InclusiveStopFilter),
        ("TimestampsFilter(1, 2, 3)", fl.TimestampsFilter),
        ("RowFilter(<, 'binary:b')", fl.RowKeyFilter),
        ("FamilyFilter(=, 'binary:cf')", fl.FamilyFilter),
        ("QualifierFilter(>=, 'binary:q')", fl.QualifierFilter),
        ("ValueFilter(!=, 'binary:v')", fl.ValueFilter),
        ("ColumnRangeFilter('a', true, 'c', false)", fl.ColumnRangeFilter),
        ("SingleColumnValueFilter('f', 'q', =, 'binary:v')", fl.SingleColumnValueFilter),
        (
            "SingleColumnValueExcludeFilter('f', 'q', =, 'binary:v')",
            fl.SingleColumnValueExcludeFilter,
        ),
        ("DependentColumnFilter('f', 'q')", fl.DependentColumnFilter),
        ("ColumnValueFilter('f', 'q', =, 'binary:v')", fl.ColumnValueFilter),
    ],
)
def test_every_standard_filter_name_parses_to_its_class(text, cls):
    assert type(parse_filter(text)) is cls


def test_doubled_single_quote_inside_a_string_is_one_quote():
    assert parse_filter("PrefixFilter('it''s')").prefix == b"it's"


def test_quoted_string_may_hold_parentheses_commas_and_keywords():
    assert parse_filter("PrefixFilter(') AND (x, y')").prefix == b") AND (x, y"


def test_bytes_filter_string_keeps_arbitrary_bytes_in_arguments():
    assert parse_filter(b"PrefixFilter('\xff\x00a')").prefix == b"\xff\x00a"


def test_str_filter_string_arguments_are_utf8_encoded():
    assert parse_filter("PrefixFilter('é')").prefix == "é".encode()


def test_whitespace_around_tokens_is_ignored():
    f = parse_filter(" \tColumnPaginationFilter ( 3 ,\t1 )  ")
    assert (f.limit, f.offset) == (3, 1)


def test_and_binds_tighter_than_or():
    f = parse_filter("PrefixFilter('a') OR PrefixFilter('b') AND PrefixFilter('c')")
    assert isinstance(f, fl.FilterListWithOR)
    first, second = f.filters
    assert first.prefix == b"a"
    assert isinstance(second, fl.FilterListWithAND)
    assert [g.prefix for g in second.filters] == [b"b", b"c"]


def test_skip_and_while_bind_tighter_than_and():
    f = parse_filter("SKIP ValueFilter(=,'binary:x') AND WHILE PrefixFilter('a')")
    assert isinstance(f, fl.FilterListWithAND)
    assert [type(g) for g in f.filters] == [fl.SkipFilter, fl.WhileMatchFilter]
    assert isinstance(f.filters[0].filter, fl.ValueFilter)


def test_parentheses_override_precedence():
    f = parse_filter("(PrefixFilter('a') OR PrefixFilter('b')) AND PrefixFilter('c')")
    assert isinstance(f, fl.FilterListWithAND)
    assert isinstance(f.filters[0], fl.FilterListWithOR)


def test_skip_applies_to_a_parenthesised_expression():
    f = parse_filter("SKIP (ValueFilter(=,'binary:x') OR ValueFilter(=,'binary:y'))")
    assert isinstance(f.filter, fl.FilterListWithOR)


def test_unary_operators_nest():
    f = parse_filter("WHILE SKIP KeyOnlyFilter()")
    assert isinstance(f, fl.WhileMatchFilter)
    assert isinstance(f.filter, fl.SkipFilter)


def test_a_chain_of_the_same_operator_is_one_flat_list():
    f = parse_filter("PrefixFilter('a') OR PrefixFilter('b') OR PrefixFilter('c')")
    assert [g.prefix for g in f.filters] == [b"a", b"b", b"c"]


def test_operators_may_touch_parentheses():
    f = parse_filter("(PrefixFilter('a'))OR(PrefixFilter('b'))")
    assert isinstance(f, fl.FilterListWithOR)


def test_key_only_filter_takes_an_optional_case_insensitive_boolean():
    assert parse_filter("KeyOnlyFilter()").len_as_val is False
    assert parse_filter("KeyOnlyFilter(TRUE)").len_as_val is True


def test_single_column_value_filter_optional_flags():
    short = parse_filter("SingleColumnValueFilter('f','q',=,'binary:v')")
    assert (short.filter_if_missing, short.latest_version_only) == (False, True)
    full = parse_filter("SingleColumnValueFilter('f','q',=,'binary:v',true,false)")
    assert (full.family, full.qualifier) == (b"f", b"q")
    assert (full.filter_if_missing, full.latest_version_only) == (True, False)


def test_dependent_column_filter_argument_forms():
    two = parse_filter("DependentColumnFilter('f','q')")
    assert (two.drop_dependent_column, two.comparator) == (False, None)
    three = parse_filter("DependentColumnFilter('f','q',true)")
    assert three.drop_dependent_column is True
    five = parse_filter("DependentColumnFilter('f','q',false,>,'binary:5')")
    assert (five.comparator.kind, five.comparator.op, five.comparator.value) == (
        "binary",
        ">",
        b"5",
    )


def test_column_range_filter_empty_bound_means_unbounded():
    f = parse_filter("ColumnRangeFilter('', true, 'c', false)")
    assert (f.min_column, f.min_inclusive, f.max_column, f.max_inclusive) == (
        None,
        True,
        b"c",
        False,
    )


def test_timestamps_filter_takes_any_number_of_timestamps():
    assert parse_filter("TimestampsFilter(3,1,2)").timestamps == [1, 2, 3]
    assert parse_filter("TimestampsFilter()").timestamps == []


def test_multiple_column_prefix_filter_takes_any_number_of_prefixes():
    assert parse_filter("MultipleColumnPrefixFilter('b','a')").prefixes == [b"a", b"b"]


@pytest.mark.parametrize(
    ("argument", "kind", "value"),
    [
        ("binary:abc", "binary", b"abc"),
        ("binaryprefix:ab", "binaryprefix", b"ab"),
        ("regexstring:a.*:b", "regexstring", b"a.*:b"),
        ("substring:AbC", "substring", b"AbC"),
        ("binary:", "binary", b""),
    ],
)
def test_comparator_type_and_value_split_at_the_first_colon(argument, kind, value):
    comparator = parse_filter(f"ValueFilter(=, '{argument}')").comparator
    assert (comparator.kind, comparator.value) == (kind, value)


@pytest.mark.parametrize("op", ["<", "<=", "=", "!=", ">=", ">"])
def test_every_compare_operator_parses(op):
    assert parse_filter(f"RowFilter({op}, 'binary:b')").comparator.op == op


# ------------------------------------------------------------ parse errors


def test_syntax_error_is_a_value_error_naming_position_and_problem():
    exc = error("FooFilter()")
    assert isinstance(exc, ValueError)
    assert str(exc) == "invalid filter string at position 0: unknown filter 'FooFilter'"


def test_empty_filter_string_is_rejected():
    assert error("   ").problem == "empty filter string"


def test_unclosed_parenthesis_points_at_the_open_parenthesis():
    exc = error("(PrefixFilter('a')")
    assert exc.position == 0
    assert "never closed" in exc.problem


def test_extra_closing_parenthesis_is_reported_where_it_is():
    exc = error("PrefixFilter('a'))")
    assert exc.position == 17
    assert "unbalanced parenthesis" in exc.problem


def test_unclosed_argument_list_points_at_its_parenthesis():
    exc = error("PrefixFilter('a'")
    assert exc.position == 12
    assert "argument list of PrefixFilter is never closed" in exc.problem


def test_unknown_filter_name_is_reported_at_the_name():
    exc = error("PrefixFilter('a') AND FooFilter('b')")
    assert (exc.position, exc.problem) == (22, "unknown filter 'FooFilter'")


def test_wrong_argument_count_names_the_filter_and_counts():
    exc = error("PrefixFilter('a', 'b')")
    assert (exc.position, exc.problem) == (0, "PrefixFilter takes 1 argument, got 2")


def test_wrong_argument_count_lists_every_accepted_count():
    assert (
        "takes 4 or 6 arguments, got 5"
        in error("SingleColumnValueFilter('f','q',=,'binary:v',true)").problem
    )


def test_bad_compare_operator_is_reported_at_the_operator():
    exc = error("RowFilter(=<, 'binary:a')")
    assert exc.position == 10
    assert "expected a compare operator" in exc.problem


def test_quoted_compare_operator_is_rejected():
    assert "expected a compare operator" in error("RowFilter('=', 'binary:a')").problem


def test_unknown_comparator_type_is_rejected():
    exc = error("RowFilter(=, 'long:5')")
    assert exc.position == 13
    assert "unknown comparator type 'long'" in exc.problem


def test_comparator_without_type_is_rejected():
    assert "expected a comparator type:value" in error("ValueFilter(=, 'abc')").problem


def test_unterminated_string_points_at_its_opening_quote():
    exc = error("PrefixFilter('abc)")
    assert (exc.position, exc.problem) == (13, "unterminated quoted string")


@pytest.mark.parametrize("comparator", ["regexstring:a", "substring:a"])
def test_text_comparators_only_allow_equal_and_not_equal(comparator):
    exc = error(f"ValueFilter(<, '{comparator}')")
    assert "can only be used with = and !=" in exc.problem


def test_single_column_value_filter_rejects_ordering_with_regex():
    assert "can only be used" in error("SingleColumnValueFilter('f','q',>,'regexstring:a')").problem


def test_dependent_column_filter_accepts_any_operator_with_regex_like_hbase():
    f = parse_filter("DependentColumnFilter('f','q',false,<,'regexstring:a')")
    assert f.comparator.op == "<"


def test_invalid_regular_expression_is_rejected_at_parse_time():
    exc = error("ValueFilter(=, 'regexstring:(ab')")
    assert exc.position == 15
    assert "invalid regular expression" in exc.problem


def test_unquoted_string_argument_is_rejected():
    exc = error("PrefixFilter(abc)")
    assert exc.position == 13
    assert "expected a quoted string" in exc.problem


def test_quoted_number_is_rejected():
    assert "expected an integer" in error("PageFilter('5')").problem


def test_negative_count_is_rejected():
    assert "must not be negative" in error("PageFilter(-1)").problem


def test_int_argument_out_of_range_is_rejected():
    assert "out of range" in error("ColumnCountGetFilter(2147483648)").problem


def test_bad_boolean_is_rejected():
    assert "expected true or false" in error("KeyOnlyFilter(yes)").problem


def test_two_filters_without_operator_are_rejected():
    exc = error("PrefixFilter('a') PrefixFilter('b')")
    assert exc.position == 18
    assert "expected AND or OR" in exc.problem


def test_operator_without_right_operand_is_rejected():
    exc = error("PrefixFilter('a') AND ")
    assert (exc.position, exc.problem) == (22, "expected a filter, found end of string")


def test_operator_without_left_operand_is_rejected():
    assert error("OR PrefixFilter('a')").problem == "OR needs a filter on its left"


def test_lowercase_keywords_are_not_operators():
    assert "expected AND or OR" in error("PrefixFilter('a') and PrefixFilter('b')").problem


def test_arguments_must_be_separated_by_commas():
    exc = error("ColumnPaginationFilter(1 2)")
    assert exc.position == 25
    assert "expected ',' or ')'" in exc.problem


def test_empty_argument_is_rejected():
    assert "expected an argument" in error("TimestampsFilter(1,,2)").problem


def test_filter_name_needs_an_argument_list():
    assert error("KeyOnlyFilter").problem == "expected '(' after KeyOnlyFilter"


def test_duplicate_column_prefixes_are_rejected():
    assert "prefixes must be distinct" in error("MultipleColumnPrefixFilter('a','a')").problem


def test_positions_are_character_offsets():
    assert error("PrefixFilter('ééé') AND Nope()").position == 24


# ------------------------------------------------------------- comparators


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("<", ["a"]),
        ("<=", ["a", "b"]),
        ("=", ["b"]),
        ("!=", ["a", "c"]),
        (">=", ["b", "c"]),
        (">", ["c"]),
    ],
)
def test_compare_op_reads_as_cell_op_value(op, expected):
    assert keys(f"RowFilter({op}, 'binary:b')", ABC) == expected


def test_binary_comparison_is_unsigned_lexicographic():
    values = {"a": b"\x7f", "b": b"\x80", "c": b"\x7f\x00"}
    table = {k: [Cell(b"cf", b"q", 1, v)] for k, v in values.items()}
    assert keys("ValueFilter(>, 'binary:\x7f')", table) == ["b", "c"]


def test_binaryprefix_compares_only_the_prefix_length():
    table = {k: cells("cf:q=v") for k in ("a", "ab", "abc", "abz", "ac", "b")}
    assert keys("RowFilter(=, 'binaryprefix:ab')", table) == ["ab", "abc", "abz"]
    assert keys("RowFilter(>, 'binaryprefix:ab')", table) == ["ac", "b"]


def test_regexstring_searches_anywhere_with_dot_matching_newlines():
    assert one_row("ValueFilter(=, 'regexstring:b.c')", "cf:q=xxb\ncyy") == ["cf:q=xxb\ncyy"]


def test_regexstring_not_equal_keeps_non_matching_cells():
    assert one_row("ValueFilter(!=, 'regexstring:^a')", "cf:q1=abc", "cf:q2=bca") == ["cf:q2=bca"]


def test_substring_is_case_insensitive():
    assert one_row("ValueFilter(=, 'substring:ABC')", "cf:q1=xaBcx", "cf:q2=ab-c") == [
        "cf:q1=xaBcx"
    ]


def test_substring_not_equal_keeps_cells_without_it():
    assert one_row("QualifierFilter(!=, 'substring:x')", "cf:ax=1", "cf:b=2") == ["cf:b=2"]


# ---------------------------------------------------------- single filters


def test_key_only_filter_strips_values():
    assert one_row("KeyOnlyFilter()", "cf:a=hello", "cf:b=x") == ["cf:a=", "cf:b="]


def test_key_only_filter_with_len_as_val_returns_value_length_as_int32():
    f = parse_filter("KeyOnlyFilter(true)")
    (cell,) = f.filter_row(b"r", cells("cf:a=hello"))
    assert cell.value == (5).to_bytes(4, "big")


def test_first_key_only_filter_keeps_only_the_first_cell_across_families():
    assert one_row("FirstKeyOnlyFilter()", "a:x=1@2", "a:x=0@1", "a:y=2", "b:z=3") == ["a:x=1@2"]


def test_prefix_filter_keeps_rows_starting_with_the_prefix():
    table = {k: cells("cf:q=v") for k in ("a", "ba", "bb", "c")}
    assert keys("PrefixFilter('b')", table) == ["ba", "bb"]


def test_prefix_filter_ends_the_scan_after_the_prefix_range():
    f = parse_filter("PrefixFilter('b')")
    assert f.filter_row(b"bz", cells("cf:q=v")) is not None
    assert not f.filter_all_remaining()
    assert f.filter_row(b"c", cells("cf:q=v")) is None
    assert f.filter_all_remaining()


def test_prefix_filter_rejects_rows_shorter_than_the_prefix():
    assert keys("PrefixFilter('ab')", {"a": cells("cf:q=v"), "ab": cells("cf:q=v")}) == ["ab"]


def test_column_prefix_filter_keeps_matching_qualifiers_in_every_family():
    assert one_row("ColumnPrefixFilter('b')", "f1:a=1", "f1:ba=2", "f1:c=3", "f2:bb=4") == [
        "f1:ba=2",
        "f2:bb=4",
    ]


def test_multiple_column_prefix_filter_keeps_qualifiers_with_any_prefix():
    row = ("cf:a1=1", "cf:b=2", "cf:c1=3", "cf:d=4")
    assert one_row("MultipleColumnPrefixFilter('c', 'a')", *row) == ["cf:a1=1", "cf:c1=3"]


def test_multiple_column_prefix_filter_only_tests_the_largest_lower_prefix_like_hbase():
    # HBase looks only at the largest prefix <= the qualifier: 'ac' is checked against 'ab'.
    assert one_row("MultipleColumnPrefixFilter('a', 'ab')", "cf:ab1=1", "cf:ac=2") == ["cf:ab1=1"]


def test_multiple_column_prefix_filter_without_prefixes_keeps_everything():
    assert one_row("MultipleColumnPrefixFilter()", "cf:a=1", "cf:b=2") == ["cf:a=1", "cf:b=2"]


def test_column_count_get_filter_keeps_the_newest_version_of_the_first_n_columns():
    assert one_row("ColumnCountGetFilter(2)", "cf:a=1@2", "cf:a=0@1", "cf:b=2", "cf:c=3") == [
        "cf:a=1@2",
        "cf:b=2",
    ]


def test_column_count_get_filter_ends_a_one_family_scan_at_a_row_with_more_than_n_columns():
    # HBase: filterAllRemaining() is true when the family's store peeks its next cell; the
    # matcher answers DONE_SCAN and that family's store scanner closes.
    table = {
        "a": cells("cf:x=1"),
        "b": cells("cf:x=1", "cf:y=2"),
        "c": cells("cf:x=1"),
    }
    assert scan("ColumnCountGetFilter(1)", table) == {"a": ["cf:x=1"], "b": ["cf:x=1"]}


def test_column_count_get_filter_closes_only_the_families_that_saw_the_limit_passed():
    # Checked against Apache HBase (tests/conformance): the excess column in the last family
    # closes that family's store; the scan goes on with the other family.
    table = {
        "a": cells("cf:x=1", "meta:y=2"),
        "b": cells("cf:x=1", "meta:y=2"),
    }
    f = parse_filter("ColumnCountGetFilter(1)")
    kept = {
        key: [
            f"{c.family.decode()}:{c.qualifier.decode()}"
            for c in f.filter_row(key.encode(), row, families=[b"cf", b"meta"]) or []
        ]
        for key, row in table.items()
    }
    assert kept == {"a": ["cf:x"], "b": ["cf:x"]}
    assert not f.filter_all_remaining()


def test_page_filter_returns_exactly_n_rows_then_ends_the_scan():
    table = {k: cells("cf:q=v") for k in "abcde"}
    f = parse_filter("PageFilter(2)")
    assert f.filter_row(b"a", table["a"]) is not None
    assert not f.filter_all_remaining()
    assert f.filter_row(b"b", table["b"]) is not None
    assert f.filter_all_remaining()
    assert keys("PageFilter(2)", table) == ["a", "b"]


def test_page_filter_counts_only_rows_that_reach_it():
    table = {k: cells("cf:a=1", f"cf:q={v}") for k, v in zip("abcde", "xyxyx", strict=True)}
    match = "SingleColumnValueFilter('cf','q',=,'binary:x')"
    assert keys(f"{match} AND PageFilter(2)", table) == ["a", "c"]


def test_page_filter_first_in_an_and_list_also_counts_rows_rejected_later():
    # FilterListWithAND.filterRow() stops at the first sub-filter that rejects; row b
    # keeps cf:a through the cell phase, so PageFilter counts it before SCVF drops it.
    table = {k: cells("cf:a=1", f"cf:q={v}") for k, v in zip("abcde", "xyxyx", strict=True)}
    match = "SingleColumnValueFilter('cf','q',=,'binary:x')"
    assert keys(f"PageFilter(2) AND {match}", table) == ["a"]


def test_page_filter_zero_returns_nothing():
    assert keys("PageFilter(0)", ABC) == []


def test_column_pagination_filter_pages_by_column_newest_version_only():
    row = ("cf:a=1", "cf:b=2@3", "cf:b=1@2", "cf:c=3", "cf:d=4")
    assert one_row("ColumnPaginationFilter(2, 1)", *row) == ["cf:b=2@3", "cf:c=3"]


def test_column_pagination_filter_counts_columns_across_families():
    assert one_row("ColumnPaginationFilter(2, 1)", "f1:a=1", "f1:b=2", "f2:a=3", "f2:b=4") == [
        "f1:b=2",
        "f2:a=3",
    ]


def test_inclusive_stop_filter_includes_the_stop_row_and_ends_the_scan():
    table = {k: cells("cf:q=v") for k in ("a", "b", "ba", "c")}
    f = parse_filter("InclusiveStopFilter('b')")
    assert [k for k in sorted(table) if f.filter_row(k.encode(), table[k])] == ["a", "b"]
    assert f.filter_all_remaining()


def test_timestamps_filter_keeps_only_listed_versions():
    row = ("cf:a=3@30", "cf:a=2@20", "cf:a=1@10", "cf:b=5@20")
    assert one_row("TimestampsFilter(10, 20)", *row) == ["cf:a=2@20", "cf:a=1@10", "cf:b=5@20"]


def test_timestamps_filter_without_timestamps_keeps_nothing():
    assert one_row("TimestampsFilter()", "cf:a=1") is None


def test_family_filter_keeps_cells_of_matching_families():
    assert one_row("FamilyFilter(!=, 'binary:f1')", "f1:a=1", "f2:a=2", "f3:b=3") == [
        "f2:a=2",
        "f3:b=3",
    ]


def test_qualifier_filter_keeps_matching_qualifiers():
    assert one_row("QualifierFilter(>=, 'binary:b')", "cf:a=1", "cf:b=2", "cf:c=3") == [
        "cf:b=2",
        "cf:c=3",
    ]


def test_value_filter_tests_every_version():
    row = ("cf:a=new@2", "cf:a=old@1", "cf:b=old@1")
    assert one_row("ValueFilter(=, 'binary:old')", *row) == ["cf:a=old", "cf:b=old"]


def test_row_filter_sees_the_row_key():
    assert keys("RowFilter(=, 'regexstring:^[ac]$')", ABC) == ["a", "c"]


def test_column_range_filter_respects_inclusive_and_exclusive_bounds():
    row = ("cf:a=1", "cf:b=2", "cf:c=3", "cf:d=4")
    assert one_row("ColumnRangeFilter('a', false, 'c', true)", *row) == ["cf:b=2", "cf:c=3"]
    assert one_row("ColumnRangeFilter('a', true, 'c', false)", *row) == ["cf:a=1", "cf:b=2"]


def test_column_range_filter_with_empty_bounds_is_unbounded():
    row = ("cf:a=1", "cf:b=2", "cf:c=3")
    assert one_row("ColumnRangeFilter('', true, 'b', false)", *row) == ["cf:a=1"]
    assert one_row("ColumnRangeFilter('b', true, '', false)", *row) == ["cf:b=2", "cf:c=3"]


def test_column_range_filter_applies_per_family():
    assert one_row("ColumnRangeFilter('b', true, 'c', false)", "f1:a=1", "f1:b=2", "f2:b=3") == [
        "f1:b=2",
        "f2:b=3",
    ]


SCVF = "SingleColumnValueFilter('cf', 'status', =, 'binary:on'{})"


def test_single_column_value_filter_returns_the_whole_row_when_the_value_matches():
    assert one_row(SCVF.format(""), "cf:a=1", "cf:status=on", "cf:z=2") == [
        "cf:a=1",
        "cf:status=on",
        "cf:z=2",
    ]


def test_single_column_value_filter_drops_the_row_when_the_value_differs():
    assert one_row(SCVF.format(""), "cf:a=1", "cf:status=off") is None


def test_single_column_value_filter_passes_rows_lacking_the_column():
    assert one_row(SCVF.format(""), "cf:a=1") == ["cf:a=1"]


def test_single_column_value_filter_with_filter_if_missing_drops_rows_lacking_the_column():
    assert one_row(SCVF.format(", true, true"), "cf:a=1") is None


def test_single_column_value_filter_checks_only_the_latest_version_by_default():
    assert one_row(SCVF.format(""), "cf:status=off@2", "cf:status=on@1") is None


def test_single_column_value_filter_can_check_every_version():
    assert one_row(SCVF.format(", false, false"), "cf:status=off@2", "cf:status=on@1") == [
        "cf:status=off@2",
        "cf:status=on",
    ]


def test_single_column_value_exclude_filter_omits_the_tested_column():
    row = ("cf:a=1", "cf:status=on", "cf:z=2")
    text = "SingleColumnValueExcludeFilter('cf', 'status', =, 'binary:on')"
    assert one_row(text, *row) == ["cf:a=1", "cf:z=2"]


def test_dependent_column_filter_keeps_cells_with_the_reference_timestamps():
    row = ("cf:a=1@1", "cf:a=2@2", "cf:b=3@3", "cf:ref=x@2")
    assert one_row("DependentColumnFilter('cf', 'ref')", *row) == ["cf:a=2@2", "cf:ref=x@2"]


def test_dependent_column_filter_can_drop_the_reference_column():
    row = ("cf:a=2@2", "cf:ref=x@2")
    assert one_row("DependentColumnFilter('cf', 'ref', true)", *row) == ["cf:a=2@2"]


def test_dependent_column_filter_only_uses_reference_cells_passing_the_comparison():
    row = ("cf:a=1@1", "cf:a=2@2", "cf:ref=yes@2", "cf:ref=no@1")
    text = "DependentColumnFilter('cf', 'ref', false, =, 'binary:yes')"
    assert one_row(text, *row) == ["cf:a=2@2", "cf:ref=yes@2"]


def test_column_value_filter_returns_only_matching_cells_of_the_column():
    row = ("cf:a=on", "cf:s=on", "cf:z=on")
    assert one_row("ColumnValueFilter('cf', 's', =, 'binary:on')", *row) == ["cf:s=on"]


# ------------------------------------------------------- wrappers and lists


def test_skip_drops_the_whole_row_when_any_cell_is_excluded():
    table = {"a": cells("cf:x=0", "cf:y=1"), "b": cells("cf:x=1", "cf:y=1")}
    assert scan("SKIP ValueFilter(!=, 'binary:0')", table) == {"b": ["cf:x=1", "cf:y=1"]}


def test_skip_hides_the_row_key_from_the_wrapped_filter_like_hbase():
    # SkipFilter.filterRowKey() returns false without delegating, so PrefixFilter
    # keeps its reset state and excludes every cell.
    assert keys("SKIP PrefixFilter('a')", ABC) == []


def test_while_ends_the_scan_at_the_first_rejected_row():
    table = {k: cells("cf:q=v") for k in "abcd"}
    f = parse_filter("WHILE RowFilter(<, 'binary:c')")
    results = [k for k in "abcd" if f.filter_row(k.encode(), table[k])]
    assert results == ["a", "b"]
    assert f.filter_all_remaining()


def test_while_ends_the_scan_inside_a_row_at_the_first_rejected_cell():
    table = {
        "a": cells("cf:p=x", "cf:q=x"),
        "b": cells("cf:p=x", "cf:q=y", "cf:r=x"),
        "c": cells("cf:p=x"),
    }
    assert scan("WHILE ValueFilter(=, 'binary:x')", table) == {
        "a": ["cf:p=x", "cf:q=x"],
        "b": ["cf:p=x"],
    }


def test_and_keeps_cells_passing_every_filter():
    row = ("cf:a=x", "cf:b=x", "cf:c=y")
    text = "QualifierFilter(>=, 'binary:b') AND ValueFilter(=, 'binary:x')"
    assert one_row(text, *row) == ["cf:b=x"]


def test_or_keeps_cells_passing_any_filter():
    row = ("cf:a=x", "cf:b=y", "cf:c=z")
    text = "QualifierFilter(=, 'binary:a') OR ValueFilter(=, 'binary:z')"
    assert one_row(text, *row) == ["cf:a=x", "cf:c=z"]


def test_or_of_row_filters_keeps_rows_matching_either():
    assert keys("RowFilter(=, 'binary:a') OR RowFilter(=, 'binary:c')", ABC) == ["a", "c"]


def test_and_shows_later_filters_only_cells_earlier_ones_included():
    # As in HBase: the paginator counts only the cells that ValueFilter passed.
    row = ("cf:a=y", "cf:b=x", "cf:c=x")
    text = "ValueFilter(=, 'binary:x') AND ColumnPaginationFilter(1, 0)"
    assert one_row(text, *row) == ["cf:b=x"]


def test_or_does_not_show_a_filter_the_rest_of_a_column_it_skipped():
    # As in HBase: ColumnPaginationFilter said NEXT_COL for a@2, so it must not count a@1.
    row = ("cf:a=x@2", "cf:a=y@1", "cf:b=z", "cf:c=z")
    text = "ValueFilter(=, 'binary:y') OR ColumnPaginationFilter(1, 1)"
    assert one_row(text, *row) == ["cf:a=y", "cf:b=z"]


def test_key_only_transform_applies_inside_a_list():
    text = "KeyOnlyFilter() AND ValueFilter(=, 'binary:x')"
    assert one_row(text, "cf:a=x", "cf:b=y") == ["cf:a="]


def test_or_transforms_only_with_the_filters_that_included_the_cell():
    text = "(KeyOnlyFilter() AND QualifierFilter(=, 'binary:a')) OR ValueFilter(=, 'binary:y')"
    assert one_row(text, "cf:a=x", "cf:b=y") == ["cf:a=", "cf:b=y"]


def test_and_merge_table_matches_hbase_merge_rules():
    assert_merge_table(fl._AND_MERGE, _hbase_and_merge)


def test_or_merge_table_matches_hbase_merge_rules():
    assert_merge_table(fl._OR_MERGE, _hbase_or_merge)


IN, INC, INR, S, NC, NR, H = range(7)


def assert_merge_table(table, rule):
    for previous in range(7):
        for local in range(7):
            assert table[previous][local] == rule(previous, local), (previous, local)


def _hbase_and_merge(rc, local):
    """FilterListWithAND.mergeReturnCode, transcribed from its switch statement."""
    if rc == H or local == H:
        return H
    if local == IN:
        return rc
    if local == INC:
        return {IN: INC, INC: INC, INR: INR, S: NC, NC: NC, NR: NR}[rc]
    if local == INR:
        return INR if rc in (IN, INC, INR) else NR
    if local == S:
        return {IN: S, S: S, INC: NC, NC: NC, INR: NR, NR: NR}[rc]
    if local == NC:
        return NC if rc in (IN, INC, S, NC) else NR
    return NR


def _hbase_or_merge(rc, local):
    """FilterListWithOR.mergeReturnCode, transcribed from its switch statement."""
    if local == IN:
        return IN
    if local == INC:
        return IN if rc in (IN, S, H) else INC
    if local == INR:
        return {IN: IN, S: IN, H: IN, INC: INC, NC: INC, INR: INR, NR: INR}[rc]
    if local == S:
        return IN if rc in (IN, INC, INR) else S
    if local == NC:
        return {IN: IN, NC: NC, NR: NC, INC: INC, INR: INC, S: S, H: S}[rc]
    if local == NR:
        return {IN: IN, INC: INC, INR: INR, S: S, H: S, NC: NC, NR: NR}[rc]
    return {IN: IN, INC: IN, INR: IN, S: S, NC: S, NR: S, H: H}[rc]


# ------------------------------------------------------ scanner interaction


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SingleColumnValueFilter('f','q',=,'binary:v')", True),
        ("SingleColumnValueExcludeFilter('f','q',=,'binary:v')", True),
        ("PageFilter(1)", True),
        ("DependentColumnFilter('f','q')", True),
        ("SKIP ValueFilter(=,'binary:v')", True),
        ("WHILE PrefixFilter('a')", True),
        ("PrefixFilter('a') OR PageFilter(3)", True),
        ("PrefixFilter('a')", False),
        ("ValueFilter(=,'binary:v') AND KeyOnlyFilter()", False),
        ("ColumnPaginationFilter(1,0)", False),
    ],
)
def test_has_filter_row_matches_hbase(text, expected):
    assert parse_filter(text).has_filter_row() is expected


def test_reset_starts_a_new_scan():
    f = parse_filter("WHILE PageFilter(1)")
    assert f.filter_row(b"a", cells("cf:q=v")) is not None
    assert f.filter_all_remaining()
    f.reset()
    assert not f.filter_all_remaining()
    assert f.filter_row(b"b", cells("cf:q=v")) is not None


def test_filter_row_returns_none_when_no_cell_is_left():
    assert parse_filter("ValueFilter(=, 'binary:x')").filter_row(b"r", cells("cf:a=y")) is None


def test_filter_row_returns_none_once_the_scan_is_over():
    f = parse_filter("PageFilter(1)")
    f.filter_row(b"a", cells("cf:q=v"))
    assert f.filter_row(b"b", cells("cf:q=v")) is None


def test_max_versions_keeps_the_newest_included_versions():
    row = ("cf:a=3@3", "cf:a=2@2", "cf:a=1@1")
    assert one_row("ValueFilter(!=, 'binary:3')", *row, max_versions=1) == ["cf:a=2@2"]


def test_max_versions_stops_showing_a_column_to_the_filter_once_reached():
    # UserScanQueryMatcher counts versions after the filter and then seeks to the
    # next column: with one version wanted, the filter never sees status@1.
    row = ("cf:status=off@3", "cf:status=off@2", "cf:status=on@1")
    assert one_row(SCVF.format(", false, false"), *row, max_versions=1) is None
    assert one_row(SCVF.format(", false, false"), *row) is not None


def test_reversed_prefix_filter_ends_the_scan_below_the_prefix():
    f = parse_filter("PrefixFilter('b')")
    f.set_reversed(True)
    assert f.filter_row(b"c", cells("cf:q=v")) is None
    assert not f.filter_all_remaining()
    assert f.filter_row(b"ba", cells("cf:q=v")) is not None
    assert f.filter_row(b"a", cells("cf:q=v")) is None
    assert f.filter_all_remaining()


def test_reversed_inclusive_stop_filter_stops_below_the_stop_row():
    f = parse_filter("InclusiveStopFilter('b')")
    f.set_reversed(True)
    assert [k for k in (b"c", b"b", b"a") if f.filter_row(k, cells("cf:q=v"))] == [b"c", b"b"]
    assert f.filter_all_remaining()


def test_set_reversed_reaches_filters_inside_lists_but_not_inside_while():
    listed = parse_filter("PrefixFilter('b') AND KeyOnlyFilter()")
    listed.set_reversed(True)
    assert listed.filters[0]._reversed
    wrapped = parse_filter("WHILE PrefixFilter('b')")
    wrapped.set_reversed(True)
    assert not wrapped.filter._reversed


def test_filter_row_is_not_consulted_when_filter_row_cells_empties_the_row():
    # FilterWrapper calls filterRow() only if cells remain, so row a is not counted.
    table = {"a": cells("cf:s=on"), "b": cells("cf:s=on", "cf:x=1")}
    text = "SingleColumnValueExcludeFilter('cf', 's', =, 'binary:on') AND PageFilter(1)"
    assert scan(text, table) == {"b": ["cf:x=1"]}


def test_single_column_value_filter_rejects_later_families_after_a_mismatch():
    # Visible inside OR: had SCVF included f2:x, OR's filterRow() would keep the row.
    text = "SingleColumnValueFilter('f1', 's', =, 'binary:on') OR ValueFilter(=, 'binary:zzz')"
    assert one_row(text, "f1:s=off", "f2:x=1") is None
