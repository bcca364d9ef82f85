# Two commands do all the set-up: `make demo` (main job on embedded defaults) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME := $(CURDIR)/.dagster_home

.PHONY: demo test test-fast lint ui java hbase kafka spark-cluster clean

java:
	@command -v java >/dev/null 2>&1 || { echo "PySpark needs Java 17: install it first (Debian: apt-get install -y openjdk-17-jre-headless)"; exit 1; }

# The postgres extra too: the suite runs the production instance (examples/dagster.yaml).
$(BIN)/.installed: pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,postgres]'
	@touch $@

# The local instance: one run of the code location at a time (see the file).
$(DAGSTER_HOME)/dagster.yaml: examples/dagster.local.yaml
	@mkdir -p $(DAGSTER_HOME)
	cp $< $@

demo: java $(BIN)/.installed $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/python -m profile_assets.demo

# ruff, import-linter's contracts (.importlinter): the layers, top to bottom; then mypy, the
# type checker ([tool.mypy] in pyproject.toml).
lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

test: java lint
	@command -v mvn >/dev/null 2>&1 || { echo "the conformance suite starts a real Apache HBase whose jars Maven resolves: install Maven first (Debian: apt-get install -y maven)"; exit 1; }
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { echo "the production Dagster instance is tested on a PostgreSQL server the suite starts: install it first (Debian: apt-get install -y postgresql)"; exit 1; }
	$(BIN)/pytest -n 2

# The edit-test loop: lint, then the tests that start no JVM, browser, PostgreSQL, Dagster
# webserver or daemon, or container (the markers tests/suite_tiers.py gives): no Java needed.
# A test that starts one unmarked fails here, naming the marker it lacks.
FAST_TESTS := not jvm and not browser and not postgres and not dagster_services and not container
test-fast: lint
	$(BIN)/pytest -n 2 -m "$(FAST_TESTS)"

# `dagster dev` with partitions from the lake's first day (unless PROFILES_START_DATE is set)
# and the job page's automation tag agreeing with the automation sensor (profile_assets/local_ui.py).
ui: java $(BIN)/.installed $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/python -m profile_assets.local_ui -w workspace.yaml -h 127.0.0.1 -p 3000

# A real Apache HBase (standalone, Thrift-1 on port 9090) until Ctrl-C; the first run resolves
# its jars with Maven into ~/.cache/adtech-profiles. It prints the variables that point the
# pipeline at it.
hbase: java $(BIN)/.installed
	@command -v mvn >/dev/null 2>&1 || { echo "Apache HBase's jars are resolved by Maven: install it first (Debian: apt-get install -y maven)"; exit 1; }
	$(BIN)/python -m profile_store.cli.launchers apache-hbase --data-dir data/apache-hbase --port 9090

# A real Apache Kafka (one KRaft node, client port 9092) until Ctrl-C, for the real-time path; the
# first run resolves its jars with Maven into ~/.cache/adtech-profiles. It prints the variable
# that points the project at it.
kafka: java $(BIN)/.installed
	@command -v mvn >/dev/null 2>&1 || { echo "Apache Kafka's jars are resolved by Maven: install it first (Debian: apt-get install -y maven)"; exit 1; }
	$(BIN)/profiles kafka --data-dir data/kafka --port 9092

# SPARK_START_TIMEOUT: seconds the master, then the workers, may take (`make spark-cluster
# SPARK_START_TIMEOUT=600` on a busy machine). SPARK_WORKERS: how many workers, each of 2 cores
# (`make spark-cluster SPARK_WORKERS=2`: two executors, shuffles between them).
SPARK_START_TIMEOUT ?= 300
SPARK_WORKERS ?= 1
spark-cluster: java $(BIN)/.installed
	$(BIN)/python -m profile_store.cli.launchers spark-standalone --work-dir data/spark-standalone \
		--workers $(SPARK_WORKERS) --start-timeout $(SPARK_START_TIMEOUT)

clean:
	rm -rf data .dagster_home
