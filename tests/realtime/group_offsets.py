"""Reading a group's committed offsets as any client must: again while the coordinator loads."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

LOADING = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError._WAIT_COORD,
)


def committed_once_loaded(config: dict, partition: TopicPartition) -> TopicPartition:
    """The committed offset, asked again while the restarted group coordinator still loads
    its offsets (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS: retriable, as for any client)."""
    reader = Consumer(config)
    try:
        for _ in range(60):
            try:
                return reader.committed([partition], timeout=30)[0]
            except KafkaException as error:
                if error.args[0].code() not in LOADING:
                    raise
                time.sleep(0.5)
        raise AssertionError("the group coordinator did not load within the bound")
    finally:
        reader.close()
