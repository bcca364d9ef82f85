"""The lake interface behaves the same on a local directory and on S3 (a real moto server)."""

from __future__ import annotations

from datetime import date

import boto3
import pytest

from profile_store.lake.settings import LakeSettings, start_date_from_env
from profile_store.lake.storage import LocalLakeStorage, S3LakeStorage


@pytest.fixture
def s3_client(s3_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="lake-bucket")
    yield client
    for obj in client.list_objects_v2(Bucket="lake-bucket").get("Contents", []):
        client.delete_object(Bucket="lake-bucket", Key=obj["Key"])
    client.delete_bucket(Bucket="lake-bucket")


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path):
    if request.param == "local":
        return LocalLakeStorage(tmp_path)
    client = request.getfixturevalue("s3_client")
    return S3LakeStorage("s3://lake-bucket/prod/lake", client)


def test_written_bytes_read_back(storage):
    storage.write_bytes("landing/date=2026-11-01/part-0.jsonl", b"{}\n")
    assert storage.read_bytes("landing/date=2026-11-01/part-0.jsonl") == b"{}\n"


def test_listing_is_recursive_sorted_and_relative_to_the_root(storage):
    for name in ("b.jsonl", "a.jsonl", "_SUCCESS"):
        storage.write_bytes(f"landing/date=2026-11-01/{name}", b"x")
    storage.write_bytes("events/date=2026-11-01/part.parquet", b"x")
    paths = [f.path for f in storage.list_files("landing")]
    assert paths == [
        "landing/date=2026-11-01/_SUCCESS",
        "landing/date=2026-11-01/a.jsonl",
        "landing/date=2026-11-01/b.jsonl",
    ]
    assert all(f.size == 1 for f in storage.list_files("landing"))


def test_listing_a_missing_directory_is_empty(storage):
    assert storage.list_files("landing/date=2030-01-01") == []


def test_exists_sees_files_and_directories(storage):
    storage.write_bytes("landing/date=2026-11-01/_SUCCESS", b"")
    assert storage.exists("landing/date=2026-11-01/_SUCCESS")
    assert storage.exists("landing/date=2026-11-01")
    assert not storage.exists("landing/date=2026-11-02")


def test_exists_is_not_fooled_by_a_sibling_that_sorts_first(storage):
    # "-" sorts before "/": a one-key listing of the prefix "events" sees only events-old/.
    storage.write_bytes("events-old/date=2026-11-01/a", b"x")
    storage.write_bytes("events/date=2026-11-01/a", b"x")
    assert storage.exists("events")
    assert storage.exists("events/date=2026-11-01/a")
    assert not storage.exists("event")


def test_hadoop_directory_markers_are_not_lake_files(s3_client):
    storage = S3LakeStorage("s3://lake-bucket/lake", s3_client)
    for key in ("identity_edges/date=2026-11-01/", "identity_edges/date=2026-11-01_$folder$"):
        s3_client.put_object(Bucket="lake-bucket", Key=f"lake/{key}", Body=b"")
    storage.write_bytes("identity_edges/date=2026-11-01/part-0.parquet", b"x")
    assert [f.path for f in storage.list_files("identity_edges")] == [
        "identity_edges/date=2026-11-01/part-0.parquet"
    ]
    assert storage.exists("identity_edges/date=2026-11-01")


def test_deleting_a_tree_on_s3_also_deletes_its_directory_markers(s3_client):
    storage = S3LakeStorage("s3://lake-bucket/lake", s3_client)
    for key in ("events/date=2026-11-01/", "events/date=2026-11-01_$folder$"):
        s3_client.put_object(Bucket="lake-bucket", Key=f"lake/{key}", Body=b"")
    storage.write_bytes("events/date=2026-11-01/part-0.parquet", b"x")
    storage.delete_tree("events/date=2026-11-01")
    assert not storage.exists("events/date=2026-11-01")
    assert "Contents" not in s3_client.list_objects_v2(Bucket="lake-bucket")


def test_delete_tree_removes_only_that_tree(storage):
    storage.write_bytes("events/date=2026-11-01/a", b"x")
    storage.write_bytes("events/date=2026-11-02/a", b"x")
    storage.delete_tree("events/date=2026-11-01")
    assert [f.path for f in storage.list_files("events")] == ["events/date=2026-11-02/a"]


def test_a_moved_file_is_at_its_new_path_only(storage):
    storage.write_bytes("_imports/1/date=2026-11-01/part-0.gz", b"lines")
    storage.move("_imports/1/date=2026-11-01/part-0.gz", "landing/date=2026-11-01/import-0.gz")
    assert storage.read_bytes("landing/date=2026-11-01/import-0.gz") == b"lines"
    assert not storage.exists("_imports/1/date=2026-11-01/part-0.gz")


def test_spark_uris_use_the_hadoop_scheme(tmp_path, s3_client):
    assert LocalLakeStorage(tmp_path).spark_uri("events").startswith("file:///")
    s3 = S3LakeStorage("s3://lake-bucket/prod/lake", s3_client)
    assert (
        s3.spark_uri("events/date=2026-11-01")
        == "s3a://lake-bucket/prod/lake/events/date=2026-11-01"
    )
    emr = S3LakeStorage("s3://lake-bucket/prod/lake", s3_client, spark_scheme="s3")
    assert emr.spark_uri("events") == "s3://lake-bucket/prod/lake/events"


def test_an_s3_root_without_a_bucket_is_rejected_by_name(s3_client):
    with pytest.raises(ValueError, match="lake root"):
        S3LakeStorage("s3:///nobucket", s3_client)


def test_lake_settings_reach_s3_through_their_endpoint(s3_client, s3_endpoint):
    lake = LakeSettings(
        root="s3://lake-bucket/lake", s3_endpoint_url=s3_endpoint, s3_region="us-east-1"
    )
    lake.storage().write_bytes("landing/date=2026-11-01/_SUCCESS", b"")
    assert s3_client.list_objects_v2(Bucket="lake-bucket")["Contents"][0]["Key"] == (
        "lake/landing/date=2026-11-01/_SUCCESS"
    )


def test_lake_settings_come_from_the_environment():
    lake = LakeSettings.from_env(
        {
            "PROFILES_LAKE_ROOT": "s3://b/p",
            "PROFILES_S3_ENDPOINT_URL": "http://127.0.0.1:9000",
            "AWS_DEFAULT_REGION": "eu-west-1",
            "PROFILES_SPARK_S3_SCHEME": "s3",
        }
    )
    assert lake == LakeSettings("s3://b/p", "http://127.0.0.1:9000", "eu-west-1", "s3")
    assert lake.is_s3


def test_without_settings_the_lake_is_the_data_lake_directory():
    assert LakeSettings.from_env({}) == LakeSettings(root="data/lake")
    assert isinstance(LakeSettings.from_env({}).storage(), LocalLakeStorage)


def test_a_lake_flag_wins_over_the_environment():
    lake = LakeSettings.from_env({"PROFILES_LAKE_ROOT": "s3://b/p"}, root="elsewhere")
    assert lake.root == "elsewhere" and not lake.is_s3


def test_the_first_day_partition_comes_from_the_environment():
    assert start_date_from_env({"PROFILES_START_DATE": "2017-11-06"}) == date(2017, 11, 6)
    assert start_date_from_env({}) == date(2026, 11, 1)


def test_a_start_date_that_is_not_a_date_names_the_variable():
    with pytest.raises(ValueError, match=r"PROFILES_START_DATE: expected a date as YYYY-MM-DD"):
        start_date_from_env({"PROFILES_START_DATE": "Nov 1"})


def test_outside_dagster_the_environment_names_a_directory_or_an_s3_prefix(
    tmp_path, s3_client, s3_endpoint
):
    local = LakeSettings.from_env({"PROFILES_LAKE_ROOT": str(tmp_path / "lake")}).storage()
    assert isinstance(local, LocalLakeStorage) and local.root == str(tmp_path / "lake")
    s3 = LakeSettings.from_env(
        {"PROFILES_S3_ENDPOINT_URL": s3_endpoint, "AWS_REGION": "us-east-1"},
        root="s3://lake-bucket/stream",
    ).storage()
    s3.write_bytes("landing/date=2026-11-01/_SUCCESS", b"")
    assert s3_client.list_objects_v2(Bucket="lake-bucket")["Contents"][0]["Key"] == (
        "stream/landing/date=2026-11-01/_SUCCESS"
    )
