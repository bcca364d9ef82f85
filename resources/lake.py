"""The lake resource: a local directory by default, an S3 prefix when configured."""

from __future__ import annotations

import os

from dagster import ConfigurableResource
from dagster_aws.s3 import S3Resource
from pydantic import Field

from profile_store.lake_storage import LakeStorage, LocalLakeStorage, S3LakeStorage

DEFAULT_LAKE_ROOT = "data/lake"


class LakeResource(ConfigurableResource):
    """Where landing files, clean events and quarantine live.

    ``root`` is a directory (``data/lake``) or ``s3://bucket/prefix``. For S3 the client comes
    from dagster-aws's ``S3Resource`` (credentials from the usual AWS environment), and
    ``s3_endpoint_url`` points it at an S3-compatible server such as MinIO or moto.
    """

    root: str = Field(default=DEFAULT_LAKE_ROOT, description="Directory or s3://bucket/prefix.")
    s3_endpoint_url: str | None = Field(default=None, description="S3-compatible endpoint.")
    s3_region: str | None = Field(default=None, description="AWS region of the bucket.")
    spark_s3_scheme: str = Field(
        default="s3a", description="Scheme Spark uses for the bucket: s3a (Hadoop) or s3 (EMR)."
    )

    @property
    def is_s3(self) -> bool:
        return self.root.startswith(("s3://", "s3a://"))

    def storage(self) -> LakeStorage:
        if not self.is_s3:
            return LocalLakeStorage(self.root)
        client = S3Resource(
            endpoint_url=self.s3_endpoint_url, region_name=self.s3_region
        ).get_client()
        return S3LakeStorage(self.root, client, spark_scheme=self.spark_s3_scheme)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, root: str | None = None) -> LakeResource:
        """From ``PROFILES_LAKE_ROOT`` and the S3 variables; ``root`` (a ``--lake`` flag) wins."""
        env = dict(os.environ if env is None else env)
        return cls(
            root=root or env.get("PROFILES_LAKE_ROOT", DEFAULT_LAKE_ROOT),
            s3_endpoint_url=env.get("PROFILES_S3_ENDPOINT_URL") or None,
            s3_region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            spark_s3_scheme=env.get("PROFILES_SPARK_S3_SCHEME", "s3a"),
        )
