"""The audience builder page at ``/``: static files shipped in the package.

Plain HTML, CSS and JavaScript (no framework, nothing fetched from a CDN, no Node.js to build
or run), talking to the same service's JSON API with the API key the user enters. The page is
served with a Content-Security-Policy that allows only this origin, so a value shown on it can
never load or run anything else.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).with_name("builder_static")
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


def install_builder_page(app: FastAPI) -> None:
    app.mount("/builder", StaticFiles(directory=STATIC), name="builder")

    @app.get("/", include_in_schema=False)
    def builder_page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        """The page's icon where browsers look for it without a link (an SVG: no binary)."""
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")
