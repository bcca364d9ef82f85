"""Identity quality against an answer key: pairwise precision and recall, and B-cubed F1.

*Precision*: of the pairs of profiles put in one component, the share that are one person.
*Recall* (of the deterministic rules): of the pairs of one person that the evidence in the lake
can link — both sent the person's own login, or both the person's own email hash, or each
reaches a profile that sent both — the share put in one component. Evidence is what the lake
holds up to the day (the key tables), so recall does not count links that no data allows yet.
*B-cubed* (Bagga & Baldwin): per profile, the overlap of its component with its person over
each; averaged over every profile seen, against the whole person (reported, not gated).

Spark joins the profiles seen with the answer key and the evidence; the counts are taken in
the driver from that one row per profile: the answer key is one file the generator wrote from
memory, so the rows are as many as the generator held. Pairs in a group of n are n(n-1)/2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from profile_store.identity.rules import MEMBER_ID

EMAIL_KEY = "email_sha256"


@dataclass(frozen=True)
class IdentityQuality:
    profiles: int
    predicted_pairs: int
    true_predicted_pairs: int
    linkable_pairs: int
    linked_linkable_pairs: int
    bcubed_precision: float
    bcubed_recall: float

    @property
    def precision(self) -> float:
        return self.true_predicted_pairs / self.predicted_pairs if self.predicted_pairs else 1.0

    @property
    def recall(self) -> float:
        return self.linked_linkable_pairs / self.linkable_pairs if self.linkable_pairs else 1.0

    @property
    def bcubed_f1(self) -> float:
        p, r = self.bcubed_precision, self.bcubed_recall
        return 2 * p * r / (p + r) if p + r else 0.0


def identity_quality(
    assignment: DataFrame, seen: DataFrame, truth: DataFrame, key_history: DataFrame
) -> IdentityQuality:
    """``assignment`` (profile, master) of linked profiles; ``seen`` (profile) every profile up
    to the day; ``truth`` (user_id, person_id, member_id, email_sha256); ``key_history``
    (key_type, key, profile) up to the day."""
    people = truth.select(
        F.col("user_id").alias("profile"), "person_id", "member_id", "email_sha256"
    )
    profiles = (
        seen.select("profile")
        .distinct()
        .join(people, "profile")
        .join(assignment.select("profile", "master"), "profile", "left")
        .withColumn("master", F.coalesce("master", "profile"))
    )
    evidence = key_history.groupBy("profile").agg(
        F.collect_set(F.when(F.col("key_type") == MEMBER_ID, F.col("key"))).alias("logins"),
        F.collect_set(F.when(F.col("key_type") == EMAIL_KEY, F.col("key"))).alias("emails"),
    )
    profiles = (
        profiles.join(evidence, "profile", "left")
        .withColumn(
            "login",
            F.coalesce(F.array_contains("logins", F.col("member_id")), F.lit(False)),
        )
        .withColumn(
            "email",
            F.coalesce(F.array_contains("emails", F.col("email_sha256")), F.lit(False)),
        )
        .select("person_id", "master", "login", "email")
    )
    return measure(profiles.toArrow().to_pandas())


def _pairs(sizes: pd.Series) -> int:
    """Pairs within groups of these sizes: n(n-1)/2 each."""
    return int((sizes * (sizes - 1) // 2).sum())


def measure(profiles: pd.DataFrame) -> IdentityQuality:
    """The figures from one row per profile (person_id, master, login, email)."""
    count = len(profiles)
    if count == 0:
        return IdentityQuality(0, 0, 0, 0, 0, 1.0, 1.0)
    size = profiles.groupby("master")["person_id"].transform("size")
    person_size = profiles.groupby("person_id")["master"].transform("size")
    cells = profiles.assign(size=size, person_size=person_size).groupby(
        ["master", "person_id"], sort=False
    )
    n = cells.size()
    first = cells[["size", "person_size"]].first()
    bridged = (
        (profiles["login"] & profiles["email"]).groupby(profiles["person_id"]).transform("max")
    )
    group = profiles["person_id"].where(
        bridged, profiles["person_id"] + np.where(profiles["login"], "|login", "|email")
    )
    linkable = profiles.assign(group=group)[profiles["login"] | profiles["email"]]
    return IdentityQuality(
        profiles=count,
        predicted_pairs=_pairs(profiles.groupby("master").size()),
        true_predicted_pairs=_pairs(n),
        linkable_pairs=_pairs(linkable.groupby("group").size()),
        linked_linkable_pairs=_pairs(linkable.groupby(["group", "master"]).size()),
        bcubed_precision=float((n * n / first["size"]).sum()) / count,
        bcubed_recall=float((n * n / first["person_size"]).sum()) / count,
    )
