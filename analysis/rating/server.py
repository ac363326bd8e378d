"""The HTTP face of a rating session: token-guarded, small bodies, nothing served by path.

Every URL starts with the session token (``/<token>/...``), so relative links in the page carry it
and a request without it is refused with 403 before any routing. Assets come from a fixed
in-memory table and clips from the opaque-token map, so no request can name a file.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from aiohttp import web
from jinja2 import Environment, select_autoescape

from voice_audit.analysis.rating.blinding import RATER_RE, new_token, same_token
from voice_audit.analysis.rating.session import LabelError, RatingSession

MAX_BODY = 16 * 1024
BODY_TIMEOUT_S = 10.0
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; media-src 'self'; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Resource-Policy": "same-origin",
}
ASSETS = {"app.js": "text/javascript", "app.css": "text/css"}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _package_text(folder: str, name: str) -> str:
    return resources.files("voice_audit.analysis.rating").joinpath(folder, name).read_text(encoding="utf-8")


def _plain(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text, content_type="text/plain")


def _secure(resp: web.StreamResponse) -> web.StreamResponse:
    for k, v in SECURITY_HEADERS.items():
        resp.headers[k] = v
    return resp


class RatingServer:
    """Builds the aiohttp application for one session and runs it on a loopback port."""

    def __init__(self, session: RatingSession, token: str | None = None) -> None:
        self.session = session
        self.token = token or new_token()
        self._assets = {name: _package_text("static", name) for name in ASSETS}
        env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
        self._page = env.from_string(_package_text("templates", "index.html")).render(task=session.spec.task)
        self._runner: web.AppRunner | None = None
        self.url: str | None = None

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_BODY)
        t = self.token
        app.router.add_get(f"/{t}", self._redirect)
        app.router.add_get(f"/{t}/", self._index)
        app.router.add_get(f"/{t}/static/{{name}}", self._asset)
        app.router.add_get(f"/{t}/api/next", self._next)
        app.router.add_post(f"/{t}/api/label", self._label)
        app.router.add_get(f"/{t}/clip/{{clip}}", self._clip)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Token first, then size; every answer, refusals included, gets the security headers."""
        path = request.raw_path.split("?", 1)[0]
        first = path[1:].split("/", 1)[0] if path.startswith("/") else ""
        if not same_token(first, self.token):
            return _secure(_plain(403, "forbidden"))
        if request.content_length is not None and request.content_length > MAX_BODY:
            return _secure(_plain(413, "request body too large"))
        try:
            resp = await handler(request)
        except web.HTTPException as exc:
            resp = _plain(exc.status, exc.reason)
        return _secure(resp)

    async def _redirect(self, request: web.Request) -> web.StreamResponse:
        target = f"/{self.token}/" + (f"?{request.query_string}" if request.query_string else "")
        return web.Response(status=302, headers={"Location": target})

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.Response(text=self._page, content_type="text/html", charset="utf-8")

    async def _asset(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name not in self._assets:
            return _plain(404, "not found")
        return web.Response(text=self._assets[name], content_type=ASSETS[name], charset="utf-8")

    async def _next(self, request: web.Request) -> web.StreamResponse:
        rater = request.query.get("rater", "")
        if not RATER_RE.match(rater):
            return _plain(400, "rater id: 1-40 letters, digits, '.', '_' or '-'")
        return web.json_response(self.session.next_payload(rater))

    async def _label(self, request: web.Request) -> web.StreamResponse:
        if request.content_type != "application/json":
            return _plain(415, "send application/json")
        async with asyncio.timeout(BODY_TIMEOUT_S):
            raw = await request.read()
        try:
            body: Any = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return _plain(400, "invalid JSON")
        if not isinstance(body, dict):
            return _plain(400, "expected a JSON object")
        rater, clip, plays = body.get("rater"), body.get("clip"), body.get("plays", 0)
        if not isinstance(rater, str) or not RATER_RE.match(rater) or not isinstance(clip, str):
            return _plain(400, "rater and clip are required")
        if not isinstance(plays, int) or isinstance(plays, bool):
            return _plain(400, "plays must be an integer")
        try:
            await self.session.submit(rater, clip, body.get("answer"), plays)
        except LabelError as exc:
            return _plain(exc.status, str(exc))
        return web.json_response({"ok": True})

    async def _clip(self, request: web.Request) -> web.StreamResponse:
        data = await self.session.clip_bytes(request.match_info["clip"])
        if data is None:
            return _plain(404, "not found")
        return _ranged(request, data, "audio/wav")

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve in the running loop; returns the URL with the token (port 0 picks a free port)."""
        self._runner = web.AppRunner(
            self.app(),
            access_log=None,
            keepalive_timeout=15.0,
            max_line_size=4096,
            max_field_size=4096,
            shutdown_timeout=5.0,
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound = int(self._runner.addresses[0][1]) if self._runner.addresses else port
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{bound}/{self.token}/"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def _ranged(request: web.Request, data: bytes, content_type: str) -> web.Response:
    """Single byte-range support, so the browser's media element can seek and replay."""
    headers = {"Accept-Ranges": "bytes"}
    rng = request.headers.get("Range", "")
    if rng.startswith("bytes=") and "," not in rng:
        start_s, _, end_s = rng[6:].partition("-")
        try:
            if start_s:
                start = int(start_s)
                end = min(int(end_s), len(data) - 1) if end_s else len(data) - 1
            else:
                start, end = max(0, len(data) - int(end_s)), len(data) - 1
        except ValueError:
            start, end = -1, -1
        if not 0 <= start <= end < len(data):
            return web.Response(status=416, headers={"Content-Range": f"bytes */{len(data)}"})
        headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        return web.Response(
            status=206, body=data[start : end + 1], content_type=content_type, headers=headers
        )
    return web.Response(body=data, content_type=content_type, headers=headers)
