"""Open the built documentation site and an `hrl map` HTML report in headless Chromium.

    make docs-check            # builds the site first
    .venv/bin/python experiments/docs/check_site.py --site site --out experiments/results/docs

Serves `--site` over HTTP on localhost, drives Debian's `chromium` through the DevTools
protocol (a small client over `websockets`: no Playwright, no Selenium), opens each page
below, and fails (exit status 1) on:

* a JavaScript exception or a console message of level error on any page opened;
* a request of a page that failed or answered 4xx/5xx (a missing script, style, image; not
  the browser's own request for /favicon.ico, which a page without an icon link triggers);
* a broken relative link or image in any HTML file of the site (checked on the files, every
  page, not only those opened; links to other sites are counted, not fetched: the check runs
  offline).

A screenshot of each page opened goes to `--out`, with `check_site.md`: what was opened,
what was found, the Chromium version.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import http.server
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from websockets.sync.client import connect

PAGES = (
    ("home", "index.html"),
    ("getting-started", "getting-started/index.html"),
    ("concepts-replay", "concepts/replay/index.html"),
    ("guide-jax-loop", "guides/jax-loop/index.html"),
    ("guide-choosing", "guides/choosing/index.html"),
    ("reference-config", "reference/config/index.html"),
    ("reference-api", "reference/api/index.html"),
    ("results", "results/index.html"),
    ("results-mapping", "results/mapping/index.html"),
    ("map-report-html", "results/mapping/map-dqn_cartpole/report.html"),
    ("hardware", "hardware/index.html"),
)


# ---------------------------------------------------------------------------- links


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.targets: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value and ((tag == "a" and name == "href") or
                          (tag in ("img", "script") and name == "src") or
                          (tag == "link" and name == "href")):
                self.targets.append(value)


def broken_links(site: Path) -> tuple[list[str], int, int]:
    """(broken 'page -> target' lines, relative links checked, external links seen)."""
    broken, checked, external = [], 0, 0
    for page in sorted(site.rglob("*.html")):
        parser = _Links()
        parser.feed(page.read_text(errors="replace"))
        for target in parser.targets:
            parts = urlsplit(target)
            if parts.scheme in ("http", "https"):
                external += 1
                continue
            if parts.scheme or target.startswith("#") or not parts.path:
                continue  # mailto:, data:, javascript:, a fragment of this page
            checked += 1
            base = site if parts.path.startswith("/") else page.parent  # 404.html: from root
            path = (base / unquote(parts.path).lstrip("/")).resolve()
            if path.is_dir():
                path = path / "index.html"
            if not path.exists():
                broken.append(f"{page.relative_to(site)} -> {target}")
    return broken, checked, external


# ---------------------------------------------------------------------------- browser


class Browser:
    """Chromium in headless mode, one page target, driven over the DevTools protocol."""

    def __init__(self, executable: str):
        self.profile = tempfile.mkdtemp(prefix="hrl-chromium-")
        self.proc = subprocess.Popen(
            [executable, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
             "--window-size=1280,900", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with status {self.proc.returncode}")
            match = re.search(r"DevTools listening on (ws://\S+)", line)
            url = match.group(1) if match else None
        if url is None:
            raise RuntimeError("chromium did not open its DevTools port within 60 s")
        threading.Thread(target=self._drain, daemon=True).start()
        self._stack = contextlib.ExitStack()
        self.ws = self._stack.enter_context(connect(url, max_size=64 * 2**20))
        self.next_id = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def _drain(self):
        for _ in self.proc.stderr:  # keep Chromium's log pipe from filling up
            pass

    def call(self, method: str, session: bool = False, timeout: float = 60, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)
        raise TimeoutError(method)

    def wait_for(self, method: str, timeout: float = 30) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e.get("method") == method for e in self.events):
                return True
            with contextlib.suppress(TimeoutError):
                self.events.append(json.loads(self.ws.recv(timeout=0.2)))
        return False

    def settle(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                self.events.append(json.loads(self.ws.recv(timeout=0.1)))

    def open(self, url: str) -> list[str]:
        """Navigate, wait for the load event and a moment more; the problems seen."""
        self.events = []
        self.call("Page.navigate", session=True, url=url)
        problems = [] if self.wait_for("Page.loadEventFired") else [f"{url}: no load event"]
        self.settle(1.0)
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                text = details.get("exception", {}).get("description") or details.get("text")
                problems.append(f"exception: {text}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                args = " ".join(str(a.get("value", a.get("description", "")))
                                for a in params.get("args", []))
                problems.append(f"console.error: {args}")
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                entry = params["entry"]
                if urlsplit(entry.get("url", "")).path == "/favicon.ico":
                    continue
                problems.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
            elif method == "Network.loadingFailed" and not params.get("canceled"):
                problems.append(f"request failed: {params.get('errorText')}")
            elif method == "Network.responseReceived":
                response = params["response"]
                if urlsplit(response["url"]).path == "/favicon.ico":
                    continue  # the browser's own guess for a page without an icon link
                if response.get("status", 200) >= 400:
                    problems.append(f"HTTP {response['status']}: {response['url']}")
        return problems

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def version(self) -> str:
        return self.call("Browser.getVersion").get("product", "?")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("Browser.close", timeout=5)
        with contextlib.suppress(Exception):
            self._stack.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


@contextlib.contextmanager
def serve(site: Path):
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", default="site", help="the built site (make docs)")
    parser.add_argument("--out", default="experiments/results/docs")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args(argv)
    site, out = Path(args.site), Path(args.out)
    if not (site / "index.html").exists():
        print(f"check_site: {site}/index.html not found; run `make docs` first", file=sys.stderr)
        return 2
    if shutil.which(args.chromium) is None:
        print(f"check_site: {args.chromium} not found (Debian: apt-get install chromium)",
              file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    broken, checked, external = broken_links(site)
    results = []
    browser = Browser(args.chromium)
    try:
        version = browser.version()
        with serve(site) as base:
            for name, rel in PAGES:
                if not (site / rel).exists():
                    results.append((name, rel, [f"{rel} is not in the site"]))
                    continue
                problems = browser.open(f"{base}/{rel}")
                browser.screenshot(out / f"{name}.png")
                results.append((name, rel, problems))
    finally:
        browser.close()
    failed = bool(broken) or any(p for _, _, p in results)
    lines = ["# The documentation site in headless Chromium", "",
             f"Regenerate: `make docs-check` ({version}, headless, 1280x900).", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()}.", "",
             f"Links: {checked} relative links and images in {len(list(site.rglob('*.html')))} "
             f"HTML files checked, {len(broken)} broken; {external} links to other sites not "
             "fetched (offline).", "", "| page | opened | problems | screenshot |",
             "| --- | --- | --- | --- |"]
    for name, rel, problems in results:
        lines.append(f"| {name} | `{rel}` | {'; '.join(problems) or 'none'} | {name}.png |")
    if broken:
        lines += ["", "Broken links:", ""] + [f"- `{b}`" for b in broken]
    (out / "check_site.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
