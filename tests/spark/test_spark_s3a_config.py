"""Which Spark settings a lake on S3 adds (the S3A run itself is in tests/real_spark)."""

from __future__ import annotations

import re

import pytest

from profile_store.spark.s3a import bundled_hadoop_version, s3a_config
from profile_store.spark.session import spark_config_from_env

S3_LAKE = {"PROFILES_LAKE_ROOT": "s3://bucket/lake", "PROFILES_SPARK_S3A_JARS": "provided"}


def test_a_lake_directory_adds_no_s3a_setting():
    assert s3a_config({"PROFILES_LAKE_ROOT": "data/lake"}) == {}


def test_emrfs_adds_no_s3a_setting():
    assert s3a_config({**S3_LAKE, "PROFILES_SPARK_S3_SCHEME": "s3"}) == {}


def test_an_s3_compatible_endpoint_is_addressed_by_path_without_tls_for_http():
    config = s3a_config({**S3_LAKE, "PROFILES_S3_ENDPOINT_URL": "http://127.0.0.1:9000"})
    assert config == {
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
    }


def test_the_region_comes_from_the_aws_environment():
    config = s3a_config({**S3_LAKE, "AWS_REGION": "eu-west-1"})
    assert config == {"spark.hadoop.fs.s3a.endpoint.region": "eu-west-1"}


def test_credentials_never_enter_sparks_configuration():
    env = {**S3_LAKE, "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}
    assert not any("AKIAEXAMPLE" in v or "secret" in v for v in spark_config_from_env(env).values())


def test_an_unknown_jar_source_names_the_variable():
    with pytest.raises(ValueError, match="PROFILES_SPARK_S3A_JARS must be one of maven, provided"):
        s3a_config({**S3_LAKE, "PROFILES_SPARK_S3A_JARS": "ivy"})


def test_maven_jars_are_hadoop_aws_of_pysparks_own_hadoop(tmp_path, monkeypatch):
    monkeypatch.setenv("PROFILES_CACHE_DIR", str(tmp_path))
    version = bundled_hadoop_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    lib = tmp_path / f"hadoop-aws-{version}" / "lib"
    lib.mkdir(parents=True)
    for jar in (f"hadoop-aws-{version}.jar", "bundle-2.35.4.jar"):
        (lib / jar).write_bytes(b"")
    (lib.parent / ".complete").write_text("resolved\n")
    jars = s3a_config({**S3_LAKE, "PROFILES_SPARK_S3A_JARS": "maven"})["spark.jars"].split(",")
    assert sorted(jar.rsplit("/", 1)[1] for jar in jars) == [
        "bundle-2.35.4.jar",
        f"hadoop-aws-{version}.jar",
    ]
