"""Dagster resources, and the one place where the environment picks local or production."""

from __future__ import annotations

import os

from profile_store.settings.definitions import check_environment
from resources.hbase import HBaseResource
from resources.identity import IdentityResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env


def resources_from_env(env: dict[str, str] | None = None) -> dict:
    """Every resource the code location uses, configured from environment variables.

    With none set, everything is embedded: a ``data/lake`` directory, Spark ``local[*]`` and
    an HBase gateway started on demand. See docs/configuration.md for each variable.
    """
    env = dict(os.environ if env is None else env)
    check_environment(env)  # every bad setting at once, before any resource is built
    return {
        "spark": spark_resource_from_env(env),
        "lake": LakeResource.from_env(env),
        "hbase": HBaseResource.from_env(env),
        "identity": IdentityResource.from_env(env),
    }
