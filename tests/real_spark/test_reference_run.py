"""The reference run is ``profiles run`` over two days and a day without events, as a user runs
days from the command line: runs recorded where the UI finds them, the empty day built."""

from __future__ import annotations

import contextlib

import happybase
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter
from pipeline_runs import DAYS

from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.hbase_gateway.process import EmbeddedGateway


def test_each_day_is_a_successful_daily_pipeline_run_in_the_instance_it_created(reference):
    with DagsterInstance.from_config(str(reference.work / ".dagster_home")) as instance:
        runs = instance.get_runs(RunsFilter(job_name="daily_pipeline"))
        assert sorted(run.tags["dagster/partition"] for run in runs) == list(DAYS)
        assert {run.status for run in runs} == {DagsterRunStatus.SUCCESS}


def test_the_day_without_events_passes_every_check_it_has_something_to_judge(reference):
    lines = reference.output.splitlines()
    days = {day: next(line for line in lines if line.startswith(f"{day}: run ")) for day in DAYS}
    assert all("every check passed" in days[day] for day in DAYS[:2])
    assert "had nothing to judge: " in days[DAYS[2]]
    assert days[DAYS[2]].endswith(")") and "the others passed" in days[DAYS[2]]
    assert "FAILED" not in reference.output and "warned" not in reference.output


def test_a_query_spanning_the_day_without_events_answers(reference):
    leaf = {"app_id": "com.shopfast.android", "event_type": "view_item"}
    with EmbeddedGateway(reference.hbase_dir) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        try:
            table = connection.table(SKETCH_TABLE)
            engine = AudienceEngine(lambda: contextlib.nullcontext(table))
            before = engine.estimate({**leaf, "date_from": DAYS[0], "date_to": DAYS[1]})
            spanning = engine.estimate({**leaf, "date_from": DAYS[0], "date_to": DAYS[2]})
        finally:
            connection.close()
    assert before.estimate > 0
    assert spanning.estimate == before.estimate
