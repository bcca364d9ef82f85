# The platform's image: every long-running role of a deployment (deploy/entrypoint.sh lists
# them) on Debian bookworm with Python 3.11 and Java 17, the project installed with its
# postgres extra, pyspark's own Spark classes, and the jars Spark needs for an S3 lake
# (hadoop-aws and its AWS SDK) resolved from Maven Central at build time. Build it with
#   podman build -t localhost/adtech-profiles:VERSION .
# (deploy/base-image.sh first on a machine that reaches Debian's archive but no registry;
# docs/deploying.md has the steps).
ARG BASE_IMAGE=docker.io/library/debian:bookworm-slim

# Python 3.11 and Java 17 from Debian; the man directory that openjdk's set-up writes into
# is missing from slim images.
FROM ${BASE_IMAGE} AS runtime-base
ENV LANG=C.UTF-8 PYTHONUNBUFFERED=1 DEBIAN_FRONTEND=noninteractive
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*

# The project in a virtualenv of its own: dependencies first (a layer that changes only with
# pyproject.toml; the README it names is the real one from the next step on), then the code;
# Maven resolves the S3A jars into the jar cache (~/.m2 cached between builds).
FROM runtime-base AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends maven \
    && rm -rf /var/lib/apt/lists/*
# Behind a proxy that re-signs TLS, pip and Maven trust its CA when the build is given it:
# podman build --secret id=extra-ca,src=BUNDLE.pem (one or more PEM certificates). This stage
# only: the image does not keep it.
RUN --mount=type=secret,id=extra-ca \
    if [ -s /run/secrets/extra-ca ]; then \
        csplit -s -z -f /usr/local/share/ca-certificates/extra-ca- -b '%02d.crt' \
            /run/secrets/extra-ca '/-----BEGIN CERTIFICATE-----/' '{*}' \
        && update-ca-certificates; \
    fi
ENV PROFILES_CACHE_DIR=/var/cache/adtech-profiles PIP_CERT=/etc/ssl/certs/ca-certificates.crt
WORKDIR /src
RUN --mount=type=cache,target=/root/.cache/pip \
    python3 -m venv /opt/profiles && /opt/profiles/bin/pip install --upgrade pip
COPY pyproject.toml ./
RUN --mount=type=cache,target=/root/.cache/pip \
    touch README.md && /opt/profiles/bin/pip install '.[postgres]'
COPY README.md ./
COPY profile_store profile_store
COPY profile_assets profile_assets
COPY resources resources
COPY sensors sensors
RUN /opt/profiles/bin/pip install --no-deps --no-cache-dir . && rm -rf build
RUN --mount=type=cache,target=/root/.m2 \
    /opt/profiles/bin/python -c 'from profile_store.spark.s3a import hadoop_aws_jars; hadoop_aws_jars()'
# --build-arg DEV_SERVERS=1: also Apache Kafka's and Apache HBase's jars, for the image's
# `kafka` and `apache-hbase` roles (the development servers of deploy/compose.dev.yaml).
ARG DEV_SERVERS=
RUN --mount=type=cache,target=/root/.m2 \
    if [ -n "$DEV_SERVERS" ]; then \
        /opt/profiles/bin/python -c 'from profile_store.launchers.apache_hbase import hbase_jars; hbase_jars()' \
        && /opt/profiles/bin/python -c 'from profile_store.launchers.kafka_broker import kafka_jars; kafka_jars()'; \
    fi

FROM runtime-base AS runtime
RUN useradd --uid 10001 --create-home --home-dir /home/profiles profiles \
    && mkdir -p /var/lib/dagster /var/lib/profiles \
    && chown profiles:profiles /var/lib/dagster /var/lib/profiles
COPY --from=build /opt/profiles /opt/profiles
COPY --from=build /var/cache/adtech-profiles /var/cache/adtech-profiles
COPY deploy/workspace.grpc.yaml deploy/entrypoint.sh /opt/profiles/deploy/
COPY examples/dagster.yaml /opt/profiles/examples/
COPY --chown=profiles:profiles examples/dagster.yaml /var/lib/dagster/dagster.yaml
ENV PATH=/opt/profiles/bin:$PATH \
    PROFILES_CACHE_DIR=/var/cache/adtech-profiles \
    DAGSTER_HOME=/var/lib/dagster \
    DAGSTER_COMPUTE_LOGS_DIR=/var/lib/dagster/compute_logs \
    PROFILES_LAKE_ROOT=/var/lib/profiles/lake \
    PROFILES_HBASE_DATA_DIR=/var/lib/profiles/hbase \
    DAGSTER_CODE_SERVER_HOST=127.0.0.1 \
    DAGSTER_CODE_SERVER_PORT=4266 \
    PYSPARK_PYTHON=/opt/profiles/bin/python
USER profiles
WORKDIR /var/lib/profiles
VOLUME ["/var/lib/profiles", "/var/lib/dagster"]
# webserver, code server, service and its metrics, gateway and its metrics, stream metrics
EXPOSE 3000 4266 8080 8081 9090 9191 9192 9193
ENTRYPOINT ["/opt/profiles/deploy/entrypoint.sh"]
CMD ["help"]
