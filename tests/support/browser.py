"""Headless Chromium driven over the DevTools protocol, and a stand-in site for the verifier page.

One Chromium process serves a whole test module: `Browser.open` loads a page and waits until the page marks
`<body data-ready="true">`, `evaluate` runs a script (awaiting its promise) and returns its JSON value, and
`screenshot` renders the full page at a given width. The protocol runs over `--remote-debugging-pipe`
(file descriptors 3 and 4), so no port is opened and nothing is downloaded.

`Site` serves what the service serves for the page: `/verify`, `/verify.js` and the modules it imports,
`/verify/*.js` (the page's parts) and `/pokna-verify/*.js` (the checking core, from pokna_verify/js), as
pokna.dealer.link_routes does; the same files under `/static/` (the page as plain static files, laid out as
docs/fairness.md says); `/v1/fairness/keys`, and `/v1/fairness/proofs/{token}` from a dict of link
documents, plus any JSON a test publishes under `/test/`. It binds 127.0.0.1, a secure
context, so WebCrypto is available.

Without a Chromium binary the tests skip loudly, and under CI=true they fail instead.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import pokna
import pokna_verify
from pokna.dealer.link_routes import VERIFY_PAGE_POLICY

STATIC_ROOT = Path(pokna.__file__).parent / "static"
CORE_ROOT = Path(pokna_verify.__file__).parent / "js"
# The folders the page's files are served from, by their path on the site: the page, its parts, the core.
PAGE_FOLDERS = {"": STATIC_ROOT, "verify": STATIC_ROOT / "verify", "pokna-verify": CORE_ROOT}
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking")
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8"}


def chromium_binary() -> str:
    binary = os.environ.get("POKNA_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        reason = (
            "!!! BROWSER VERIFIER NOT TESTED: no Chromium binary (install it with `apt-get install -y chromium` "
            "or set POKNA_CHROMIUM) !!!"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return binary


class BrowserError(Exception):
    pass


class Browser:
    """One headless Chromium and one tab, spoken to over the DevTools pipe."""

    def __init__(self, binary: str, profile: Path, extra_flags: tuple[str, ...] = ()) -> None:
        to_chromium_read, self._write_fd = os.pipe()
        self._read_fd, from_chromium_write = os.pipe()
        command = [
            binary,
            *CHROMIUM_FLAGS,
            *extra_flags,
            "--disable-component-update",
            "--no-first-run",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        # The pipe protocol wants fds 3 (commands in) and 4 (answers out) in the child: a small exec shim
        # moves them there (a shell cannot name fds above 9, and preexec_fn is unsafe with threads running).
        shim = (
            "import fcntl, os, sys; pipes = [fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[1:3]]; "
            "os.dup2(pipes[0], 3); os.dup2(pipes[1], 4); os.execv(sys.argv[3], sys.argv[3:])"
        )
        self._process = subprocess.Popen(
            [sys.executable, "-c", shim, str(to_chromium_read), str(from_chromium_write), *command],
            pass_fds=(to_chromium_read, from_chromium_write),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chromium_read)
        os.close(from_chromium_write)
        self._buffer = b""
        self._next_id = 0
        self.console: list[str] = []
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        self.call("Runtime.enable")
        self.call("Page.enable")
        self.width = 0

    def _call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 60,
    ) -> Any:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._write_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                answer = json.loads(raw)
                if answer.get("method") == "Runtime.consoleAPICalled":
                    args = answer["params"].get("args", [])
                    self.console.append(
                        " ".join(str(arg.get("value", arg.get("description", ""))) for arg in args)
                    )
                if answer.get("method") == "Runtime.exceptionThrown":
                    self.console.append(json.dumps(answer["params"]["exceptionDetails"])[:2000])
                if answer.get("id") == self._next_id:
                    if "error" in answer:
                        raise BrowserError(f"{method}: {answer['error']}")
                    return answer["result"]
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"{method}: no answer within {timeout} s")
            ready, _, _ = select.select([self._read_fd], [], [], left)
            if ready:
                chunk = os.read(self._read_fd, 1 << 20)
                if not chunk:
                    raise BrowserError(f"{method}: Chromium closed the pipe")
                self._buffer += chunk

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60) -> Any:
        return self._call(method, params, self._session, timeout)

    def evaluate(self, expression: str, timeout: float = 60) -> Any:
        """The JSON value of `expression` in the page, after awaiting it if it is a promise."""
        result = self.call(
            "Runtime.evaluate",
            {
                "expression": expression,
                "awaitPromise": True,
                "returnByValue": True,
                "timeout": timeout * 1000,
            },
            timeout=timeout + 5,
        )
        if "exceptionDetails" in result:
            raise BrowserError(json.dumps(result["exceptionDetails"])[:3000])
        return result["result"].get("value")

    def set_width(self, width: int, height: int = 900) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
        )
        self.width = width

    def open(self, url: str, timeout: float = 60) -> None:
        """Load `url` and wait until the page says it is done (`body[data-ready=true]`)."""
        self.evaluate("document.body && delete document.body.dataset.ready")
        self.call("Page.navigate", {"url": url})
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.evaluate(
                "document.readyState === 'complete' && document.body && document.body.dataset.ready === 'true'"
            )
            if state is True:
                return
            time.sleep(0.05)
        raise BrowserError(f"the page did not get ready within {timeout} s; console: {self.console[-5:]}")

    def screenshot(self, path: Path) -> None:
        """The whole page (not only the viewport) as a PNG at the current width."""
        height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)"))
        shot = self.call(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1},
            },
        )
        path.write_bytes(base64.b64decode(shot["data"]))

    def upload(self, selector: str, path: Path) -> None:
        """Choose `path` in the file input `selector`, as a player picking a file would (fires `change`)."""
        root = self.call("DOM.getDocument")["root"]["nodeId"]
        node = self.call("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        self.call("DOM.setFileInputFiles", {"files": [str(path)], "nodeId": node})

    def close(self) -> None:
        with suppress(BrowserError, OSError):
            self._call("Browser.close", timeout=10)
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._write_fd)
        os.close(self._read_fd)


OFFLINE_FLAGS = ("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",)
"""No name resolves (a CDN, web fonts): the browser reaches 127.0.0.1 and nothing else."""


@contextmanager
def browser_session(extra_flags: tuple[str, ...] = ()) -> Iterator[Browser]:
    binary = chromium_binary()
    with tempfile.TemporaryDirectory(prefix="pokna-chromium-") as profile:
        browser = Browser(binary, Path(profile), extra_flags)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Site:
    """What the page can fetch. Tests fill `links`, `key_ring` and `files` before loading a page."""

    key_ring: dict[str, Any] | None = None
    links: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, Any] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    origin: str = ""

    def answer(self, path: str) -> tuple[int, str, bytes]:
        self.requests.append(path)
        file = page_file(path)
        if file is not None:
            return 200, CONTENT_TYPES[file.suffix], file.read_bytes()
        if path == "/v1/fairness/keys" and self.key_ring is not None:
            return _json(200, self.key_ring)
        if path.startswith("/v1/fairness/proofs/"):
            link = self.links.get(path[len("/v1/fairness/proofs/") :])
            if link is not None:
                return _json(200, link)
            problem = {
                "type": "about:blank",
                "title": "Not Found",
                "status": 404,
                "detail": "no such proof link",
            }
            return 404, "application/problem+json", json.dumps(problem).encode()
        if path.startswith("/test/") and path[len("/test/") :] in self.files:
            return _json(200, self.files[path[len("/test/") :]])
        return 404, "text/plain", b"not found"


def page_file(path: str) -> Path | None:
    """The file of the page served at `path`: `/verify` is the page, `/verify.js`, `/verify/*.js` and
    `/pokna-verify/*.js` its modules; under `/static/` the same files, and the page as `verify.html`."""
    if path == "/verify":
        return STATIC_ROOT / "verify.html"
    plain = path.startswith("/static/")
    folder, _, name = path.removeprefix("/static" if plain else "").removeprefix("/").rpartition("/")
    root = PAGE_FOLDERS.get(folder)
    if (
        root is None
        or not name.endswith((".js", ".html"))
        or (not plain and folder == "" and name != "verify.js")
    ):
        return None
    file = root / name
    return file if file.is_file() else None


def _json(status: int, document: Any) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(document).encode()


@contextmanager
def serving(site: Site) -> Iterator[Site]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            status, content_type, body = site.answer(path)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if path == "/verify":  # the page under the service's own header policy, as it is served
                self.send_header("Content-Security-Policy", VERIFY_PAGE_POLICY)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    site.origin = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
