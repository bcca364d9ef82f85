"""Identity quality against an answer key: pairwise precision and recall, and B-cubed F1.

*Precision*: of the pairs of profiles put in one component, the share that are one person.
*Recall* (of the deterministic rules): of the pairs of one person that the evidence in the lake
can link — both sent the person's own login, or both the person's own email hash, or each
reaches a profile that sent both — the share put in one component. Evidence is what the lake
holds up to the day (the key tables), so recall does not count links that no data allows yet.
*B-cubed* (Bagga & Baldwin): per profile, the overlap of its component with its person over
each; averaged over every profile seen, against the whole person (reported, not gated).

All counts are aggregations in Spark: pairs in a group of n are n(n-1)/2.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
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


def _pairs(count: Column) -> Column:
    return F.coalesce(F.sum(count * (count - 1) / 2), F.lit(0)).cast("long")


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
        .select("profile", "person_id", "master", "login", "email")
        .cache()
    )
    try:
        return _measure(profiles)
    finally:
        profiles.unpersist()


def _measure(profiles: DataFrame) -> IdentityQuality:
    bridged = profiles.groupBy("person_id").agg(
        F.max((F.col("login") & F.col("email")).cast("int")).alias("bridged")
    )
    group = (
        F.when(~F.col("login") & ~F.col("email"), F.lit(None))
        .when(F.col("bridged") == 1, F.col("person_id"))
        .when(F.col("login"), F.concat("person_id", F.lit("|login")))
        .otherwise(F.concat("person_id", F.lit("|email")))
    )
    grouped = profiles.join(bridged, "person_id").withColumn("group", group)
    linkable = grouped.where(F.col("group").isNotNull())
    component = profiles.groupBy("master").agg(F.count(F.lit(1)).alias("size"))
    person = profiles.groupBy("person_id").agg(F.count(F.lit(1)).alias("person_size"))
    cells = (
        profiles.groupBy("master", "person_id")
        .agg(F.count(F.lit(1)).alias("n"))
        .join(component, "master")
        .join(person, "person_id")
    )
    totals = cells.agg(
        _pairs(F.col("n")).alias("true_predicted"),
        F.sum(F.col("n") * F.col("n") / F.col("size")).alias("bcubed_p"),
        F.sum(F.col("n") * F.col("n") / F.col("person_size")).alias("bcubed_r"),
        F.sum("n").alias("profiles"),
    ).first()
    predicted = component.agg(_pairs(F.col("size"))).first()[0]
    linkable_pairs = (
        linkable.groupBy("group").agg(F.count(F.lit(1)).alias("n")).agg(_pairs(F.col("n")))
    ).first()[0]
    linked = (
        linkable.groupBy("group", "master")
        .agg(F.count(F.lit(1)).alias("n"))
        .agg(_pairs(F.col("n")))
        .first()[0]
    )
    count = int(totals["profiles"] or 0)
    return IdentityQuality(
        profiles=count,
        predicted_pairs=int(predicted),
        true_predicted_pairs=int(totals["true_predicted"]),
        linkable_pairs=int(linkable_pairs),
        linked_linkable_pairs=int(linked),
        bcubed_precision=float(totals["bcubed_p"] or 0) / count if count else 1.0,
        bcubed_recall=float(totals["bcubed_r"] or 0) / count if count else 1.0,
    )
