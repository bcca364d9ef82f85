"""The lake resource: a local directory by default, an S3 prefix when configured."""

from __future__ import annotations

from dataclasses import asdict, fields

from dagster import ConfigurableResource
from pydantic import Field

from profile_store.lake.settings import DEFAULT_LAKE_ROOT, LakeSettings
from profile_store.lake.storage import LakeStorage


class LakeResource(ConfigurableResource):
    """Where landing files, clean events and quarantine live (``profile_store.lake.settings``).

    ``root`` is a directory (``data/lake``) or ``s3://bucket/prefix``; for S3 the client uses the
    usual AWS credentials, and ``s3_endpoint_url`` points it at an S3-compatible server such as
    MinIO or moto.
    """

    root: str = Field(default=DEFAULT_LAKE_ROOT, description="Directory or s3://bucket/prefix.")
    s3_endpoint_url: str | None = Field(default=None, description="S3-compatible endpoint.")
    s3_region: str | None = Field(default=None, description="AWS region of the bucket.")
    spark_s3_scheme: str = Field(
        default="s3a", description="Scheme Spark uses for the bucket: s3a (Hadoop) or s3 (EMR)."
    )

    def settings(self) -> LakeSettings:
        return LakeSettings(**{f.name: getattr(self, f.name) for f in fields(LakeSettings)})

    @property
    def is_s3(self) -> bool:
        return self.settings().is_s3

    def storage(self) -> LakeStorage:
        return self.settings().storage()

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, root: str | None = None) -> LakeResource:
        """From ``PROFILES_LAKE_ROOT`` and the S3 variables; ``root`` (a ``--lake`` flag) wins."""
        return cls(**asdict(LakeSettings.from_env(env, root=root)))
