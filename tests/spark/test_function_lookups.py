"""PySpark looks each Spark SQL function up once per JVM (``function_lookups``)."""

from __future__ import annotations

from py4j.clientserver import ClientServerConnection
from pyspark.sql import functions as F
from pyspark.sql.functions import builtin

from profile_store.spark.function_lookups import FunctionLookups, remember_function_lookups


def _commands_sent(monkeypatch) -> list[str]:
    """The py4j commands this process sends from now on (their first line: the kind)."""
    sent: list[str] = []
    send = ClientServerConnection.send_command

    def counted(self, command):
        sent.append(command.split("\n", 1)[0])
        return send(self, command)

    monkeypatch.setattr(ClientServerConnection, "send_command", counted)
    return sent


def test_an_expression_built_again_sends_the_jvm_its_calls_but_no_lookup(spark, monkeypatch):
    remember_function_lookups()
    F.upper(F.col("name"))
    sent = _commands_sent(monkeypatch)
    F.upper(F.col("name"))
    assert sent and "r" not in sent  # "r": py4j's reflection (lookup) command


def test_expressions_of_remembered_functions_compute_what_spark_computes(spark):
    remember_function_lookups()
    rows = spark.createDataFrame([("ab",), ("c",)], "name string")
    found = rows.select(F.upper("name").alias("up"), F.length(F.col("name")).alias("n")).collect()
    assert [(row.up, row.n) for row in found] == [("AB", 2), ("C", 1)]


def test_each_function_is_looked_up_once_per_jvm(spark):
    asked: list[str] = []

    def look_up(name, sc):
        asked.append(name)
        return builtin._get_jvm_function(name, sc)

    lookups = FunctionLookups(look_up)
    first = lookups.function("upper", spark.sparkContext)
    assert lookups.function("upper", spark.sparkContext) is first
    assert asked == ["upper"]


class _Context:
    """A SparkContext as far as the lookups see one: its JVM's view."""

    def __init__(self) -> None:
        self._jvm = object()


def test_a_new_jvm_has_its_functions_looked_up_again():
    asked: list[tuple[str, object]] = []
    lookups = FunctionLookups(lambda name, sc: asked.append((name, sc._jvm)) or object())
    before, after = _Context(), _Context()
    lookups.function("upper", before)
    lookups.function("upper", after)
    lookups.function("upper", after)
    assert asked == [("upper", before._jvm), ("upper", after._jvm)]
