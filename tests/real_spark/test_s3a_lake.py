"""The daily pipeline with its lake on S3, every Spark read and write through Hadoop's S3A.

The landing files of the two days are uploaded to ``s3://BUCKET/PREFIX`` on a local moto server;
the run is configured only as a user would configure it (``PROFILES_LAKE_ROOT``,
``PROFILES_S3_ENDPOINT_URL``, AWS credentials in the environment), so ``hadoop-aws`` of
pyspark's Hadoop comes from Maven Central through the jar cache (``resources.spark_s3a``) and
Spark reads landing files and writes events, quarantine, attribute stats, identity and profile
state as ``s3a://`` objects. The bucket is then downloaded and every data set compared with the
local-directory reference run, and the HBase rows with the reference's.
"""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from pipeline_runs import differences, hbase_tables, lake_datasets, run_pipeline

from profile_store.lake_layout import GROUND_TRUTH, LANDING

BUCKET = "s3a-lake"
PREFIX = "tenant-a/lake"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
}


def upload(client, source: Path, prefix: str) -> None:
    for path in sorted(source.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(source.parent).as_posix()}"
            client.upload_file(str(path), BUCKET, key)


def download(client, prefix: str, target: Path) -> list[str]:
    """Every object under ``prefix`` into ``target``; returns the keys, relative."""
    keys = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix) + 1 :]
            keys.append(relative)
            if relative.endswith("/"):  # a directory marker
                continue
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            client.download_file(BUCKET, item["Key"], str(target / relative))
    return keys


@pytest.fixture(scope="module")
def s3a_run(generated_days, s3_endpoint, tmp_path_factory):
    client = boto3.client("s3", endpoint_url=s3_endpoint, **_boto3_credentials())
    client.create_bucket(Bucket=BUCKET)
    upload(client, generated_days / LANDING, PREFIX)
    upload(client, generated_days / GROUND_TRUTH, PREFIX)
    work = tmp_path_factory.mktemp("s3a")
    run = run_pipeline(
        work,
        generated_days,
        {"PROFILES_S3_ENDPOINT_URL": s3_endpoint, **CREDENTIALS},
        lake_uri=f"s3://{BUCKET}/{PREFIX}",
    )
    keys = download(client, PREFIX, run.lake)
    run.lake_uri = f"s3a://{BUCKET}/{PREFIX}"
    return run, keys


def _boto3_credentials() -> dict[str, str]:
    return {
        "aws_access_key_id": CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        "region_name": CREDENTIALS["AWS_REGION"],
    }


def test_spark_wrote_every_lake_area_to_the_bucket(s3a_run, reference):
    run, keys = s3a_run
    written = {key.split("/")[0] for key in keys if key.endswith(".parquet")}
    local = {p.relative_to(reference.lake).parts[0] for p in reference.lake.rglob("*.parquet")}
    assert written == local
    assert len(written) >= 8


def test_every_lake_output_equals_the_local_directory_runs(s3a_run, reference):
    run, _ = s3a_run
    expected, actual = lake_datasets(reference), lake_datasets(run)
    assert len(expected) > 10
    assert differences(expected, actual) == []


def test_every_hbase_row_equals_the_local_directory_runs(s3a_run, reference):
    run, _ = s3a_run
    assert differences(hbase_tables(reference.hbase_dir), hbase_tables(run.hbase_dir)) == []
