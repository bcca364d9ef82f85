"""The 422 of a valid query the sketches cannot answer: the exact causes of every refused leaf
and the range every leaf can answer instead, in the body (each cause names its leaf, so that a
client can show it beside its criterion)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from profile_store.audiences.answerable import NEAREST_REACH_DAYS, REASONS, UnanswerableQuery
from profile_store.audiences.query import QueryError
from profile_store.service.conventions import ApiError, ErrorResponse


class UnanswerableCause(BaseModel):
    leaf: str = Field(
        description="JSON path of the leaf (criterion) this cause refuses, e.g. "
        "`$.intersection[1]`; `$` for a query of one leaf."
    )
    reason: str = Field(
        description=(
            "`not_built`: the day is not built yet; `never_seen`: no event carried the attribute "
            "in the trimming window; `too_many_values`: trimmed, more distinct values than the "
            "rule's `max_distinct`; `values_too_distinct`: trimmed, distinct values / "
            "appearances not below `max_distinct_ratio` with more than `few_values` values "
            "(an id-like attribute, or a window too short to tell); `not_kept`: trimmed or never "
            "seen, on a day built before the sketches recorded which."
        ),
        json_schema_extra={"enum": list(REASONS)},
    )
    attribute: str | None = Field(description="The filtered attribute; null for `not_built`.")
    days: list[str] = Field(description="The days (YYYY-MM-DD) this cause refuses.")
    measured: list[dict] = Field(
        description=(
            "For a trimmed attribute, per day: `day`, `distinct_values`, `appearances`, "
            "`window_days` (the days of the trimming window that were merged: fewer than 7 "
            "near the lake's first day) and the rule's limits (`max_distinct`, "
            "`max_distinct_ratio`, `few_values`)."
        )
    )


class DateRange(BaseModel):
    date_from: str = Field(description="First day, YYYY-MM-DD.")
    date_to: str = Field(description="Last day, inclusive.")


class UnanswerableResponse(ErrorResponse):
    """A valid query the sketches cannot answer: why, day by day, and what can be answered."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "error": "unanswerable_query",
                    "message": "attribute 'os' of td.14/click cannot be filtered on: trimmed "
                    "on 2017-11-06 (...); the sketches can answer 2017-11-07 .. 2017-11-09",
                    "path": "$.attributes.os",
                    "causes": [
                        {
                            "leaf": "$",
                            "reason": "values_too_distinct",
                            "attribute": "os",
                            "days": ["2017-11-06"],
                            "measured": [
                                {
                                    "day": "2017-11-06",
                                    "distinct_values": 180,
                                    "appearances": 900,
                                    "window_days": 1,
                                    "max_distinct": 100,
                                    "max_distinct_ratio": 0.1,
                                    "few_values": 20,
                                }
                            ],
                        }
                    ],
                    "answerable_range": {"date_from": "2017-11-07", "date_to": "2017-11-09"},
                    "answerable_shift_days": None,
                }
            ]
        }
    )

    causes: list[UnanswerableCause] = Field(
        default_factory=list,
        description="Every reason some day of a leaf is refused, for every refused leaf, in "
        "the order of the leaves.",
    )
    answerable_range: DateRange | None = Field(
        default=None,
        description=(
            "What every leaf of the query can answer. When the leaves share one range: the "
            "largest run of days inside it that no leaf refuses, else the nearest range of the "
            f"same length (within {NEAREST_REACH_DAYS} days) that every leaf answers. When the "
            "leaves have different ranges: the span of the whole query moved by "
            "`answerable_shift_days`. Null when there is none."
        ),
    )
    answerable_shift_days: int | None = Field(
        default=None,
        description=(
            "When `answerable_range` is the whole query moved: by how many days (negative: "
            "earlier); every leaf's dates move by it. Null when the range is a part of the "
            "asked one, or when there is no proposal."
        ),
    )


def unanswerable_doc(description: str) -> dict:
    """An OpenAPI ``responses`` entry whose body is ``UnanswerableResponse``."""
    return {"model": UnanswerableResponse, "description": description}


def unanswerable(exc: QueryError, path: str, message: str | None = None) -> ApiError:
    """The 422 of ``exc`` at ``path`` (``message``: another wording of its problem), with its
    causes and proposed range when it has them."""
    details = exc.details() if isinstance(exc, UnanswerableQuery) else None
    return ApiError(422, "unanswerable_query", message or exc.problem, path, details=details)
