"""Real servers this project starts from Maven Central jars for its demo, tests and benchmarks."""
