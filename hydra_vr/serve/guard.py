"""The server's front door, as plain ASGI: bearer token and request-size checks before any parsing.

Checked before FastAPI reads a body, so an oversized upload is refused from its headers alone and
is never spooled to disk. An upload without ``Content-Length`` is refused (411): its size could
not be bounded before reading it.
"""

from __future__ import annotations

import hmac
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from hydra_vr.serve.images import human_size

# Paths anyone may fetch: the page shell and its files hold no data, and the API description none either.
DOCS_STATIC = "/static-docs"  # the OpenAPI pages' own scripts (fastapi-offline)
PUBLIC_PATHS = ("/", "/favicon.ico", "/docs", "/docs/oauth2-redirect", "/openapi.json", "/redoc")
PUBLIC_PREFIXES = ("/static/", DOCS_STATIC + "/")
FORM_OVERHEAD = 64 * 1024  # room for the form's text fields and multipart boundaries beside the image


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def token_matches(header: str, token: str) -> bool:
    scheme, _, value = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


class GuardMiddleware:
    def __init__(self, app: ASGIApp, *, token: str | None, max_upload_bytes: int) -> None:
        self.app = app
        self.token = token
        self.max_body = max_upload_bytes + FORM_OVERHEAD

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> JSONResponse | None:
        headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
        # CORS preflights carry no credentials by design and return no data.
        if self.token and scope["method"] != "OPTIONS" and not is_public(scope["path"]):
            if not token_matches(headers.get(b"authorization", b"").decode("latin-1"), self.token):
                return _error(401, "this server needs a bearer token: send 'Authorization: Bearer TOKEN'",
                              {"WWW-Authenticate": "Bearer"})
        if scope["method"] in ("POST", "PUT", "PATCH"):
            raw = headers.get(b"content-length")
            if raw is None:
                chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
                if chunked:
                    return _error(411, "send the upload with a Content-Length header")
            else:
                try:
                    length = int(raw)
                except ValueError:
                    return _error(400, "the Content-Length header is not a number")
                if length > self.max_body:
                    return _error(413, f"the request is {human_size(length)}; uploads are limited to "
                                       f"{human_size(self.max_body - FORM_OVERHEAD)}")
        return None


def _error(status: int, detail: str, headers: dict[str, Any] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)
