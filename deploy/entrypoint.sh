#!/bin/sh
# The image's entrypoint: one role per long-running service, each the project's own command
# with the image's paths and ports; any other command runs as given (`profiles --version`).
# Arguments after the role are added to its command. Every service shares the host's network, so
# each port is a variable with the default shown (docs/deploying.md, "Ports").
set -eu

workspace="${PROFILES_WORKSPACE:-/opt/profiles/deploy/workspace.grpc.yaml}"
role="${1:-help}"
[ "$#" -gt 0 ] && shift

case "$role" in
webserver)
    exec dagster-webserver -w "$workspace" -h 0.0.0.0 -p "${DAGSTER_WEBSERVER_PORT:-3000}" "$@" ;;
daemon)
    # The job page's Auto-materialize tag follows automation_sensor (on), not the switch of
    # Dagster's pre-sensor daemon that a new instance stores as paused (docs/dagster-ui.md).
    # Asking for --help reads and writes no instance.
    case " $* " in
    *" --help "*) ;;
    *) python -c 'from dagster import DagsterInstance
from sensors.automation_sensor import automation_tag_follows_the_sensor
with DagsterInstance.get() as instance:
    automation_tag_follows_the_sensor(instance)' ;;
    esac
    exec dagster-daemon run -w "$workspace" "$@" ;;
code-server)
    # The event stream sensor (evaluated here) reads the stream jobs' own reports from their
    # metrics listeners, on this host's ports unless the deployment names others.
    : "${PROFILES_STREAM_METRICS_URLS:=http://127.0.0.1:${PROFILES_LAKE_SINK_METRICS_PORT:-9192},http://127.0.0.1:${PROFILES_LIVE_PROFILES_METRICS_PORT:-9193}}"
    export PROFILES_STREAM_METRICS_URLS
    exec dagster api grpc -m profile_assets.definitions -h 0.0.0.0 \
        -p "${DAGSTER_CODE_SERVER_PORT:-4266}" "$@" ;;
serve)
    exec profiles serve --host 0.0.0.0 --port "${PROFILES_SERVE_PORT:-8080}" \
        --metrics-port "${PROFILES_SERVE_METRICS_PORT:-8081}" --metrics-host 0.0.0.0 \
        "$@" ;;
hbase-gateway)
    exec profiles hbase-gateway --host 0.0.0.0 --port "${HBASE_THRIFT_PORT:-9090}" \
        --metrics-port "${PROFILES_GATEWAY_METRICS_PORT:-9191}" \
        --data-dir "${PROFILES_HBASE_DATA_DIR:-/var/lib/profiles/hbase}" "$@" ;;
lake-sink)
    exec profiles stream lake-sink --metrics-port "${PROFILES_LAKE_SINK_METRICS_PORT:-9192}" \
        --metrics-host 0.0.0.0 "$@" ;;
live-profiles)
    exec profiles stream live-profiles --metrics-port "${PROFILES_LIVE_PROFILES_METRICS_PORT:-9193}" \
        --metrics-host 0.0.0.0 "$@" ;;
kafka)
    exec profiles kafka --data-dir /var/lib/profiles/kafka --port 9092 "$@" ;;
apache-hbase)
    exec python -m profile_store.cli.launchers apache-hbase \
        --data-dir /var/lib/profiles/apache-hbase --port 9090 "$@" ;;
http-ok)
    # A health check's probe: exit 0 when the URL answers 2xx (no curl in the image).
    exec python -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' \
        "$@" ;;
tcp-ok)
    # ... and exit 0 when HOST PORT accepts a connection (Kafka, HBase's Thrift server).
    exec python -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)' \
        "$@" ;;
help)
    echo "roles: webserver daemon code-server serve hbase-gateway lake-sink live-profiles" \
        "kafka apache-hbase, probes http-ok URL and tcp-ok HOST PORT; or any command, e.g." \
        "profiles --version" ;;
*)
    exec "$role" "$@" ;;
esac
