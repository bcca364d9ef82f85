"""Compacted profiles in HBase.

- ``table``: the ``profiles`` table's row keys, families and cell codecs.
- ``reads``: the real-time reads (segments by any id, connections, linked ids, masters, whole
  profiles), each a stated number of HBase round trips.
- ``expiry_purge``: the throttled batch job deleting expired segment cells.
Their command (``profiles profile ...``) and endpoints (``/v1/profiles``) over ``reads`` are
``profile_store.cli.profiles`` and ``profile_store.service.routes.profiles``.
"""
