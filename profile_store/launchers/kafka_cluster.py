"""A real Apache Kafka cluster on this machine: N KRaft nodes, each broker and controller.

For the faults one broker cannot show: a broker lost while the collector, the lake sink and the
live job run, its partitions then led by another replica. Each node is a ``KafkaBroker`` over
its own directory (``node-1``, ``node-2``, ...); all of them are the voters of one static
controller quorum (``controller.quorum.voters``), each formatted with the cluster's one id, so
that a majority (2 of 3) keeps the metadata and the cluster writable. The consumer offsets are
replicated to every node, as the events topic is when it is created with ``environment()``
(replication factor N, ``min.insync.replicas`` N - 1). Ports and cluster id are kept in
``cluster.json``, so a node killed and started again comes back on its own address. Usage::

    with KafkaCluster(data_dir, nodes=3) as cluster:
        cluster.nodes[0].kill()  # SIGKILL, as a crash
        cluster.nodes[0].start()  # over the same directory and ports
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

from profile_store.launchers.child_processes import free_port
from profile_store.launchers.kafka_broker import (
    DEFAULT_HEAP,
    KAFKA_VERSION,
    KafkaBroker,
    KafkaStartError,
    new_cluster_id,
    server_properties,
)


class ClusterNode(KafkaBroker):
    """One node of a ``KafkaCluster``: its ports, id and quorum are the cluster's."""

    def __init__(self, cluster: KafkaCluster, node_id: int) -> None:
        super().__init__(
            cluster.data_dir / f"node-{node_id}",
            version=cluster.version,
            heap=cluster.heap,
            startup_timeout=cluster.startup_timeout,
        )
        self.cluster = cluster
        self.node_id = node_id
        # A node started with the others cannot answer before a majority of them runs: the
        # cluster waits for all of them instead.
        self.waits_until_answered = True

    def _load_identity(self) -> None:
        self.port, self.controller_port = self.cluster.ports[self.node_id]
        self.cluster_id = self.cluster.cluster_id

    def _server_properties(self) -> dict[str, str]:
        assert self.port is not None and self.controller_port is not None
        nodes = len(self.cluster.ports)
        return {
            **server_properties(self.data_dir, self.port, self.controller_port, self.node_id),
            "controller.quorum.voters": self.cluster.voters,
            "offsets.topic.replication.factor": str(nodes),
            "transaction.state.log.replication.factor": str(nodes),
            "transaction.state.log.min.isr": str(max(1, nodes - 1)),
            "share.coordinator.state.topic.replication.factor": str(nodes),
            "share.coordinator.state.topic.min.isr": str(max(1, nodes - 1)),
        }

    def _wait_until_answers(self) -> None:
        if self.waits_until_answered:
            super()._wait_until_answers()


class KafkaCluster:
    """``nodes`` combined broker+controller KRaft nodes over ``data_dir``, on 127.0.0.1."""

    def __init__(
        self,
        data_dir: str | Path,
        *,
        nodes: int = 3,
        version: str = KAFKA_VERSION,
        heap: str = DEFAULT_HEAP,
        startup_timeout: float = 180.0,
    ) -> None:
        if nodes < 1:
            raise ValueError(f"nodes: must be at least 1, got {nodes}")
        self.data_dir = Path(data_dir).resolve()
        self.version = version
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.cluster_id, self.ports = self._load_identity(nodes)
        self.nodes = [ClusterNode(self, node_id) for node_id in sorted(self.ports)]

    @property
    def voters(self) -> str:
        """``controller.quorum.voters``: every node, ``id@host:port``."""
        return ",".join(f"{i}@127.0.0.1:{ports[1]}" for i, ports in sorted(self.ports.items()))

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port, _controller in self.ports.values())

    def start(self) -> KafkaCluster:
        """Start every node, then wait until a metadata request lists all of them."""
        try:
            for node in self.nodes:
                node.waits_until_answered = False
                node.start()
                node.waits_until_answered = True
            self._wait_for_all_brokers()
        except BaseException:
            self.kill()
            raise
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def kill(self) -> None:
        for node in self.nodes:
            node.kill()

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def environment(self) -> dict[str, str]:
        """The variables that point the real-time path at this cluster, the events topic
        created on every node and acknowledged once on all but one."""
        nodes = len(self.nodes)
        return {
            "PROFILES_KAFKA_BOOTSTRAP_SERVERS": self.bootstrap_servers,
            "PROFILES_KAFKA_REPLICATION_FACTOR": str(nodes),
            "PROFILES_KAFKA_MIN_INSYNC_REPLICAS": str(max(1, nodes - 1)),
        }

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(f"== node {n.node_id}\n{n.log_tail(lines)}" for n in self.nodes)

    def _load_identity(self, nodes: int) -> tuple[str, dict[int, tuple[int, int]]]:
        """The cluster id and each node's (port, controller port), kept from the first start."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        identity_file = self.data_dir / "cluster.json"
        if identity_file.exists():
            kept = json.loads(identity_file.read_text())
            if len(kept["ports"]) != nodes:
                raise ValueError(
                    f"nodes: {self.data_dir} holds a cluster of {len(kept['ports'])} nodes, "
                    f"not {nodes}"
                )
            return kept["cluster_id"], {int(i): tuple(p) for i, p in kept["ports"].items()}
        cluster_id = new_cluster_id()
        chosen: list[int] = []
        while len(chosen) < 2 * nodes:  # a port probed free twice is taken once
            if (port := free_port()) not in chosen:
                chosen.append(port)
        ports = {i: (chosen[2 * i - 2], chosen[2 * i - 1]) for i in range(1, nodes + 1)}
        identity_file.write_text(json.dumps({"cluster_id": cluster_id, "ports": ports}))
        return cluster_id, ports

    def _wait_for_all_brokers(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        deadline = time.monotonic() + self.startup_timeout
        listed = 0
        while time.monotonic() < deadline:
            for node in self.nodes:
                if not node.running:
                    raise KafkaStartError(f"Kafka node {node.node_id} exited:\n{node.log_tail()}")
            try:
                listed = len(admin.list_topics(timeout=2).brokers)
            except Exception:  # no node listening yet
                listed = 0
            if listed == len(self.nodes):
                return
            time.sleep(0.25)
        raise KafkaStartError(
            f"the Kafka cluster listed {listed} of {len(self.nodes)} brokers after "
            f"{self.startup_timeout:.0f} s:\n{self.log_tail()}"
        )
