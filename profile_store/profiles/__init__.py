"""Compacted profiles in HBase.

- ``table``: the ``profiles`` table's row keys, families and cell codecs.
- ``reads``: the real-time reads (segments by any id, connections, linked ids, masters, whole
  profiles), each a stated number of HBase round trips, and the throttled expiry purge.
Their command (``profiles profile ...``) and endpoints (``/v1/profiles``) over ``reads`` are
``profile_store.cli.profiles`` and ``profile_store.service.routes.profiles``.
"""
