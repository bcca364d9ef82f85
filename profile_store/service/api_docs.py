"""The service's interactive documentation, served from this machine.

FastAPI's default ``/docs`` page loads Swagger UI's script and stylesheet from a CDN, so it is
blank wherever that CDN is not reachable (an offline laptop, a locked-down bidder network). The
same Swagger UI release ships in the ``swagger-ui-bundle-v2`` package; its files are served
under ``/docs/assets`` and the page points there. ReDoc (CDN only) is not served. ``GET /`` is
the audience builder page where the service has one, else a redirect here.

The page's Content-Security-Policy allows scripts from this origin and the one inline script
that starts Swagger UI, by its SHA-256 digest: nothing injected into the page could run.
"""

from __future__ import annotations

import base64
import hashlib
import re

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

DOCS_PATH = "/docs"
ASSETS_PATH = "/docs/assets"


def install_offline_docs(app: FastAPI) -> None:
    """Serve ``/docs`` from the installed Swagger UI; ``app`` must have ``docs_url=None``."""
    if app.docs_url is not None:
        raise ValueError("create the app with docs_url=None: /docs is served here")
    app.mount(ASSETS_PATH, StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")

    page = get_swagger_ui_html(
        openapi_url=app.openapi_url or "/openapi.json",
        title=f"{app.title} - API docs",
        swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS_PATH}/favicon-32x32.png",
    )
    headers = {"Content-Security-Policy": docs_content_security_policy(bytes(page.body).decode())}

    @app.get(DOCS_PATH, include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(page.body, headers=headers)


_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def docs_content_security_policy(html: str) -> str:
    """This origin only, plus the page's inline scripts by digest."""
    digests = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"
        for script in _INLINE_SCRIPT.findall(html)
    )
    return (
        f"default-src 'self'; script-src 'self' {digests}; img-src 'self' data:; "
        "frame-ancestors 'none'"
    )
