"""Server-side request forgery, the redirect kind that has hit forges: a URL a user gives kiln
(an import URL, a website, a link or image in Markdown) is stored or rendered, never fetched
by the server, so no redirect can lead kiln to an address inside its network."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(302)
        self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
        self.end_headers()

    do_HEAD = do_GET  # noqa: N815 (http.server's names)
    do_POST = do_GET  # noqa: N815

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A server inside kiln's network that redirects every request to a metadata address,
    and records whoever came."""
    handler = type("Recorder", (_Recorder,), {"hits": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # A short poll: shutdown() waits for the loop to look (half a second by default).
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler.hits
    server.shutdown()
    server.server_close()


def test_an_import_url_is_never_fetched(api, make, listener):
    url, hits = listener
    owner = make.user()
    r = api(owner).post("/projects", json={"name": "imported", "import_url": f"{url}/repo.git"})
    assert r.status_code == 201, r.text
    assert api(owner).get(f"/projects/{r.json()['id']}").status_code == 200
    assert hits == []


def test_urls_in_markdown_are_rendered_not_fetched(api, make, listener):
    url, hits = listener
    owner = make.user()
    text = f"![x]({url}/image.png) [y]({url}/page) <{url}/auto>"
    r = api(owner).post("/projects", json={"name": "linked", "description": text})
    assert r.status_code == 201, r.text
    assert f"{url}/image.png" in r.json()["description_html"]
    assert hits == []


def test_a_website_url_is_stored_not_fetched(api, make, listener):
    url, hits = listener
    user = make.user()
    r = api("root").put(f"/users/{user.id}", json={"website_url": f"{url}/home"})
    assert r.status_code == 200, r.text
    assert r.json()["website_url"] == f"{url}/home"
    assert hits == []
