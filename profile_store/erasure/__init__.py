"""Erasure: forget a person everywhere (GDPR art. 17, CCPA), with an audit trail.

``requests``: an erasure request, stored durably in the lake until its erasure completes.
``resolution``: the given ids -> the person's profiles and keys, through the identity graph.
``profiles_table``: the immediate part: the person's rows in the ``profiles`` table deleted.
``erasure_step``: the pending requests carried out together, in one batch.
``batch``: a batch's journal: whom it forgets and which steps are done, for a failed run's resume.
``lake_rewrite``: the erasure step's part: lake partitions and identity/profile state rewritten.
``sketch_retention``: proof that no rebuilt sketch row still retains one of the person's hashes.
``report``: what a request removed, with no personal data in it.
The forgotten ids' salted digests go on the suppression list (``profile_store.suppression``),
which ingest and compaction read.
"""
