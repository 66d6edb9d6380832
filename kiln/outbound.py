"""Outbound HTTP: the one way kiln calls out (web hooks, system hooks, integrations, imports).

Every request is checked as GitLab's URL blocker checks it (Gitlab::HTTP_V2::UrlBlocker),
with the instance settings that govern it:

- only http and https; the host is resolved once, and a name that does not resolve is
  refused (GitLab skips that check when DNS-rebinding protection is off; kiln never does);
- every address the name resolves to must be a public one: loopback, unspecified (0.0.0.0,
  ::), this machine's own addresses and the instance's own host, private, shared (100.64/10),
  link-local, unique-local and site-local, multicast, broadcast and other non-global
  addresses are refused, also when hidden in IPv6 (IPv4-mapped, -compatible, -translated,
  NAT64, 6to4, Teredo; the local-use NAT64 prefix 64:ff9b:1::/48 whatever it carries) or
  written as numbers glibc reads as IPv4 (2130706433, 0x7f.1, 127.1), unless
  `allow_local_requests_from_web_hooks_and_services` (hooks, integrations, imports) or
  `allow_local_requests_from_system_hooks` (system hooks) allows them;
- `outbound_local_requests_whitelist` entries allow just what they name: an address or a
  CIDR range, or a host name (matched exactly), each with an optional port (`10.0.0.5:8080`,
  `[::1]:8080`, `hooks.internal:443`);
- with `dns_rebinding_protection_enabled` (the default) the connection goes to the address
  that was checked, the Host header, TLS SNI and certificate verification still using the
  name; with it off the addresses are checked and the HTTP client resolves the name again
  when it connects, as GitLab does;
- redirects are followed (at most `max_redirects`, like GitLab's hooks through HTTParty),
  each hop checked again as the first; credentials (URL user info and every header that
  carries them: Authorization, Cookie, tokens, ...) are not sent on to another origin;
- every phase is bounded by one deadline (`timeout`, at most MAX_TIMEOUT seconds), and an
  answer by `max_response_bytes`.

Refusals raise kiln.errors.BlockedUrl; requests that were allowed but got no answer raise
kiln.errors.OutboundFailed. Proxy variables of the environment are not used."""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json as jsonlib
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
from sqlalchemy.orm import Session

from kiln.config import Settings
from kiln.errors import BlockedUrl, OutboundFailed
from kiln.services import instance_settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# Resolves a host name for a port to its addresses (as strings); raises OSError when it can't.
Resolver = Callable[[str, int], Sequence[str]]

SCHEMES = ("http", "https")
DEFAULT_TIMEOUT = 10.0  # GitLab's webhook_timeout
MAX_TIMEOUT = 60.0
DEFAULT_MAX_REDIRECTS = 5  # HTTParty's limit, which GitLab's hooks keep
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
RESOLVE_TIMEOUT = 15.0  # GitLab's GETADDRINFO_TIMEOUT_SECONDS

# GitLab's wording of each refusal.
INVALID_URI = "URI is invalid"
SCHEME_REFUSED = "Only allowed schemes are http, https"
HOST_INVALID = "Hostname or IP address invalid"
UNRESOLVED = "Host cannot be resolved or invalid"
LOCALHOST = "Requests to localhost are not allowed"
LOOPBACK = "Requests to loopback addresses are not allowed"
LOCAL_NETWORK = "Requests to the local network are not allowed"
LINK_LOCAL = "Requests to the link local network are not allowed"
SHARED = "Requests to the shared address space are not allowed"
BROADCAST = "Requests to the limited broadcast address are not allowed"
MULTICAST = "Requests to multicast addresses are not allowed"

_REDIRECTS = {301, 302, 303, 307, 308}
_SHARED_NET = ipaddress.ip_network("100.64.0.0/10")
_THIS_NET = ipaddress.ip_network("0.0.0.0/8")
_LINK_LOCAL_NETS = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))
_LOCAL_NETS = (
    ipaddress.ip_network("10.0.0.0/8"),
    ipaddress.ip_network("172.16.0.0/12"),
    ipaddress.ip_network("192.168.0.0/16"),
    ipaddress.ip_network("fc00::/7"),  # unique local
    ipaddress.ip_network("fec0::/10"),  # site local
)
_NAT64_NETS = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_BROADCAST = ipaddress.ip_address("255.255.255.255")
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215 local use: not globally reachable
_SIIT = ipaddress.IPv6Network("::ffff:0:0:0/96")  # IPv4-translated (SIIT): ::ffff:0:a.b.c.d
# Headers that carry credentials: not sent on to another origin after a redirect.
_CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "private-token",
        "job-token",
        "deploy-token",
        "x-gitlab-token",
        "x-service-token",
        "x-csrf-token",
        "x-api-key",
        "api-key",
        "x-auth-token",
        "x-access-token",
    }
)
_CREDENTIAL_WORDS = ("token", "auth", "cookie", "secret", "password", "api-key", "apikey", "session")
# Each lookup runs in its own thread; one the caller gave up on keeps running (getaddrinfo
# cannot be stopped). While a name has such a lookup it is refused without another, and at
# most MAX_SLOW_LOOKUPS given-up lookups may run at once, so names that never answer neither
# take threads without bound nor keep other names from being looked up.
MAX_SLOW_LOOKUPS = 64
_lookups = threading.Lock()
_slow: dict[str, int] = {}  # name -> given-up lookups of it still running


class Caller(StrEnum):
    """Who calls out: decides which instance setting may allow local addresses."""

    # Project and group hooks, integrations, imports.
    HOOK = "hook"
    SYSTEM_HOOK = "system_hook"


@dataclass(frozen=True, slots=True)
class Allowed:
    """One `outbound_local_requests_whitelist` entry."""

    network: IPNetwork | None
    domain: str | None
    port: int | None

    def admits_address(self, ip: IPAddress, port: int) -> bool:
        if self.network is None or (self.port is not None and self.port != port):
            return False
        return ip.version == self.network.version and ip in self.network

    def admits_domain(self, host: str, port: int) -> bool:
        return self.domain == host and (self.port is None or self.port == port)


@dataclass(frozen=True, slots=True)
class Rules:
    """What an outbound request may reach; build it with `rules` (or `Rules.of`)."""

    allow_local: bool = False
    allowlist: tuple[Allowed, ...] = ()
    dns_rebinding_protection: bool = True
    # The instance's own addresses besides this machine's (its external URL's host).
    own: frozenset[IPAddress] = frozenset()

    @classmethod
    def of(cls, values: Mapping[str, Any], settings: Settings | None, caller: Caller) -> Rules:
        """From instance settings (a mapping with GitLab's keys) and kiln's settings."""
        key = (
            "allow_local_requests_from_system_hooks"
            if caller is Caller.SYSTEM_HOOK
            else "allow_local_requests_from_web_hooks_and_services"
        )
        own = _instance_addresses(urlsplit(settings.external_url).hostname or "") if settings else frozenset()
        return cls(
            allow_local=bool(values.get(key)),
            allowlist=parse_allowlist(values.get("outbound_local_requests_whitelist") or []),
            dns_rebinding_protection=bool(values.get("dns_rebinding_protection_enabled", True)),
            own=own,
        )


def rules(db: Session, settings: Settings, caller: Caller) -> Rules:
    """The rules the instance settings give `caller` now."""
    return Rules.of(instance_settings.current(db), settings, caller)


@dataclass(frozen=True, slots=True)
class Destination:
    """A checked URL: where to connect, and the name the request still speaks to."""

    url: httpx.URL  # without user info
    host: str  # the name (or literal address) of the URL, lowercase ASCII
    port: int
    addresses: tuple[IPAddress, ...]
    # The address connected to (None: the HTTP client resolves `host` itself).
    connect_to: IPAddress | None
    auth: tuple[str, str] | None = None


@dataclass(slots=True)
class Reply:
    """An answer read whole (bounded): what hook logs and integrations keep of it."""

    status_code: int
    headers: httpx.Headers
    content: bytes
    url: str
    redirects: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.content.decode(_charset(self.headers), errors="replace")

    def json(self) -> Any:
        return jsonlib.loads(self.content)


def parse_allowlist(entries: Iterable[str] | str) -> tuple[Allowed, ...]:
    """GitLab's allowlist entries: address, CIDR range or host name, with an optional port
    (`[::1]:80`, `127.0.0.1:80`, `example.com:80`); a string may separate entries with
    commas, semicolons or white space. Unreadable entries allow nothing."""
    if isinstance(entries, str):
        entries = entries.replace(";", ",").replace("\n", ",").replace(" ", ",").split(",")
    found: list[Allowed] = []
    for raw in entries:
        entry = str(raw).strip()
        if not entry:
            continue
        address, port = _split_port(entry)
        try:
            network = _mapped_to_ipv4(ipaddress.ip_network(address, strict=False))
        except ValueError:
            domain = _ascii_host(address)
            if domain:
                found.append(Allowed(network=None, domain=domain, port=port))
            continue
        found.append(Allowed(network=network, domain=None, port=port))
    return tuple(found)


def _mapped_to_ipv4(network: IPNetwork) -> IPNetwork:
    """An entry written as IPv4-mapped IPv6 (`::ffff:10.0.0.0/104`) names IPv4 addresses,
    which is how a resolved mapped address is judged."""
    if isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= 96 and network.subnet_of(_MAPPED):
        return ipaddress.IPv4Network((int(network.network_address) & 0xFFFFFFFF, network.prefixlen - 96))
    return network


def check(
    url: str | httpx.URL,
    rules: Rules,
    *,
    resolve: Resolver | None = None,
    resolve_timeout: float = RESOLVE_TIMEOUT,
) -> Destination:
    """The URL checked against the rules, resolved once (waiting at most `resolve_timeout`
    seconds for DNS); BlockedUrl with GitLab's reason otherwise. Used before a request, and
    by callers that validate a URL when it is saved."""
    text = str(url)
    if "\n" in text or "\r" in text:
        raise BlockedUrl(INVALID_URI)
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError):
        raise BlockedUrl(INVALID_URI) from None
    if parsed.scheme not in SCHEMES:
        raise BlockedUrl(SCHEME_REFUSED)
    try:
        host = parsed.raw_host.decode("ascii").lower().rstrip(".")
    except UnicodeDecodeError:
        raise BlockedUrl(HOST_INVALID) from None
    if not host:
        raise BlockedUrl(INVALID_URI)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    literal = _literal(host)
    if literal is None and not host[0].isalnum():
        raise BlockedUrl(HOST_INVALID)
    auth = None
    if parsed.userinfo:
        auth = (unquote(parsed.username), unquote(parsed.password))
        parsed = parsed.copy_with(username=None, password=None)
    if literal is not None:
        addresses: tuple[IPAddress, ...] = (literal,)
    else:
        addresses = _resolved(host, port, resolve or system_resolver, resolve_timeout)
    domain_allowed = any(entry.admits_domain(host, port) for entry in rules.allowlist)
    if not rules.allow_local and not domain_allowed:
        for ip in addresses:
            if any(entry.admits_address(ip, port) for entry in rules.allowlist):
                continue
            reason = local_reason(ip, rules.own)
            if reason is not None:
                raise BlockedUrl(reason)
    pinned = addresses[0] if rules.dns_rebinding_protection and literal is None else None
    return Destination(url=parsed, host=host, port=port, addresses=addresses, connect_to=pinned, auth=auth)


def request(
    method: str,
    url: str,
    rules: Rules,
    *,
    headers: Mapping[str, str] | None = None,
    content: bytes | str | None = None,
    json: Any = None,
    verify: bool | Any = True,
    timeout: float = DEFAULT_TIMEOUT,
    follow_redirects: bool = True,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    resolve: Resolver | None = None,
) -> Reply:
    """Make one request (and its redirects) under `rules`. `verify` as httpx takes it: a
    bool or an ssl.SSLContext. Raises BlockedUrl or OutboundFailed."""
    deadline = time.monotonic() + min(max(timeout, 0.1), MAX_TIMEOUT)
    sent_headers = {k: v for k, v in (headers or {}).items() if k.lower() != "host"}
    body: bytes | None
    if json is not None:
        body = jsonlib.dumps(json).encode()
        sent_headers.setdefault("Content-Type", "application/json")
    else:
        body = content.encode() if isinstance(content, str) else content
    method = method.upper()
    redirects: list[str] = []
    current = url
    auth: tuple[str, str] | None = None
    origin: tuple[str, str, int] | None = None
    with httpx.Client(verify=verify, trust_env=False, follow_redirects=False) as client:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OutboundFailed("Request timed out")
            target = check(current, rules, resolve=resolve, resolve_timeout=min(remaining, RESOLVE_TIMEOUT))
            here = (target.url.scheme, target.host, target.port)
            if origin is None:
                origin, auth = here, target.auth
            elif here != origin:
                # Credentials stay with the origin they were given for.
                auth = target.auth
                sent_headers = {k: v for k, v in sent_headers.items() if not _credential(k)}
            response = _send(client, method, target, sent_headers, body, auth, deadline, max_response_bytes)
            location = response.headers.get("location")
            if not (follow_redirects and response.status_code in _REDIRECTS and location):
                response.redirects = redirects
                return response
            if len(redirects) >= max_redirects:
                raise OutboundFailed(f"Too many redirects (more than {max_redirects})")
            redirects.append(response.url)
            current = str(httpx.URL(response.url).join(location))
            if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
                method, body = ("GET" if method != "HEAD" else "HEAD"), None
                sent_headers = {
                    k: v
                    for k, v in sent_headers.items()
                    if k.lower() not in ("content-type", "content-length")
                }


def _credential(name: str) -> bool:
    """Whether a header carries credentials (kept from another origin after a redirect)."""
    lowered = name.lower()
    return lowered in _CREDENTIAL_HEADERS or any(word in lowered for word in _CREDENTIAL_WORDS)


def _send(
    client: httpx.Client,
    method: str,
    target: Destination,
    headers: dict[str, str],
    body: bytes | None,
    auth: tuple[str, str] | None,
    deadline: float,
    max_bytes: int,
) -> Reply:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise OutboundFailed("Request timed out")
    url = target.url
    extensions: dict[str, Any] = {}
    sent = dict(headers)
    if target.connect_to is not None:
        default_port = 443 if url.scheme == "https" else 80
        sent["Host"] = (
            target.host if target.port == default_port else f"{_bracketed(target.host)}:{target.port}"
        )
        url = url.copy_with(host=str(target.connect_to))
        if url.scheme == "https":
            extensions["sni_hostname"] = target.host
    try:
        req = client.build_request(
            method, url, headers=sent, content=body, timeout=httpx.Timeout(remaining), extensions=extensions
        )
        response = client.send(req, stream=True, auth=httpx.BasicAuth(*auth) if auth else None)
    except httpx.TimeoutException:
        raise OutboundFailed("Request timed out") from None
    except httpx.HTTPError as failed:
        raise OutboundFailed(_describe(failed)) from None
    try:
        data = bytearray()
        for chunk in response.iter_raw():
            data += chunk
            if len(data) > max_bytes:
                raise OutboundFailed(f"The response is larger than {max_bytes} bytes")
            if time.monotonic() > deadline:
                raise OutboundFailed("Request timed out")
        content = bytes(data)
        encoding = response.headers.get("content-encoding")
        if encoding:
            # Decoded here (bounded): the raw stream was counted against the limit first.
            content = _decoded(content, encoding, max_bytes)
    except httpx.TimeoutException:
        raise OutboundFailed("Request timed out") from None
    except httpx.HTTPError as failed:
        raise OutboundFailed(_describe(failed)) from None
    finally:
        response.close()
    return Reply(
        status_code=response.status_code, headers=response.headers, content=content, url=str(target.url)
    )


def _decoded(content: bytes, encoding: str, max_bytes: int) -> bytes:
    """gzip and deflate undone within the size bound; other codings are left as sent."""
    out = content
    for coding in reversed([c.strip().lower() for c in encoding.split(",") if c.strip()]):
        if coding in ("gzip", "x-gzip", "deflate"):
            wbits = zlib.MAX_WBITS | 32 if coding != "deflate" else zlib.MAX_WBITS
            d = zlib.decompressobj(wbits)
            try:
                out = d.decompress(out, max_bytes + 1)
            except zlib.error:
                if coding != "deflate":
                    raise OutboundFailed("The response could not be decoded") from None
                d = zlib.decompressobj(-zlib.MAX_WBITS)
                out = d.decompress(out, max_bytes + 1)
            if len(out) > max_bytes:
                raise OutboundFailed(f"The response is larger than {max_bytes} bytes")
        elif coding != "identity":
            return content
    return out


def _describe(failed: httpx.HTTPError) -> str:
    message = str(failed) or type(failed).__name__
    return f"{type(failed).__name__}: {message}"


def _charset(headers: httpx.Headers) -> str:
    for part in headers.get("content-type", "").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            return value.strip('"')
    return "utf-8"


# ---------------------------------------------------------------------------- addresses


def _reason(ip: IPAddress, own: set[IPAddress]) -> str | None:
    if ip in own or ip.is_unspecified or (ip.version == 4 and ip in _THIS_NET):
        return LOCALHOST
    if ip.is_loopback:
        return LOOPBACK
    if ip.version == 4 and ip in _SHARED_NET:
        return SHARED
    if any(ip.version == net.version and ip in net for net in _LINK_LOCAL_NETS):
        return LINK_LOCAL
    if any(ip.version == net.version and ip in net for net in _LOCAL_NETS):
        return LOCAL_NETWORK
    if ip == _BROADCAST:
        return BROADCAST
    if ip.is_multicast:
        return MULTICAST
    if not ip.is_global:
        return LOCAL_NETWORK
    return None


def local_reason(ip: IPAddress, own: Iterable[IPAddress] = ()) -> str | None:
    """Why an address is not a public one (GitLab's wording), or None for a public address.
    Addresses hidden in IPv6 forms are judged as the IPv4 address they carry; the local-use
    NAT64 prefix, which is not globally reachable, is refused whatever it carries."""
    own_set = set(own) | _machine_addresses()
    for form in _forms(ip):
        reason = _reason(form, own_set)
        if reason is not None:
            return reason
    if ip.version == 6 and ip in _NAT64_LOCAL:
        return LOCAL_NETWORK
    return None


def _forms(ip: IPAddress) -> list[IPAddress]:
    """The address and every IPv4 address an IPv6 one carries (mapped, compatible, SIIT
    translated, NAT64 with each prefix length RFC 6052 allows, 6to4, Teredo)."""
    forms: list[IPAddress] = [ip]
    if ip.version != 6:
        return forms
    assert isinstance(ip, ipaddress.IPv6Address)
    packed = ip.packed
    if ip.ipv4_mapped is not None:
        forms.append(ip.ipv4_mapped)
    if packed[:12] == bytes(12) and int(ip) > 1:
        forms.append(ipaddress.IPv4Address(packed[12:]))
    if ip in _SIIT:
        forms.append(ipaddress.IPv4Address(packed[12:]))
    if any(ip in net for net in _NAT64_NETS):
        forms.append(ipaddress.IPv4Address(packed[12:]))
    if ip in _NAT64_LOCAL:
        # RFC 6052 section 2.2: the address follows the prefix, skipping bits 64-71, and the
        # bits after it are zero (the prefix is refused anyway: this only names the reason).
        for length in (48, 56, 64):
            rest = packed[length // 8 : 8] + packed[9:]
            if packed[8] == 0 and not any(rest[4:]):
                forms.append(ipaddress.IPv4Address(rest[:4]))
    if ip.sixtofour is not None:
        forms.append(ip.sixtofour)
    if ip.teredo is not None:
        forms.extend(ip.teredo)
    return forms


def _literal(host: str) -> IPAddress | None:
    """An address written the standard way (IPv4 dotted quad, or IPv6 without brackets)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    return _normalized(ip)


def _normalized(ip: IPAddress) -> IPAddress:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def system_resolver(host: str, port: int) -> list[str]:
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def _resolved(
    host: str, port: int, resolve: Resolver, timeout: float = RESOLVE_TIMEOUT
) -> tuple[IPAddress, ...]:
    """The name's addresses, looked up once (bounded in time); refused when there are none."""
    answers = _lookup(host, port, resolve, timeout)
    found: list[IPAddress] = []
    for answer in answers:
        try:
            ip = _normalized(ipaddress.ip_address(str(answer).split("%", 1)[0]))
        except ValueError:
            continue
        if ip not in found:
            found.append(ip)
    if not found:
        raise BlockedUrl(UNRESOLVED)
    return tuple(found)


def _lookup(host: str, port: int, resolve: Resolver, timeout: float) -> Sequence[str]:
    """`resolve(host, port)` in a thread of its own, waited for at most `timeout` seconds."""
    with _lookups:
        if _slow.get(host) or sum(_slow.values()) >= MAX_SLOW_LOOKUPS:
            raise BlockedUrl(UNRESOLVED)
    done = threading.Event()
    outcome: list[Any] = []
    given_up = False

    def run() -> None:
        try:
            outcome.append(resolve(host, port))
        except BaseException as failed:  # handed to the caller, which raises it
            outcome.append(failed)
        finally:
            with _lookups:
                done.set()
                if given_up:
                    _slow[host] -= 1
                    if not _slow[host]:
                        del _slow[host]

    threading.Thread(target=run, name="kiln-resolve", daemon=True).start()
    if not done.wait(max(timeout, 0)):
        with _lookups:
            if not done.is_set():
                given_up = True
                _slow[host] = _slow.get(host, 0) + 1
                raise BlockedUrl(UNRESOLVED)
    answer = outcome[0]
    if isinstance(answer, (OSError, UnicodeError, ValueError)):
        raise BlockedUrl(UNRESOLVED)
    if isinstance(answer, BaseException):
        raise answer
    return answer


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        address, _, rest = entry[1:].partition("]")
        return address, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    address, sep, port = entry.rpartition(":")
    if sep and port.isdigit() and ":" not in address:
        return address, int(port)
    return entry, None


def _ascii_host(name: str) -> str | None:
    try:
        raw = httpx.URL(f"http://{name}/").raw_host.decode("ascii")
    except (httpx.InvalidURL, ValueError, UnicodeError):
        return None
    return raw.lower().rstrip(".") or None


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@cache
def _machine_addresses() -> frozenset[IPAddress]:
    """This machine's own addresses (GitLab's Socket.ip_address_list): each interface's,
    and what the host's name resolves to."""
    found: set[IPAddress] = set()
    with contextlib.suppress(OSError), open("/proc/net/if_inet6") as lines:
        for line in lines:
            found.add(ipaddress.IPv6Address(int(line.split()[0], 16)))
    with contextlib.suppress(OSError):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            for _, name in socket.if_nameindex():
                with contextlib.suppress(OSError):
                    packed = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
                    found.add(ipaddress.IPv4Address(packed[20:24]))
        finally:
            probe.close()
    with contextlib.suppress(OSError, UnicodeError):
        for answer in system_resolver(socket.gethostname(), 0):
            with contextlib.suppress(ValueError):
                found.add(_normalized(ipaddress.ip_address(answer.split("%", 1)[0])))
    return frozenset(found)


@cache
def _instance_addresses(host: str) -> frozenset[IPAddress]:
    """The addresses of the instance's external host (looked up once per process)."""
    if not host:
        return frozenset()
    literal = _literal(host.lower())
    if literal is not None:
        return frozenset({literal})
    try:
        return frozenset(_resolved(host, 0, system_resolver))
    except BlockedUrl:
        return frozenset()
