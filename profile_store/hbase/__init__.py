"""HBase as every process reaches it: settings from the environment, and a connection pool."""
