"""Where the lake is, from the environment: one reading for the pipeline, the CLI and the service.

``PROFILES_LAKE_ROOT`` is a directory (``data/lake`` by default) or ``s3://bucket/prefix``;
``PROFILES_S3_ENDPOINT_URL`` points the S3 client at an S3-compatible server (MinIO, moto), and
``AWS_REGION`` (or ``AWS_DEFAULT_REGION``) names the bucket's region. Credentials come from
boto3's default chain, never from here. ``PROFILES_START_DATE`` is the lake's first day
partition: Dagster fixes its partitions when it loads the code, and ``profiles import`` says
when imported days fall before it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from profile_store.lake.storage import LakeStorage, LocalLakeStorage, S3LakeStorage
from profile_store.settings.definitions import START_DATE

DEFAULT_LAKE_ROOT = "data/lake"
START_DATE_ENV = START_DATE.name
S3_MAX_ATTEMPTS = 5
"""Attempts of each S3 call in boto3's standard retry mode (dagster-aws's default before)."""


@dataclass(frozen=True)
class LakeSettings:
    """The lake's root and how to reach it when it is on S3."""

    root: str = DEFAULT_LAKE_ROOT
    s3_endpoint_url: str | None = None
    s3_region: str | None = None
    spark_s3_scheme: str = "s3a"
    """How Spark names the bucket: ``s3a`` (Hadoop's connector) or ``s3`` (EMRFS on EMR)."""

    @property
    def is_s3(self) -> bool:
        return self.root.startswith(("s3://", "s3a://"))

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, root: str | None = None
    ) -> LakeSettings:
        """From ``PROFILES_LAKE_ROOT`` and the S3 variables; ``root`` (a ``--lake`` flag) wins."""
        env = os.environ if env is None else env
        return cls(
            root=root or env.get("PROFILES_LAKE_ROOT", DEFAULT_LAKE_ROOT),
            s3_endpoint_url=env.get("PROFILES_S3_ENDPOINT_URL") or None,
            s3_region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            spark_s3_scheme=env.get("PROFILES_SPARK_S3_SCHEME", "s3a"),
        )

    def storage(self) -> LakeStorage:
        """The lake's storage; on S3 a boto3 client that retries throttled and failed calls."""
        if not self.is_s3:
            return LocalLakeStorage(self.root)
        import boto3
        from botocore.config import Config

        client = boto3.session.Session().client(
            "s3",
            endpoint_url=self.s3_endpoint_url,
            region_name=self.s3_region,
            config=Config(retries={"max_attempts": S3_MAX_ATTEMPTS, "mode": "standard"}),
        )
        return S3LakeStorage(self.root, client, spark_scheme=self.spark_s3_scheme)


def start_date_from_env(env: Mapping[str, str] | None = None) -> date:
    """The first day partition (``PROFILES_START_DATE``, YYYY-MM-DD)."""
    return START_DATE.read(env)
