"""``POST /v1/events``: the collector, events in, durable in Kafka before the answer.

```
POST /v1/events   application/json (one event) | application/x-ndjson (one event a line)
  202 {"accepted": n, "rejected": [{"index", "reason"}, ...]}   every accepted event in Kafka
  422 {"error": "no_event_accepted", ..., "rejected": [...]}    nothing accepted
  503 Retry-After                                                Kafka unreachable or too slow
```

Events are checked by ingest's rules (``realtime.collector``); a rejected line comes back with
its position and the quarantine's reason name, and the rest are accepted. A tenant's key sends
its own apps only (another app's event: ``app_not_allowed``); an admin's key any app. Without
Kafka configured (``PROFILES_KAFKA_BOOTSTRAP_SERVERS`` unset when the service started) the
route still checks the events, and answers 503 ``kafka_not_configured`` instead of accepting
any, so a client learns it at once and nothing is lost.
"""

import json
import logging
from collections.abc import Callable
from typing import Annotated, Any

from confluent_kafka import KafkaException
from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from profile_store.event_bus.producer import DeliveryError
from profile_store.events.rules import REASONS
from profile_store.events.schema import JSON_SCHEMA_FILE
from profile_store.realtime.collector import (
    APP_NOT_ALLOWED,
    Collected,
    EventCollector,
    KafkaNotConfigured,
)
from profile_store.service import metrics
from profile_store.service.conventions import ApiError, ErrorResponse, bounded_body, error_doc
from profile_store.service.tenants import Tenant

logger = logging.getLogger(__name__)

EVENTS_PATH = "/v1/events"
MAX_BODY_BYTES = 512 * 1024
RETRY_AFTER_S = 5
JSON = "application/json"
NDJSON = "application/x-ndjson"
_WHAT = "the events"


class RejectedLine(BaseModel):
    """A line that was not accepted, and why."""

    index: int = Field(description="The line's position in the body, from 0 (blank lines count).")
    reason: str = Field(
        description="The quarantine's reason name (" + ", ".join(REASONS[:-1]) + f"), or "
        f"`{APP_NOT_ALLOWED}` for an app the key may not send."
    )
    app_id: str | None = Field(default=None, description=f"For `{APP_NOT_ALLOWED}`: the app.")


class EventsAccepted(BaseModel):
    """Every accepted event is durably in Kafka (acknowledged by all in-sync replicas)."""

    accepted: int = Field(description="Events written to Kafka.")
    rejected: list[RejectedLine] = Field(description="Lines not accepted, in body order.")


class NoEventAccepted(ErrorResponse):
    """Every line was rejected; nothing was written."""

    rejected: list[RejectedLine]


async def _events_body(request: Request) -> bytes:
    return await bounded_body(request, MAX_BODY_BYTES, _WHAT)


# The edge's bound (edge.py), a marker on the function: functions have no declared attributes.
_events_body.max_bytes = MAX_BODY_BYTES  # type: ignore[attr-defined]


def _lines(raw: bytes, content_type: str) -> list[bytes | None]:
    """The body's events: the whole body (JSON) or each line (JSON lines; blank: None)."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == JSON:
        return [raw if raw.strip() else None]
    if media in (NDJSON, "application/jsonl", "application/json-lines"):
        return [line if line.strip() else None for line in raw.split(b"\n")]
    raise ApiError(
        415, "unsupported_media_type", f"send {JSON} (one event) or {NDJSON} (one event a line)"
    )


def _rejections(collected: Collected) -> list[dict[str, Any]]:
    return [
        RejectedLine(index=r.index, reason=r.reason, app_id=r.app_id).model_dump(exclude_none=True)
        for r in collected.rejected
    ]


def _schema() -> dict[str, Any]:
    schema = json.loads(JSON_SCHEMA_FILE.read_text(encoding="utf-8"))
    return {k: v for k, v in schema.items() if not k.startswith("$")}


def events_router(
    collector: EventCollector, current_sender: Callable[..., Tenant | None]
) -> APIRouter:
    """The collector's route (a collector without a producer: 503 once an event is valid)."""
    router = APIRouter(tags=["events"])

    @router.post(
        EVENTS_PATH,
        status_code=202,
        response_model=EventsAccepted,
        summary="Send events (one JSON event, or JSON lines)",
        description=f"At most {MAX_BODY_BYTES} bytes. Each event is checked by the rules of "
        "ingest (the published event schema, ids spelled as ingest spells them) and accepted "
        "events are written to Kafka before the answer. Send the whole body again after a 503: "
        "an event written twice is kept once.",
        responses={
            202: {"description": "Every accepted event is in Kafka; rejected lines listed."},
            400: error_doc("The body holds no event."),
            401: error_doc("Missing or unknown API key."),
            413: error_doc(f"The body exceeds {MAX_BODY_BYTES} bytes (not read)."),
            415: error_doc(f"Not {JSON} or {NDJSON}."),
            422: {"model": NoEventAccepted, "description": "Every line was rejected."},
            503: {
                "model": ErrorResponse,
                "description": "Kafka is not configured, unreachable, or did not acknowledge "
                "every event in time; nothing is answered as accepted. Retry after "
                "`Retry-After` seconds with the whole body.",
                "headers": {"Retry-After": {"schema": {"type": "integer"}}},
            },
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    JSON: {"schema": _schema()},
                    NDJSON: {"schema": {"type": "string"}},
                },
            }
        },
    )
    async def send_events(
        request: Request,
        sender: Annotated[Tenant | None, Depends(current_sender)],
        raw: Annotated[bytes, Depends(_events_body)],
    ) -> Any:
        lines = _lines(raw, request.headers.get("content-type", ""))
        if all(line is None for line in lines):
            raise ApiError(400, "no_events", f"empty body: expected {_WHAT}", "$")
        may_send = None if sender is None else sender.may_query
        try:
            collected = await run_in_threadpool(collector.collect, lines, may_send)
        except KafkaNotConfigured:
            raise ApiError(
                503,
                "kafka_not_configured",
                "the collector has no Kafka: the service started without "
                "PROFILES_KAFKA_BOOTSTRAP_SERVERS",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            ) from None
        except (DeliveryError, KafkaException) as error:
            written, total = _written(error)
            metrics.record_undelivered(total - written)
            logger.warning("collector: Kafka did not take the events: %s", error)
            raise ApiError(
                503,
                "kafka_unavailable",
                f"Kafka did not acknowledge every event ({written} written before the failure); "
                "send the whole body again, an event written twice is kept once",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            ) from None
        metrics.record_collected(
            collected.accepted, collected.rejected_by_reason(), collected.delivery_seconds
        )
        if collected.accepted == 0:
            body = NoEventAccepted(
                error="no_event_accepted",
                message=f"all {len(collected.rejected)} events were rejected",
                path="$",
                rejected=[],
            ).model_dump()
            body["rejected"] = _rejections(collected)
            return JSONResponse(body, status_code=422)
        return JSONResponse(
            {"accepted": collected.accepted, "rejected": _rejections(collected)}, status_code=202
        )

    return router


def _written(error: Exception) -> tuple[int, int]:
    """Of the accepted events, how many Kafka acknowledged before the failure, and how many
    there were (unknown for an error before sending: 0 of 0)."""
    if isinstance(error, DeliveryError):
        return error.total - len(error.failures), error.total
    return 0, 0
