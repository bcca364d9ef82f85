"""What every endpoint of the HTTP service shares: API-key tenants, one error body, HBase failures.

Every error, from any router, has the shape ``{"error": code, "message": text, "path": JSON path
or null}``; FastAPI's own errors (404 route, 405 method, a malformed parameter) are rewritten
into it, so a client parses one shape and never sees a 500 for anything the service foresees.
HBase failures map the same way everywhere: unreachable is 503, an error HBase reports is 502.
"""

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from http import HTTPStatus
from typing import Annotated, Any

from fastapi import FastAPI, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import iter_route_contexts
from fastapi.security import APIKeyHeader
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send
from thriftpy2.thrift import TException
from thriftpy2.transport import TTransportException

from profile_store.service.metrics import record_hbase_error
from profile_store.service.tenants import Tenant, Tenants
from profile_store.settings.definitions import HTTP_BODY_TIMEOUT_SECONDS

logger = logging.getLogger(__name__)

API_KEY_HEADER = "X-API-Key"
NOT_BLANK = "[^" + "".join(f"\\u{c:04x}" for c in range(0x3001) if chr(c).isspace()) + "]"
"""A JSON Schema pattern: some character that is not whitespace to Python's ``str.strip``,
which is how the service tells a blank text (``\\S`` would differ on a few characters)."""
BODY_TIMEOUT_VARIABLE = HTTP_BODY_TIMEOUT_SECONDS.name
DEFAULT_BODY_TIMEOUT_S = HTTP_BODY_TIMEOUT_SECONDS.number_default


class ErrorResponse(BaseModel):
    """Why a request was refused."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "error": "invalid_query",
                    "message": "must be a positive integer",
                    "path": "$.difference[0].intersection[1].min_count",
                }
            ]
        }
    )

    error: str = Field(description="Machine-readable code, e.g. `invalid_query`.")
    message: str = Field(description="What is wrong, for humans.")
    path: str | None = Field(
        default=None, description="JSON path of the offending value in the body, if any."
    )


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        error: str,
        message: str,
        path: str | None = None,
        headers: dict[str, str] | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message
        self.path = path
        self.headers = headers
        self.details = details
        """Fields the body carries beside ``error``, ``message`` and ``path``."""


def printable(text: str) -> str:
    """Echoed input may hold unpaired surrogates, which cannot be encoded as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def error_response(
    status: int,
    error: str,
    message: str,
    path: str | None = None,
    headers: dict[str, str] | None = None,
    details: dict[str, Any] | None = None,
) -> JSONResponse:
    body = ErrorResponse(
        error=error, message=printable(message), path=None if path is None else printable(path)
    )
    return JSONResponse(
        {**body.model_dump(), **(details or {})}, status_code=status, headers=headers
    )


def error_doc(description: str) -> dict[str, Any]:
    """An OpenAPI ``responses`` entry whose body is ``ErrorResponse``."""
    return {"model": ErrorResponse, "description": description}


def hbase_reason(exc: TException) -> str:
    """HBase's own message (e.g. ``TableNotFoundException: sketches``), else the error type."""
    message = getattr(exc, "message", None)
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    return printable(str(message))[:300] if message else type(exc).__name__


@contextlib.contextmanager
def hbase_failures(action: str) -> Iterator[None]:
    """Turn HBase failures during ``action`` into 503 (unreachable) or 502 (HBase's error)."""
    try:
        yield
    except (TTransportException, OSError) as exc:
        logger.warning("HBase unreachable during %s: %r", action, exc)
        record_hbase_error("unavailable")
        raise ApiError(503, "hbase_unavailable", "HBase cannot be reached") from None
    except TException as exc:
        logger.error("HBase error during %s: %r", action, exc)
        record_hbase_error("error")
        raise ApiError(502, "hbase_error", f"HBase error: {hbase_reason(exc)}") from None


def install_error_handlers(app: FastAPI) -> None:
    """Give ``ApiError`` and FastAPI's own errors (route, method, parameters) the error body."""

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return error_response(
            exc.status, exc.error, exc.message, exc.path, exc.headers, exc.details
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        phrase = HTTPStatus(exc.status_code).phrase
        return error_response(
            exc.status_code,
            phrase.lower().replace(" ", "_"),
            str(exc.detail or phrase),
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(RequestValidationError)
    async def request_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        message = f"{where}: {first.get('msg', 'invalid')}"
        return error_response(400, "invalid_request", message, where or None)


def document_request_errors(schema: dict[str, Any]) -> None:
    """Say in ``schema`` (an OpenAPI document) what the service answers to a malformed parameter:
    FastAPI documents it as 422 ``HTTPValidationError``, but ``install_error_handlers`` answers
    400 with the error body."""
    fastapi_error = "#/components/schemas/HTTPValidationError"
    for item in schema.get("paths", {}).values():
        for operation in item.values():
            responses = operation.get("responses", {})
            content = responses.get("422", {}).get("content", {})
            if any(c.get("schema", {}).get("$ref") == fastapi_error for c in content.values()):
                del responses["422"]
                responses.setdefault(
                    "400",
                    {
                        "description": "A parameter is malformed; `path` names it.",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/ErrorResponse"}
                            }
                        },
                    },
                )
    components = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)


def install_options(app: FastAPI) -> None:
    """``OPTIONS`` on a route answers 204 with the route's methods in ``Allow`` (RFC 9110);
    on an unknown path it is the usual 404 body."""
    app.add_middleware(OptionsAnswers, api=app)


class OptionsAnswers:
    """The ``OPTIONS`` answers of ``install_options``, as plain ASGI: every other request passes
    through untouched. (As a ``@app.middleware("http")`` function, every response was streamed
    again through Starlette's memory pipe, and a static file of the docs page could arrive
    empty with a 200 while the machine was busy.)"""

    def __init__(self, app: ASGIApp, api: FastAPI) -> None:
        self.app = app
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "OPTIONS":
            await self.app(scope, receive, send)
            return
        methods: set[str] = set()
        for route in iter_route_contexts(self.api.routes):  # routers' routes too
            match, _ = route.matches(scope)
            if match != Match.NONE:
                methods |= set(getattr(route, "methods", None) or ())
        if methods:
            allow = ", ".join(sorted(methods | {"OPTIONS"}))
            response: Response = Response(status_code=204, headers={"Allow": allow})
        else:
            response = error_response(404, "not_found", "Not Found")
        await response(scope, receive, send)


def body_timeout_s(env: Mapping[str, str] | None = None) -> float:
    """Seconds a request body may take to arrive (``PROFILES_HTTP_BODY_TIMEOUT_SECONDS``)."""
    return HTTP_BODY_TIMEOUT_SECONDS.read(env)


TENANT_KEY = "tenant"
ADMIN_KEY = "admin"
SENDER_KEY = "sender"  # a tenant's key (its own apps) or an admin's (any app)


def key_refusal(tenants: Tenants, required: str, api_key: str | None) -> ApiError | None:
    """Why ``api_key`` may not call a route needing a ``required`` key (``TENANT_KEY`` or
    ``ADMIN_KEY``), or None: 401 missing or unknown, 403 a tenant's key where an admin's is
    needed. An admin's key is no tenant's; ``SENDER_KEY`` takes either."""
    if required in (ADMIN_KEY, SENDER_KEY) and tenants.is_admin(api_key):
        return None
    if tenants.authenticate(api_key) is None:
        return unauthorized(api_key)
    if required == ADMIN_KEY:
        return ApiError(403, "forbidden", "an admin API key is required")
    return None


def unauthorized(api_key: str | None) -> ApiError:
    reason = "unknown API key" if api_key else f"missing {API_KEY_HEADER} header"
    return ApiError(401, "unauthorized", reason, headers={"WWW-Authenticate": "ApiKey"})


def tenant_dependency(tenants: Tenants) -> Callable[..., Tenant]:
    """A FastAPI dependency: the tenant of the request's ``X-API-Key``, else a 401.

    Marked ``requires_key``: the service's edge (``edge``) refuses the same keys before
    the body is read; this dependency gives the route its tenant and documents the key.
    """
    api_key_header = APIKeyHeader(
        name=API_KEY_HEADER,
        auto_error=False,
        description="The tenant's API key: it decides which app_ids an audience query may "
        "name; any tenant's key may read profiles.",
    )

    def current_tenant(api_key: Annotated[str | None, Security(api_key_header)]) -> Tenant:
        tenant = tenants.authenticate(api_key)
        if tenant is None:
            raise unauthorized(api_key)
        return tenant

    # A marker on the function, read by the edge (edge.py): functions have no declared attributes.
    current_tenant.requires_key = TENANT_KEY  # type: ignore[attr-defined]
    return current_tenant


def admin_dependency(tenants: Tenants) -> Callable[..., None]:
    """A FastAPI dependency: the request's ``X-API-Key`` is an admin key (401 unknown or
    missing, 403 a tenant's key); marked ``requires_key`` as ``tenant_dependency`` is."""
    api_key_header = APIKeyHeader(
        name=API_KEY_HEADER,
        auto_error=False,
        description="An operator's key (admin_api_keys in the tenants file).",
    )

    def current_admin(api_key: Annotated[str | None, Security(api_key_header)]) -> None:
        refused = key_refusal(tenants, ADMIN_KEY, api_key)
        if refused is not None:
            raise refused

    # A marker on the function, read by the edge (edge.py): functions have no declared attributes.
    current_admin.requires_key = ADMIN_KEY  # type: ignore[attr-defined]
    return current_admin


def sender_dependency(tenants: Tenants) -> Callable[..., Tenant | None]:
    """A FastAPI dependency for routes that take events: the tenant of a tenant's key (which
    may send its own apps), None for an admin's key (any app), else a 401; marked
    ``requires_key`` as ``tenant_dependency`` is."""
    api_key_header = APIKeyHeader(
        name=API_KEY_HEADER,
        auto_error=False,
        description="A tenant's API key (events of its own apps) or an operator's key "
        "(admin_api_keys: events of any app).",
    )

    def current_sender(api_key: Annotated[str | None, Security(api_key_header)]) -> Tenant | None:
        refused = key_refusal(tenants, SENDER_KEY, api_key)
        if refused is not None:
            raise refused
        return tenants.authenticate(api_key)

    # A marker on the function, read by the edge (edge.py): functions have no declared attributes.
    current_sender.requires_key = SENDER_KEY  # type: ignore[attr-defined]
    return current_sender


def json_object(body: Any, allowed: set[str]) -> dict:
    """``body`` as a JSON object of ``allowed`` fields, else the 400 naming what is wrong."""
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_request", "expected a JSON object", "$")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise ApiError(400, "invalid_request", "unknown field", f"$.{unknown[0]}")
    return body


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


async def bounded_body(request: Request, max_bytes: int, what: str) -> bytes:
    """The request's body, read only up to ``max_bytes``: 413 past it (refused before the whole
    body is read), 408 when it did not arrive within ``body_timeout_s()`` (a client that
    announces more than it sends no longer holds a connection forever), 400 when the client
    disconnected while sending (one log line); ``what`` names the expected body in messages."""
    too_large = ApiError(413, "body_too_large", f"{what} exceeds {max_bytes} bytes", path="$")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    timeout = body_timeout_s()
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    raise too_large
                chunks.append(chunk)
    except TimeoutError:
        logger.info(
            "%s %s: body not received within %g s", request.method, request.url.path, timeout
        )
        raise ApiError(
            408, "request_timeout", f"{what} did not arrive within {timeout:g} s", "$"
        ) from None
    except ClientDisconnect:
        logger.info(
            "%s %s: client disconnected while sending the body", request.method, request.url.path
        )
        raise ApiError(400, "client_disconnected", f"{what} was not sent completely", "$") from None
    return b"".join(chunks)


def json_body(max_bytes: int, what: str) -> Callable[[Request], Awaitable[Any]]:
    """A FastAPI dependency: the body decoded as JSON, read by ``bounded_body``; 400 when it is
    empty, not UTF-8, not JSON, ``NaN``, or nested too deeply."""

    async def body(request: Request) -> Any:
        raw = await bounded_body(request, max_bytes, what)
        if not raw.strip():
            raise ApiError(400, "invalid_json", f"empty body: expected {what}", "$")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ApiError(400, "invalid_json", f"the body is not UTF-8: {exc}", "$") from None
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except RecursionError:
            raise ApiError(400, "invalid_json", "the JSON is nested too deeply", "$") from None
        except ValueError as exc:
            raise ApiError(400, "invalid_json", f"not valid JSON: {exc}", "$") from None

    # The edge's bound (edge.py), a marker on the function: functions have no declared attributes.
    body.max_bytes = max_bytes  # type: ignore[attr-defined]
    return body
