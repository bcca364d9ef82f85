"""Real servers this project starts on this machine: Apache HBase and a Spark standalone
cluster, from jars Maven resolves or from pyspark itself, as child processes."""
