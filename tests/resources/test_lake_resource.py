"""The Dagster lake resource is the library's lake settings, configurable in Dagster."""

from __future__ import annotations

import boto3

from profile_store.lake.settings import LakeSettings
from resources.lake import LakeResource


def test_the_resource_from_the_environment_holds_the_libraries_settings():
    env = {
        "PROFILES_LAKE_ROOT": "s3://b/p",
        "PROFILES_S3_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_REGION": "eu-west-1",
    }
    lake = LakeResource.from_env(env)
    assert lake.settings() == LakeSettings.from_env(env)
    assert lake.is_s3
    assert LakeResource.from_env({}).root == "data/lake"


def test_the_resource_reaches_s3_through_its_endpoint(s3_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="resource-bucket")
    lake = LakeResource(
        root="s3://resource-bucket/lake", s3_endpoint_url=s3_endpoint, s3_region="us-east-1"
    )
    lake.storage().write_bytes("landing/date=2026-11-01/_SUCCESS", b"")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="resource-bucket")["Contents"]]
    assert keys == ["lake/landing/date=2026-11-01/_SUCCESS"]
