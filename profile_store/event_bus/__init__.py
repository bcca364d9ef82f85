"""Kafka as the real-time path's event bus: settings, the events topic, producer and consumers.

The engine layer under the collector, the lake sink and the live profile job: they name what
they want (send these events, read a batch), this package knows librdkafka's settings.
"""
