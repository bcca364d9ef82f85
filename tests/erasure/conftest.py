"""Shared by the erasure tests: a real gateway per module, for those that need no Spark."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from profile_store.hbase_gateway.process import EmbeddedGateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory) -> Iterator[EmbeddedGateway]:
    with EmbeddedGateway(tmp_path_factory.mktemp("erasure-hbase")) as started:
        yield started
