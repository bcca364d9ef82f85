"""The service's outermost layer: what every request meets before its route reads anything, and
what every response carries.

* **The key before the body.** A route that needs a tenant's or an admin's ``X-API-Key`` refuses
  a missing or wrong one (401; a tenant's key on an admin route 403) as soon as the headers are
  in, before a byte of the body is read: FastAPI reads a declared body before it runs a route's
  dependencies, so an unauthenticated client could otherwise make the service hold any body it
  sends. The requirement is read from the route's own dependencies (``tenant_dependency``,
  ``admin_dependency``), so the documentation and this check cannot disagree.
* **A bound on every body.** A body announced (``Content-Length``) above the route's bound is a
  413 before it is read; the bound is the route's ``json_body`` limit, and a route without one
  takes no body. A refusal sent before the body was read closes the connection, so the rest of
  the body is never drained.
* **Security headers** on every response (JSON, errors, static files, the builder page, the
  docs), each kept when the response sets its own: a Content-Security-Policy that lets an API
  answer load nothing (pages set theirs), ``X-Content-Type-Options: nosniff``,
  ``Referrer-Policy: no-referrer``, ``X-Frame-Options: DENY``.
* **Metrics** of every request (``metrics``), labelled by route template, never by path.

It wraps the whole application, outside Starlette's error middleware, so that an unforeseen
500 is also counted and carries the headers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.routing import RouteContext, iter_route_contexts
from starlette.routing import BaseRoute, Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from profile_store.service import metrics
from profile_store.service.conventions import API_KEY_HEADER, error_response, key_refusal
from profile_store.service.tenants import Tenants

UNMATCHED = metrics.UNMATCHED_ROUTE
API_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'"
SECURITY_HEADERS = {
    "content-security-policy": API_CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}


@dataclass(frozen=True)
class RouteRule:
    """What the edge enforces for one route: ``key`` is ``"tenant"``, ``"admin"`` or None."""

    template: str
    key: str | None = None
    max_body: int = 0


def _dependency_calls(dependant: Any) -> Iterator[Any]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _dependency_calls(sub)


def route_rule(route: RouteContext) -> RouteRule:
    """The rule of ``route``, from the markers its dependencies carry (``requires_key`` on the
    key dependencies, ``max_bytes`` on ``json_body``)."""
    if isinstance(route.original_route, Mount):
        return RouteRule(f"{route.path}/{{path}}")
    template = getattr(route, "path", UNMATCHED)
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return RouteRule(template)
    key, max_body = None, 0
    for call in _dependency_calls(dependant):
        key = getattr(call, "requires_key", None) or key
        max_body = max(max_body, getattr(call, "max_bytes", 0))
    return RouteRule(template, key, max_body)


class ServiceEdge:
    """The ASGI application in front of ``app`` (see the module docstring)."""

    def __init__(self, app: ASGIApp, routes: list[BaseRoute], tenants: Tenants) -> None:
        self.app = app
        self.routes = [(route, route_rule(route)) for route in iter_route_contexts(routes)]
        self.tenants = tenants

    def _match(self, scope: Scope) -> tuple[RouteRule, bool]:
        """The rule of the route the request reaches, and whether its method matches too."""
        partial = None
        for route, rule in self.routes:
            match, _ = route.matches(scope)
            if match == Match.FULL:
                return rule, True
            if match == Match.PARTIAL and partial is None:
                partial = rule
        return partial or RouteRule(UNMATCHED), False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        rule, full = self._match(scope)
        method = scope["method"]
        status = 500
        received = 0

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            return message

        async def secured_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = _with_security_headers(message.get("headers", []))
            elif message["type"] == "http.response.body":
                metrics.RESPONSE_BODY_BYTES.labels(rule.template).inc(len(message.get("body", b"")))
            await send(message)

        metrics.IN_FLIGHT.inc()
        try:
            refusal = self._refusal(scope, rule) if full and method != "OPTIONS" else None
            if refusal is not None:
                await refusal(scope, receive, secured_send)
            else:
                await self.app(scope, counted_receive, secured_send)
        finally:
            metrics.IN_FLIGHT.dec()
            metrics.REQUEST_BODY_BYTES.labels(rule.template).inc(received)
            metrics.record_answer(rule.template, method, status, time.perf_counter() - started)

    def _refusal(self, scope: Scope, rule: RouteRule) -> Any:
        """The response refusing the request before its body is read, or None."""
        headers = _headers(scope)
        announced = headers.get("content-length", "")
        has_body = (announced.isdigit() and int(announced) > 0) or "transfer-encoding" in headers
        closing = {"Connection": "close"} if has_body else {}
        if rule.key is not None:
            refused = key_refusal(self.tenants, rule.key, headers.get(API_KEY_HEADER.lower()))
            if refused is not None:
                return error_response(
                    refused.status,
                    refused.error,
                    refused.message,
                    refused.path,
                    {**(refused.headers or {}), **closing},
                )
        if announced.isdigit() and int(announced) > rule.max_body:
            message = (
                f"the body exceeds {rule.max_body} bytes"
                if rule.max_body
                else f"{scope['method']} {rule.template} takes no body"
            )
            return error_response(413, "body_too_large", message, "$", closing)
        return None


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name; a repeated header counts once, as its first
    value (as Starlette's ``Request.headers.get`` reads it)."""
    found: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def _with_security_headers(headers: Any) -> list[tuple[bytes, bytes]]:
    present = {name.lower() for name, _ in headers}
    extra = [
        (name.encode(), value.encode())
        for name, value in SECURITY_HEADERS.items()
        if name.encode() not in present
    ]
    return [*headers, *extra]


def install_edge(app: FastAPI, tenants: Tenants) -> None:
    """Put ``ServiceEdge`` in front of ``app``'s whole middleware stack (built at the first
    request, when every route is in place)."""
    build = app.build_middleware_stack

    def build_with_edge() -> ASGIApp:
        return ServiceEdge(build(), list(app.routes), tenants)

    # Starlette builds the stack lazily through this method: wrapping it is the hook.
    app.build_middleware_stack = build_with_edge  # type: ignore[method-assign]
