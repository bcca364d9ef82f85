"""Compacted profiles in HBase (seeds 000, 002, 003, 004).

- ``table``: the ``profiles`` table's row keys, families and cell codecs.
"""
