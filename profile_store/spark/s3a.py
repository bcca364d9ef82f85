"""Spark settings for a lake on S3 read through Hadoop's S3A connector (``s3a://``).

pyspark bundles the Hadoop client but not ``hadoop-aws``, the S3A file system. With
``PROFILES_SPARK_S3A_JARS=maven`` (the default) ``hadoop-aws`` of the Hadoop version pyspark
bundles, with its AWS SDK, is resolved from Maven Central into the jar cache once
(``profile_store.launchers.maven_jars``) and passed as ``spark.jars``, so the driver and every
executor load it; ``provided`` leaves it to the cluster (an image or ``spark.jars.packages`` of
your own). The endpoint, path-style addressing and region follow the lake's own settings, so the
Spark side and the boto3 side of the lake (listings, markers) talk to the same server. Credentials
come from the AWS SDK's default chain (environment, profile, instance role) on each JVM: nothing
secret is written into Spark's configuration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pyspark

from profile_store.launchers.maven_jars import resolve_jars

JAR_SOURCES = ("maven", "provided")


def bundled_hadoop_version() -> str:
    """The Hadoop version of pyspark's own ``hadoop-client-api`` jar (hadoop-aws must match)."""
    jars = Path(pyspark.__file__).parent / "jars"
    found = sorted(jars.glob("hadoop-client-api-*.jar"))
    if not found:
        raise RuntimeError(f"no hadoop-client-api jar in {jars}: cannot tell pyspark's Hadoop")
    return found[0].name.removeprefix("hadoop-client-api-").removesuffix(".jar")


def hadoop_aws_jars() -> list[Path]:
    """``hadoop-aws`` and its runtime dependencies (the AWS SDK bundle), resolved once."""
    version = bundled_hadoop_version()
    return resolve_jars(f"hadoop-aws-{version}", [f"org.apache.hadoop:hadoop-aws:{version}"])


def uses_s3a(env: Mapping[str, str], also_reads: Sequence[str] = ()) -> bool:
    """Is the lake (or a source in ``also_reads``) on S3 and read by Spark as ``s3a://``
    (not EMRFS's ``s3://``)?"""
    roots = [env.get("PROFILES_LAKE_ROOT", ""), *also_reads]
    scheme = env.get("PROFILES_SPARK_S3_SCHEME", "s3a")
    return scheme == "s3a" and any(root.startswith(("s3://", "s3a://")) for root in roots)


def s3a_config(env: Mapping[str, str], also_reads: Sequence[str] = ()) -> dict[str, str]:
    """Spark settings for an ``s3a://`` lake or source; empty when both are elsewhere."""
    if not uses_s3a(env, also_reads):
        return {}
    source = env.get("PROFILES_SPARK_S3A_JARS", "maven")
    if source not in JAR_SOURCES:
        raise ValueError(
            f"PROFILES_SPARK_S3A_JARS must be one of {', '.join(JAR_SOURCES)}, got {source!r}"
        )
    config: dict[str, str] = {}
    if source == "maven":
        config["spark.jars"] = ",".join(str(jar) for jar in hadoop_aws_jars())
    endpoint = env.get("PROFILES_S3_ENDPOINT_URL")
    if endpoint:
        # S3-compatible servers (MinIO, moto) serve buckets as paths, not as host names.
        config["spark.hadoop.fs.s3a.endpoint"] = endpoint
        config["spark.hadoop.fs.s3a.path.style.access"] = "true"
        config["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(
            endpoint.startswith("https://")
        ).lower()
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        config["spark.hadoop.fs.s3a.endpoint.region"] = region
    return config
