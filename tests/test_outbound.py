"""Outbound HTTP (kiln.outbound) against real HTTP servers on this machine: what is refused
before any connection, what the instance settings allow, that a name is resolved once and
the connection goes to that address, redirects checked hop by hop, bounded time and size."""

from __future__ import annotations

import gzip
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kiln import outbound
from kiln.errors import BlockedUrl, OutboundFailed
from kiln.outbound import Caller, Rules
from kiln.services import instance_settings

LOCAL = Rules(allow_local=True)
BLOCKING = Rules()


class Seen:
    """What a test server was asked."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.sni: list[str | None] = []


class Server:
    def __init__(self, route: Callable[[BaseHTTPRequestHandler], None], tls: ssl.SSLContext | None = None):
        self.seen = Seen()
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                seen.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": self.rfile.read(length) if length else b"",
                    }
                )
                route(self)

            do_GET = _any  # noqa: N815 (http.server's names)
            do_POST = _any  # noqa: N815
            do_HEAD = _any  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A client that hangs up early (the size and time bounds under test) is no error here.
        self.httpd.handle_error = lambda request, address: None  # type: ignore[method-assign]
        if tls is not None:
            tls.sni_callback = lambda sock, name, ctx: seen.sni.append(name)
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        # A short poll: stop() waits for the loop to look (half a second by default, per server).
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def answer(status: int = 200, body: bytes = b"ok", headers: dict[str, str] | None = None):
    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    return route


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(route: Callable[[BaseHTTPRequestHandler], None] | None = None, **kw: Any) -> Server:
        server = Server(route or answer(), **kw)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def resolver(*answers: list[str]) -> tuple[Callable[[str, int], list[str]], list[str]]:
    """A DNS that answers each lookup with the next answer (an attacker's rebinding DNS)."""
    asked: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return answers[min(len(asked), len(answers)) - 1]

    return resolve, asked


# ---------------------------------------------------------------------------- refused


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://localhost:{port}/", outbound.LOCALHOST),
        ("http://127.0.0.1:{port}/", outbound.LOCALHOST),
        ("http://127.1:{port}/", outbound.LOCALHOST),
        ("http://2130706433:{port}/", outbound.LOCALHOST),
        ("http://0x7f.1:{port}/", outbound.LOCALHOST),
        ("http://0177.0.0.1:{port}/", outbound.INVALID_URI),
        ("http://[::ffff:127.0.0.1]:{port}/", outbound.LOCALHOST),
        ("http://[::ffff:7f00:1]:{port}/", outbound.LOCALHOST),
        ("http://[::127.0.0.1]:{port}/", outbound.LOCALHOST),
        ("http://[64:ff9b::7f00:1]:{port}/", outbound.LOCALHOST),
        ("http://[::ffff:0:7f00:1]:{port}/", outbound.LOCALHOST),
        ("http://[::ffff:0:127.0.0.1]:{port}/", outbound.LOCALHOST),
        ("http://[64:ff9b:1::7f00:1]:{port}/", outbound.LOCALHOST),
        ("http://[64:ff9b:1:7f00:0:100::]:{port}/", outbound.LOCALHOST),
        ("http://[::1]:{port}/", outbound.LOCALHOST),
    ],
)
def test_loopback_in_any_form_is_refused_before_connecting(serve, url, reason):
    server = serve()
    with pytest.raises(BlockedUrl) as refused:
        outbound.request("GET", url.format(port=server.port), BLOCKING)
    assert refused.value.reason == reason
    assert server.seen.requests == []


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("0.0.0.0", outbound.LOCALHOST),
        ("[::]", outbound.LOCALHOST),
        ("10.0.0.1", outbound.LOCAL_NETWORK),
        ("172.16.5.4", outbound.LOCAL_NETWORK),
        ("192.168.1.1", outbound.LOCAL_NETWORK),
        ("[fd12:3456::1]", outbound.LOCAL_NETWORK),
        ("[fec0::1]", outbound.LOCAL_NETWORK),
        ("169.254.169.254", outbound.LINK_LOCAL),
        ("[fe80::1]", outbound.LINK_LOCAL),
        ("[::ffff:169.254.169.254]", outbound.LINK_LOCAL),
        ("[::ffff:0:a9fe:a9fe]", outbound.LINK_LOCAL),
        ("[::ffff:0:10.0.0.1]", outbound.LOCAL_NETWORK),
        ("[64:ff9b:1::a00:1]", outbound.LOCAL_NETWORK),
        ("[64:ff9b:1::808:808]", outbound.LOCAL_NETWORK),
        ("100.64.0.1", outbound.SHARED),
        ("255.255.255.255", outbound.BROADCAST),
        ("224.0.0.1", outbound.MULTICAST),
        ("[ff02::1]", outbound.MULTICAST),
    ],
)
def test_private_link_local_multicast_and_unspecified_addresses_are_refused(host, reason):
    with pytest.raises(BlockedUrl) as refused:
        outbound.check(f"http://{host}/hook", BLOCKING)
    assert refused.value.reason == reason


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "file:///etc/passwd", "gopher://example.com/", "ws://x/"]
)
def test_schemes_other_than_http_and_https_are_refused(url):
    with pytest.raises(BlockedUrl) as refused:
        outbound.check(url, LOCAL)
    assert refused.value.reason == "Only allowed schemes are http, https"


@pytest.mark.parametrize("url", ["http://exa\nmple.com/", "http://[::1/", "http:///path"])
def test_malformed_urls_are_refused(url):
    with pytest.raises(BlockedUrl) as refused:
        outbound.check(url, LOCAL)
    assert refused.value.reason == outbound.INVALID_URI


def test_a_name_that_does_not_resolve_is_refused_whatever_the_settings():
    for rules in (BLOCKING, LOCAL, Rules(allow_local=True, dns_rebinding_protection=False)):
        with pytest.raises(BlockedUrl) as refused:
            outbound.check("http://no-such-host.invalid/hook", rules)
        assert refused.value.reason == "Host cannot be resolved or invalid"


def test_a_name_with_any_local_address_is_refused():
    resolve, _ = resolver(["93.184.216.34", "10.0.0.7"])
    with pytest.raises(BlockedUrl) as refused:
        outbound.check("http://mixed.test/", BLOCKING, resolve=resolve)
    assert refused.value.reason == outbound.LOCAL_NETWORK


def test_the_instances_own_address_is_refused(settings):
    own = settings.model_copy(update={"external_url": "http://93.184.216.34:8080"})
    rules = Rules.of(instance_settings.DEFAULTS, own, Caller.HOOK)
    with pytest.raises(BlockedUrl) as refused:
        outbound.check("http://93.184.216.34/hook", rules)
    assert refused.value.reason == outbound.LOCALHOST
    assert outbound.check("http://93.184.216.35/hook", rules).addresses


def test_a_public_address_is_allowed():
    target = outbound.check("https://93.184.216.34/hook", BLOCKING)
    assert [str(a) for a in target.addresses] == ["93.184.216.34"]


def test_a_translated_ipv6_address_is_judged_by_the_ipv4_address_it_carries():
    assert outbound.check("http://[::ffff:0:808:808]/", BLOCKING).addresses
    resolve, _ = resolver(["::ffff:0:7f00:1"])
    with pytest.raises(BlockedUrl) as refused:
        outbound.check("http://siit.test/", BLOCKING, resolve=resolve)
    assert refused.value.reason == outbound.LOCALHOST


# ---------------------------------------------------------------------------- settings


def test_hooks_are_refused_local_addresses_by_default_and_system_hooks_are_not(settings):
    hooks = Rules.of(instance_settings.DEFAULTS, settings, Caller.HOOK)
    system = Rules.of(instance_settings.DEFAULTS, settings, Caller.SYSTEM_HOOK)
    with pytest.raises(BlockedUrl):
        outbound.check("http://127.0.0.1:9/", hooks)
    assert outbound.check("http://127.0.0.1:9/", system).addresses


def test_allow_local_requests_lets_a_hook_reach_a_local_server(serve, db, settings):
    server = serve(answer(201, b'{"ok": true}', {"Content-Type": "application/json"}))
    url = f"http://localhost:{server.port}/hook"
    with pytest.raises(BlockedUrl):
        outbound.request("POST", url, outbound.rules(db, settings, Caller.HOOK), json={"a": 1})
    instance_settings.update(db, {"allow_local_requests_from_web_hooks_and_services": True})
    reply = outbound.request("POST", url, outbound.rules(db, settings, Caller.HOOK), json={"a": 1})
    assert (reply.status_code, reply.json()) == (201, {"ok": True})
    [seen] = server.seen.requests
    assert (seen["method"], seen["path"], seen["body"]) == ("POST", "/hook", b'{"a": 1}')
    assert seen["headers"]["Host"] == f"localhost:{server.port}"


def test_system_hooks_follow_their_own_setting(db, settings):
    instance_settings.update(db, {"allow_local_requests_from_system_hooks": False})
    with pytest.raises(BlockedUrl):
        outbound.check("http://127.0.0.1:9/", outbound.rules(db, settings, Caller.SYSTEM_HOOK))
    instance_settings.update(db, {"allow_local_requests_from_web_hooks_and_services": True})
    with pytest.raises(BlockedUrl):
        outbound.check("http://127.0.0.1:9/", outbound.rules(db, settings, Caller.SYSTEM_HOOK))


def test_allowlisted_address_is_allowed_and_nothing_else(serve, db, settings):
    server = serve()
    instance_settings.update(db, {"outbound_local_requests_whitelist": ["127.0.0.1"]})
    rules = outbound.rules(db, settings, Caller.HOOK)
    assert outbound.request("GET", f"http://127.0.0.1:{server.port}/", rules).status_code == 200
    with pytest.raises(BlockedUrl):
        outbound.check("http://10.0.0.1/", rules)
    with pytest.raises(BlockedUrl):
        outbound.check("http://[::1]/", rules)


def test_allowlist_entry_with_a_port_allows_only_that_port(serve):
    server = serve()
    rules = Rules(allowlist=outbound.parse_allowlist([f"127.0.0.1:{server.port}"]))
    assert outbound.request("GET", f"http://127.0.0.1:{server.port}/", rules).status_code == 200
    with pytest.raises(BlockedUrl):
        outbound.check(f"http://127.0.0.1:{server.port + 1}/", rules)


def test_allowlist_ranges_and_ipv6_entries():
    rules = Rules(allowlist=outbound.parse_allowlist(["10.0.0.0/8", "[::1]:8080", "fd00::/8"]))
    assert outbound.check("http://10.20.30.40/", rules).addresses
    assert outbound.check("http://[::1]:8080/", rules).addresses
    assert outbound.check("http://[fd00::5]/", rules).addresses
    for url in ("http://11.0.0.1.invalid/", "http://[::1]:8081/", "http://192.168.0.1/"):
        with pytest.raises(BlockedUrl):
            outbound.check(url, rules)


def test_allowlist_entry_written_as_ipv4_mapped_names_the_ipv4_address(serve):
    server = serve()
    rules = Rules(allowlist=outbound.parse_allowlist(["::ffff:127.0.0.1"]))
    assert outbound.request("GET", f"http://127.0.0.1:{server.port}/", rules).status_code == 200
    assert outbound.request("GET", f"http://[::ffff:127.0.0.1]:{server.port}/", rules).status_code == 200


def test_allowlisted_host_name_is_allowed_and_only_that_name(serve):
    server = serve()
    rules = Rules(allowlist=outbound.parse_allowlist("LocalHost; other.test:1"))
    reply = outbound.request("GET", f"http://localhost:{server.port}/x", rules)
    assert reply.status_code == 200
    with pytest.raises(BlockedUrl):
        outbound.request("GET", f"http://127.0.0.1:{server.port}/x", rules)
    assert len(server.seen.requests) == 1


# ---------------------------------------------------------------------------- resolved once


def test_the_name_is_resolved_once_and_the_connection_goes_to_that_address(serve):
    server = serve()
    resolve, asked = resolver(["127.0.0.1"], ["10.9.9.9"])
    rules = Rules(allowlist=outbound.parse_allowlist(["127.0.0.1"]))
    reply = outbound.request("GET", f"http://rebind.test:{server.port}/hook", rules, resolve=resolve)
    assert reply.status_code == 200
    assert asked == ["rebind.test"]
    assert server.seen.requests[0]["headers"]["Host"] == f"rebind.test:{server.port}"
    assert reply.url == f"http://rebind.test:{server.port}/hook"


def test_without_rebinding_protection_the_client_resolves_the_name_itself(serve):
    server = serve()
    rules = Rules(allow_local=True, dns_rebinding_protection=False)
    target = outbound.check(f"http://localhost:{server.port}/", rules)
    assert target.connect_to is None
    assert outbound.request("GET", f"http://localhost:{server.port}/", rules).status_code == 200
    pinned = outbound.check(f"http://localhost:{server.port}/", LOCAL)
    assert str(pinned.connect_to) == "127.0.0.1"


def test_the_rebinding_setting_decides_whether_the_checked_address_is_the_one_connected_to(db, settings):
    instance_settings.update(db, {"allow_local_requests_from_web_hooks_and_services": True})
    pinned = outbound.check("http://localhost:9/", outbound.rules(db, settings, Caller.HOOK))
    assert str(pinned.connect_to) == "127.0.0.1"
    instance_settings.update(db, {"dns_rebinding_protection_enabled": False})
    unpinned = outbound.check("http://localhost:9/", outbound.rules(db, settings, Caller.HOOK))
    assert unpinned.connect_to is None


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> Callable[[str], tuple[Path, Path]]:
    folder = tmp_path_factory.mktemp("tls")

    def make(name: str) -> tuple[Path, Path]:
        cert, key = folder / f"{name}.crt", folder / f"{name}.key"
        if not cert.exists():
            subprocess.run(
                [
                    *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"),
                    *("-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name}"),
                    *("-addext", f"subjectAltName=DNS:{name}"),
                ],
                check=True,
                capture_output=True,
            )
        return cert, key

    return make


def tls_server(serve, certificate, name: str) -> tuple[Server, ssl.SSLContext]:
    cert, key = certificate(name)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    client = ssl.create_default_context(cafile=str(cert))
    return serve(tls=context), client


def test_tls_to_the_resolved_address_speaks_and_verifies_the_name(serve, certificate):
    server, trust = tls_server(serve, certificate, "hooks.test")
    resolve, asked = resolver(["127.0.0.1"])
    reply = outbound.request(
        "GET", f"https://hooks.test:{server.port}/", LOCAL, verify=trust, resolve=resolve
    )
    assert reply.status_code == 200
    assert asked == ["hooks.test"]
    assert server.seen.sni == ["hooks.test"]
    assert server.seen.requests[0]["headers"]["Host"] == f"hooks.test:{server.port}"


def test_tls_certificate_for_another_name_fails(serve, certificate):
    server, trust = tls_server(serve, certificate, "other.test")
    resolve, _ = resolver(["127.0.0.1"])
    with pytest.raises(OutboundFailed):
        outbound.request("GET", f"https://hooks.test:{server.port}/", LOCAL, verify=trust, resolve=resolve)
    assert server.seen.requests == []


# ---------------------------------------------------------------------------- redirects


def test_a_redirect_to_a_refused_address_is_not_followed(serve):
    inner = serve()
    outer = serve(answer(302, b"", {"Location": f"http://127.0.0.1:{inner.port}/secret"}))
    rules = Rules(allowlist=outbound.parse_allowlist([f"127.0.0.1:{outer.port}"]))
    with pytest.raises(BlockedUrl) as refused:
        outbound.request("GET", f"http://127.0.0.1:{outer.port}/", rules)
    assert refused.value.reason == outbound.LOCALHOST
    assert inner.seen.requests == []


def test_redirects_to_allowed_places_are_followed_post_becoming_get(serve):
    inner = serve(answer(200, b"landed"))
    outer = serve(answer(302, b"", {"Location": f"http://localhost:{inner.port}/landing"}))
    reply = outbound.request("POST", f"http://127.0.0.1:{outer.port}/hook", LOCAL, json={"a": 1})
    assert (reply.status_code, reply.text) == (200, "landed")
    assert reply.redirects == [f"http://127.0.0.1:{outer.port}/hook"]
    assert inner.seen.requests[0]["method"] == "GET"


def test_redirects_can_be_left_unfollowed(serve):
    outer = serve(answer(307, b"", {"Location": "http://10.0.0.1/"}))
    reply = outbound.request("POST", f"http://127.0.0.1:{outer.port}/", LOCAL, follow_redirects=False)
    assert (reply.status_code, reply.headers["location"]) == (307, "http://10.0.0.1/")


def test_redirect_loops_end(serve):
    loop = serve(answer(302, b"", {"Location": "/again"}))
    with pytest.raises(OutboundFailed) as failed:
        outbound.request("GET", f"http://127.0.0.1:{loop.port}/", LOCAL, max_redirects=3)
    assert "Too many redirects" in str(failed.value)
    assert len(loop.seen.requests) == 4


def test_url_credentials_are_sent_as_basic_auth_and_not_to_another_origin(serve):
    inner = serve()
    outer = serve(answer(307, b"", {"Location": f"http://localhost:{inner.port}/"}))
    outbound.request("POST", f"http://user:p%40ss@127.0.0.1:{outer.port}/", LOCAL, content=b"x")
    assert outer.seen.requests[0]["headers"]["Authorization"] == "Basic dXNlcjpwQHNz"
    assert "Authorization" not in inner.seen.requests[0]["headers"]
    assert inner.seen.requests[0]["body"] == b"x"


CREDENTIALS = {
    "Authorization": "Bearer a",
    "Proxy-Authorization": "Basic b",
    "Cookie": "session=c",
    "Private-Token": "d",
    "X-Gitlab-Token": "e",
    "X-Service-Token": "f",
}


def test_credential_headers_are_not_sent_to_another_origin(serve):
    inner = serve()
    outer = serve(answer(307, b"", {"Location": f"http://localhost:{inner.port}/landing"}))
    headers = {**CREDENTIALS, "X-Gitlab-Event": "Push Hook"}
    reply = outbound.request("POST", f"http://127.0.0.1:{outer.port}/", LOCAL, headers=headers, content=b"x")
    assert reply.status_code == 200
    sent_first = {k.lower() for k in outer.seen.requests[0]["headers"]}
    assert {k.lower() for k in CREDENTIALS} <= sent_first
    sent_on = {k.lower(): v for k, v in inner.seen.requests[0]["headers"].items()}
    assert not {k.lower() for k in CREDENTIALS} & set(sent_on)
    assert sent_on["x-gitlab-event"] == "Push Hook"
    assert inner.seen.requests[0]["body"] == b"x"


def test_credential_headers_stay_on_a_redirect_within_the_origin(serve):
    def route(h: BaseHTTPRequestHandler) -> None:
        if h.path == "/":
            answer(307, b"", {"Location": "/again"})(h)
        else:
            answer()(h)

    server = serve(route)
    outbound.request("GET", f"http://127.0.0.1:{server.port}/", LOCAL, headers=CREDENTIALS)
    again = {k.lower(): v for k, v in server.seen.requests[1]["headers"].items()}
    assert all(again[k.lower()] == v for k, v in CREDENTIALS.items())


# ---------------------------------------------------------------------------- bounds


def test_a_slow_server_times_out_within_the_bound(serve):
    def slow(h: BaseHTTPRequestHandler) -> None:
        time.sleep(3)
        answer()(h)

    server = serve(slow)
    started = time.monotonic()
    with pytest.raises(OutboundFailed) as failed:
        outbound.request("GET", f"http://127.0.0.1:{server.port}/", LOCAL, timeout=0.5)
    assert time.monotonic() - started < 2.5
    assert "timed out" in str(failed.value)


def test_a_slow_dns_answer_is_a_refusal_within_the_bound(hanging):
    dns = hanging("slow-dns.test")
    started = time.monotonic()
    with pytest.raises(BlockedUrl) as refused:
        outbound.request("GET", "http://slow-dns.test/", BLOCKING, timeout=0.5, resolve=dns)
    assert refused.value.reason == outbound.UNRESOLVED
    assert time.monotonic() - started < 2.5


class Hanging:
    """A DNS that never answers the names it is given (until released) and answers others."""

    def __init__(self, *names: str) -> None:
        self.names = set(names)
        self.release = threading.Event()
        self.asked: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, host: str, port: int) -> list[str]:
        with self.lock:
            self.asked.append(host)
        if host in self.names:
            self.release.wait(30)
            raise OSError("no answer")
        return ["93.184.216.34"]


def lookups_ended() -> None:
    """Wait (at most 5 s) until no given-up lookup runs: the bound on them is the process's."""
    deadline = time.monotonic() + 5
    while outbound._slow and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.fixture
def hanging() -> Iterator[Callable[..., Hanging]]:
    """DNS stand-ins that never answer their names; released, and their lookups ended, after
    the test (and none of an earlier test's still running before it)."""
    lookups_ended()
    made: list[Hanging] = []

    def make(*names: str) -> Hanging:
        made.append(Hanging(*names))
        return made[-1]

    yield make
    for dns in made:
        dns.release.set()
    lookups_ended()


def test_names_that_never_answer_do_not_keep_other_names_from_resolving(hanging):
    dns = hanging(*(f"never-{i}.test" for i in range(12)))
    for i in range(12):
        with pytest.raises(BlockedUrl) as refused:
            outbound.check(f"http://never-{i}.test/", BLOCKING, resolve=dns, resolve_timeout=0.1)
        assert refused.value.reason == outbound.UNRESOLVED
    started = time.monotonic()
    target = outbound.check("http://answers.test/", BLOCKING, resolve=dns, resolve_timeout=2)
    assert [str(a) for a in target.addresses] == ["93.184.216.34"]
    assert time.monotonic() - started < 1


def test_a_name_still_being_looked_up_is_refused_without_another_lookup(hanging):
    dns = hanging("never.test")
    for _ in range(5):
        with pytest.raises(BlockedUrl):
            outbound.check("http://never.test/", BLOCKING, resolve=dns, resolve_timeout=0.1)
    assert dns.asked == ["never.test"]
    dns.release.set()
    lookups_ended()
    dns.names.clear()
    assert outbound.check("http://never.test/", BLOCKING, resolve=dns).addresses


def test_lookups_given_up_on_are_bounded(hanging, monkeypatch):
    monkeypatch.setattr(outbound, "MAX_SLOW_LOOKUPS", 3)
    dns = hanging("a.test", "b.test", "c.test", "d.test")
    for name in ("a.test", "b.test", "c.test", "d.test"):
        with pytest.raises(BlockedUrl):
            outbound.check(f"http://{name}/", BLOCKING, resolve=dns, resolve_timeout=0.1)
    assert dns.asked == ["a.test", "b.test", "c.test"]
    dns.release.set()
    lookups_ended()
    assert outbound.check("http://answers.test/", BLOCKING, resolve=dns).addresses


def test_an_answer_larger_than_the_bound_is_refused(serve):
    server = serve(answer(200, b"x" * 5000))
    with pytest.raises(OutboundFailed):
        outbound.request("GET", f"http://127.0.0.1:{server.port}/", LOCAL, max_response_bytes=1000)
    assert outbound.request("GET", f"http://127.0.0.1:{server.port}/", LOCAL).content == b"x" * 5000


def test_gzip_answers_are_decoded_within_the_bound(serve):
    small = serve(answer(200, gzip.compress(b"hello " * 100), {"Content-Encoding": "gzip"}))
    assert outbound.request("GET", f"http://127.0.0.1:{small.port}/", LOCAL).content == b"hello " * 100
    bomb = serve(answer(200, gzip.compress(b"\0" * 5_000_000), {"Content-Encoding": "gzip"}))
    with pytest.raises(OutboundFailed):
        outbound.request("GET", f"http://127.0.0.1:{bomb.port}/", LOCAL, max_response_bytes=100_000)


def test_no_server_listening_is_a_failure_not_a_refusal(serve):
    server = serve()
    port = server.port
    server.stop()
    with pytest.raises(OutboundFailed):
        outbound.request("GET", f"http://127.0.0.1:{port}/", LOCAL, timeout=2)
