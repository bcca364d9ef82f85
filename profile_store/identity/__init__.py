"""The identity graph: bridging keys -> weighted edges -> connected components with masters.

- ``rules``: which keys bridge profiles, with what weight, and the super-node guard settings.
- ``keys``: one day of events -> bridging keys per profile, and per-profile first/last seen.
- ``super_nodes``: the blocklist and the whole-history profile count per key (quarantine).
- ``edges``: clean keys -> star edges to the key's first-seen profile.
- ``components``: connected components in Spark (partition-local contraction), master choice.
- ``contraction``: the numpy/scipy work of one contraction round, run inside ``mapInArrow``.
- ``incremental``: apply one day's edges on top of the previous day's assignment.
"""
