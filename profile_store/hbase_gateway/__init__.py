"""Embedded HBase Thrift-1 gateway: HBase's Thrift API for unmodified happybase, over SQLite.

Modules: ``store`` (durable ordered cell storage), ``delete_markers`` (how puts and deletes
land), ``visible_cells`` (what a read shows of the stored cells), ``checkpointer`` (background WAL
checkpoints), ``reclaim`` (a compaction's pass over a table), ``compaction`` (when the background
compacts), ``major_compaction`` (``majorCompact`` and its purge), ``catalog`` (which tables
exist, shared by processes), ``mutation_plans`` (what a write call will change), ``schema``
(tables, families, columns), ``scanner`` (server-side scans), ``handler`` (the Thrift service),
``server`` (threaded Thrift server), ``process`` (run it as a child process),
``filter_language`` (HBase's filter strings), ``filters`` (what each filter does),
``row_filter`` (how a row is shown to a filter). Its program, ``profiles hbase-gateway``, is
``profile_store.cli.hbase_gateway``. See README.md in this directory.
"""
