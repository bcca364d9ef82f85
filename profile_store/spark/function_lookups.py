"""PySpark's lookups of Spark SQL's functions, made once per JVM.

Every ``pyspark.sql.functions`` call, and every column named by a string, first looks its
function up in the JVM: two py4j round trips (the class, then its member) before the call
itself, for an answer that never changes while the JVM lives. A day's run builds thousands of
expressions this way, before any Spark job runs (docs/benchmarks.md);
``remember_function_lookups`` makes PySpark keep each answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark import SparkContext
from pyspark.sql.classic import column as classic_column
from pyspark.sql.functions import builtin
from pyspark.sql.utils import get_active_spark_context

_look_up = builtin._get_jvm_function


class FunctionLookups:
    """The functions looked up in one JVM: a new JVM (a new context's view) starts afresh."""

    def __init__(self, look_up: Callable[[str, SparkContext], Any] = _look_up) -> None:
        self._look_up = look_up
        self._view: object = None
        self._functions: dict[str, Any] = {}

    def function(self, name: str, sc: SparkContext) -> Any:
        if sc._jvm is not self._view:
            self._view, self._functions = sc._jvm, {}
        found = self._functions.get(name)
        if found is None:
            found = self._functions[name] = self._look_up(name, sc)
        return found


_LOOKUPS = FunctionLookups()


def _column_named(name: str) -> Any:
    return _LOOKUPS.function("col", get_active_spark_context())(name)


def remember_function_lookups() -> None:
    """From now on, in this process, PySpark looks each function up once per JVM."""
    builtin._get_jvm_function = _LOOKUPS.function
    classic_column._create_column_from_name = _column_named
