"""Embedded HBase Thrift-1 gateway: HBase's Thrift API for unmodified happybase, over SQLite.

Modules: ``store`` (durable ordered cell storage), ``schema`` (tables, families, columns),
``scanner`` (server-side scans), ``handler`` (the Thrift service), ``server`` (threaded Thrift
server), ``process`` (run it as a child process), ``filters`` (the HBase filter language). Its
program, ``profiles hbase-gateway``, is ``profile_store.cli.hbase_gateway``. See README.md in this
directory.
"""
