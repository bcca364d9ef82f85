"""Scraping a running gateway's ``/metrics``, parsed with prometheus_client's own parser."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from profile_store.hbase_gateway.process import EmbeddedGateway


class Scrape:
    """One scrape: every sample's value by name and labels (0 for a sample not exposed)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.families = {family.name: family for family in text_string_to_metric_families(text)}
        self._values = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in self.families.values()
            for sample in family.samples
        }

    def value(self, name: str, **labels: str) -> float:
        return self._values.get((name, tuple(sorted(labels.items()))), 0.0)


def scrape(gateway: EmbeddedGateway) -> Scrape:
    with urllib.request.urlopen(gateway.metrics_url, timeout=30) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        return Scrape(response.read().decode())
