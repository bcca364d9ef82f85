"""Compacted profiles in HBase.

- ``table``: the ``profiles`` table's row keys, families and cell codecs.
- ``reads``: the real-time reads (segments by any id, connections, linked ids, masters, whole
  profiles), each a stated number of HBase round trips, and the throttled expiry purge.
- ``cli`` and ``http_api``: ``profiles profile ...`` and the ``/v1/profiles`` endpoints over
  ``reads``.
"""
