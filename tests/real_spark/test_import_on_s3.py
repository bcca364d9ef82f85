"""``profiles import`` from an S3 source into an S3 lake, through Spark's own S3A connector.

The command runs as a user runs it (a subprocess; the source a glob under ``s3://``, the lake
``--lake s3://...``, the endpoint and credentials in the environment), so ``hadoop-aws`` comes
from the jar cache and every read (the CSV), staging write, check and publish (S3 copies) goes
to the moto server. The landing lines must equal those of the same file imported locally.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest
from pipeline_runs import S3_CREDENTIALS, s3_client

from profile_store.imports.mapping import parse_mapping
from profile_store.imports.source_import import import_source
from profile_store.lake.storage import LocalLakeStorage

BUCKET = "import-on-s3"
CREDENTIALS = S3_CREDENTIALS
CLICKS = """ip,app,os,click_time
83230,3,13,2017-11-06 14:32:21
17357,3,19,2017-11-06 23:33:34
45745,14,13,2017-11-07 00:34:52
45745,14,13,2017-11-07 00:34:52
"""
MAPPING = {
    "app_id": {"column": "app", "prefix": "td."},
    "event_type": {"value": "click"},
    "user_id": "ip",
    "id_type": {"value": "cookie"},
    "event_time": {"column": "click_time", "format": "yyyy-MM-dd HH:mm:ss"},
    "attributes": ["os"],
}


def day_lines(read, keys: list[str]) -> dict[str, list[dict]]:
    """Landing events by day, from the data files among ``keys`` (``read(key)`` gives bytes)."""
    by_day: dict[str, list[dict]] = {}
    for key in sorted(k for k in keys if k.endswith(".jsonl.gz")):
        day = key.split("date=")[1].split("/")[0]
        text = gzip.decompress(read(key)).decode()
        by_day.setdefault(day, []).extend(json.loads(line) for line in text.splitlines())
    return {day: sorted(events, key=lambda e: e["event_id"]) for day, events in by_day.items()}


@pytest.fixture(scope="module")
def s3_import(s3_endpoint, tmp_path_factory):
    """The command's exit and output, and the bucket's keys under the lake afterwards."""
    client = s3_client(s3_endpoint)
    client.create_bucket(Bucket=BUCKET)
    client.put_object(Bucket=BUCKET, Key="exports/clicks-1.csv", Body=CLICKS.encode())
    work = tmp_path_factory.mktemp("s3_import")
    (work / "mapping.json").write_text(json.dumps(MAPPING))
    env = {**os.environ, **CREDENTIALS, "PROFILES_S3_ENDPOINT_URL": s3_endpoint}
    env.pop("PROFILES_LAKE_ROOT", None)
    completed = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "import", f"s3://{BUCKET}/exports/*.csv"]
        + ["--mapping", str(work / "mapping.json"), "--lake", f"s3://{BUCKET}/lake"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="lake/")
    keys = [item["Key"] for page in pages for item in page.get("Contents", [])]
    return completed, keys, client


def test_the_command_succeeds_on_s3(s3_import):
    completed, _, _ = s3_import
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-4000:]
    assert "day 2/2  2017-11-07: 1 file" in completed.stdout


def test_each_day_lands_on_s3_with_its_marker_and_no_staging_is_left(s3_import):
    _, keys, _ = s3_import
    assert {k for k in keys if k.endswith("_SUCCESS")} == {
        "lake/landing/date=2017-11-06/_SUCCESS",
        "lake/landing/date=2017-11-07/_SUCCESS",
    }
    assert not [k for k in keys if k.startswith("lake/_imports")]


def test_the_lines_on_s3_equal_a_local_import_of_the_same_file(s3_import, spark, tmp_path):
    _, keys, client = s3_import
    on_s3 = day_lines(lambda key: client.get_object(Bucket=BUCKET, Key=key)["Body"].read(), keys)
    (tmp_path / "clicks-1.csv").write_text(CLICKS)
    local = LocalLakeStorage(tmp_path / "lake")
    import_source(
        spark, local, str(tmp_path / "clicks-1.csv"), parse_mapping(MAPPING), emit=lambda _: None
    )
    files = [f.path for f in local.list_files("landing")]
    assert on_s3 == day_lines(local.read_bytes, files)
    assert sum(len(events) for events in on_s3.values()) == 4
