"""The suppression list of forgotten ids: written by erasure, read by ingest and compaction.

It sits below every domain that reads it, so that ingest and the profiles know what was
forgotten without depending on how a person is forgotten.
"""
