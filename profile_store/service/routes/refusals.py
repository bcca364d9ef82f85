"""The 422 of a valid query the sketches cannot answer: its exact causes and the range that can
be answered instead, in the body (the builder page shows them beside the criterion)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from profile_store.audiences.answerable import REASONS, UnanswerableQuery
from profile_store.audiences.query import QueryError
from profile_store.service.conventions import ApiError, ErrorResponse


class UnanswerableCause(BaseModel):
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
            "`window_days` and the rule's limits (`max_distinct`, `max_distinct_ratio`, "
            "`few_values`)."
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
                }
            ]
        }
    )

    causes: list[UnanswerableCause] = Field(
        default_factory=list, description="Every reason some day of the refused leaf is refused."
    )
    answerable_range: DateRange | None = Field(
        default=None,
        description=(
            "The range proposed for the refused leaf: the largest run of answerable days inside "
            "the asked range, else the nearest answerable range of the same length (within 31 "
            "days); null when there is none."
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
