"""The shared HTTP client of every collector: failover, retry, rate limit, record.

- Several base URLs mean failover in order: a node that is down, keeps answering
  429/5xx, times out or sends a body that is not JSON is left for the next one.
  A node that refused a connection or timed out is asked last for the rest of the run.
- Each node gets its own token bucket (default 20 requests per minute, burst 200:
  the public node proxy's limit), so one epoch's collection goes through at once
  and a long run never exceeds the limit. ``rate=0`` means unlimited.
- ``record_dir`` saves every raw response (status, headers, body as text) so a
  run can be replayed by :mod:`auditor.sources.replay` and shared as evidence.
- Every request has a total deadline (:data:`DEADLINE_FACTOR` × the per-read
  ``timeout``: 2 minutes by default) besides the per-read timeout, so a server that
  drips one byte at a time cannot hold a request open; a node that misses it is
  left for the next one, without retries.
- A body is read as a stream and refused past :data:`MAX_BODY` (64 MiB, far above
  any real answer: a whole epoch is a few MB), counted on the wire and after decoding,
  chunk by chunk; the item is then missing. One content coding (gzip or deflate) is
  read; an answer in several (``gzip, gzip``) or another is refused, the next node asked.
- A JSON number Python will not read (over 4300 digits) is malformed JSON: next node.
- Redirects are followed, to other hosts too, and the provenance of the answer
  (``Response.url``, every row's ``source_url``) is the final URL, not the one asked.
- ``Retry-After`` (seconds or an HTTP date) is honoured up to 60 s; a value that is
  negative, not a number or unreadable counts as absent (exponential backoff).
- A base URL is a prefix, as people write them: its path (``https://x.provider.example/KEY``)
  comes before every request's path and its query (``?api_key=K``) before every request's
  parameters; neither is recorded (``--record`` keeps the request's own path and query).
- No URL leaves this module with credentials in it: userinfo and token-bearing query
  parameters are redacted (:mod:`auditor.redact`) in ``Response.url``, in error
  messages and in :attr:`JsonClient.shown`.
"""

from __future__ import annotations

import json
import math
import threading
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlencode, urlsplit, urlunsplit

import httpcore
import httpx

from ..errors import NotFoundError, SourceError, UsageError
from ..redact import redact_url
from .wire_int import is_decimal

HEIGHT_HEADER = "x-cosmos-block-height"
RETRY_STATUSES = {429, 500, 502, 503, 504}
MAX_BODY = 64 * 2**20  # bytes of a decoded body; larger answers are refused
DEADLINE_FACTOR = 12  # total deadline of one request, in per-read timeouts
MAX_RETRY_AFTER = 60.0
CODINGS_ASKED = ("gzip", "deflate")  # the content codings this client reads (one layer)


class TokenBucket:
    """``rate`` tokens per minute, at most ``burst`` saved up. ``rate <= 0``: unlimited."""

    def __init__(self, rate_per_min: float, burst: int = 200, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.rate = rate_per_min / 60.0
        self.burst = float(burst)
        self.tokens = float(burst)
        self.clock, self.sleep = clock, sleep
        self.last = clock()
        self.lock = threading.Lock()

    def take(self) -> float:
        """Wait for one token; return the seconds waited."""
        if self.rate <= 0:
            return 0.0
        with self.lock:
            now = self.clock()
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
            self.last = now
            wait = 0.0
            if self.tokens < 1.0:
                wait = (1.0 - self.tokens) / self.rate
                self.sleep(wait)
                self.last = self.clock()
                self.tokens = 1.0
            self.tokens -= 1.0
            return wait


def retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or an HTTP date), at most
    60; None when the value is absent, negative, not finite or unreadable."""
    if not value:
        return None
    try:
        secs = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        secs = max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())
    if not math.isfinite(secs) or secs < 0:
        return None
    return min(secs, MAX_RETRY_AFTER)


# -- the total deadline of a request: every socket operation gets at most what is left of it
_deadline = threading.local()


class _DeadlineExceeded(Exception):
    """The request's total deadline passed before its answer was complete."""


def _left(timeout: float | None) -> float | None:
    end = getattr(_deadline, "end", None)
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("total deadline exceeded")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.SyncBackend):
    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _DeadlineStream(super().connect_tcp(host, port, _left(timeout), local_address, socket_options))


def _with_deadlines(client: httpx.Client) -> httpx.Client:
    """Give every connection pool of ``client`` (direct and through env proxies) the
    deadline-aware network backend. httpx has no public hook for it: the pools are
    httpcore's, whose ``_network_backend`` is read on every new connection (the hostile
    server tests fail if a new httpx changes that)."""
    for transport in (getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()):
        pool = getattr(transport, "_pool", None)
        if pool is not None:
            pool._network_backend = _DeadlineBackend()
    return client


class _Refused(Exception):
    """A body past MAX_BODY, or in a content coding this client does not read."""


CODINGS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


class _Inflater:
    """One content-coding layer, inflated chunk by chunk and never past ``MAX_BODY`` bytes
    of output: a small compressed chunk can stand for gigabytes (a deflate stream inflates
    up to about 1000 times, two layers about a million times)."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self.wbits = CODINGS[coding]
        self.d = zlib.decompressobj(self.wbits)
        self.started = False
        self.total = 0

    def feed(self, data: bytes) -> bytes:
        try:
            out = self._bounded(data)
        except zlib.error:
            if self.coding != "deflate" or self.started:
                raise
            # "deflate" is sent both zlib-wrapped (as RFC 9110 says) and raw: try raw
            self.wbits = -zlib.MAX_WBITS
            self.d = zlib.decompressobj(self.wbits)
            out = self._bounded(data)
        self.started = True
        return out

    def _bounded(self, data: bytes) -> bytes:
        room = MAX_BODY - self.total
        out = self.d.decompress(data, room + 1)
        while self.d.unconsumed_tail and len(out) <= room:
            out += self.d.decompress(self.d.unconsumed_tail, room + 1 - len(out))
        self.total += len(out)
        if self.total > MAX_BODY:
            raise _Refused(f"body larger than {MAX_BODY // 2**20} MiB refused (after {self.coding} decoding)")
        return out

    def flush(self) -> bytes:
        out = self.d.flush()
        self.total += len(out)
        if self.total > MAX_BODY:
            raise _Refused(f"body larger than {MAX_BODY // 2**20} MiB refused (after {self.coding} decoding)")
        return out


def _inflater(content_encoding: str) -> _Inflater | None:
    """The decoder of a ``Content-Encoding``: None for none (or identity). More than one
    coding is refused: every real server sends one, and each layer multiplies what a few
    bytes on the wire can stand for."""
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if len(codings) > 1:
        raise _Refused(f"more than one content coding refused (Content-Encoding: {', '.join(codings)})")
    if not codings:
        return None
    if codings[0] not in CODINGS:
        raise _Refused(f"content coding {codings[0][:40]!r} not supported")
    return _Inflater(codings[0])


def _read_body(r: httpx.Response) -> bytes:
    """The decoded body of a streamed response, refused past MAX_BODY bytes: counted on the
    wire and after decoding, chunk by chunk, so no more than MAX_BODY is ever held."""
    declared = r.headers.get("content-length", "")
    if is_decimal(declared, signed=False) and int(declared) > MAX_BODY:
        raise _Refused(f"body of {int(declared):,} bytes refused (limit {MAX_BODY // 2**20} MiB)")
    inflater = _inflater(r.headers.get("content-encoding", ""))
    body = bytearray()
    wire = 0
    try:
        for chunk in r.iter_raw():
            wire += len(chunk)
            if wire > MAX_BODY:
                raise _Refused(f"body larger than {MAX_BODY // 2**20} MiB refused")
            body += inflater.feed(chunk) if inflater else chunk
            if len(body) > MAX_BODY:
                raise _Refused(f"body larger than {MAX_BODY // 2**20} MiB refused")
        if inflater:
            body += inflater.flush()
    except zlib.error as exc:
        raise httpx.DecodingError(f"{inflater.coding if inflater else ''} content: {exc}") from None
    return bytes(body)


@dataclass
class _Answer:
    status: int
    url: str  # final, redacted
    body: bytes
    encoding: str
    content_type: str
    retry_after: float | None

    @property
    def text(self) -> str:
        return self.body.decode(self.encoding, errors="replace")


@dataclass
class Response:
    """A decoded JSON answer and where it came from (provenance of every stored row)."""

    data: Any
    url: str  # the final URL after redirects, redacted
    status: int
    height: int | None
    fetched_at: datetime


def _split_base(base: str) -> tuple[str, str]:
    """A base URL as ``(prefix, query)``: ``http://h/p/?api_key=K`` is ``("http://h/p", "api_key=K")``
    (a fragment is never sent)."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return base, ""
    if not parts.query and not parts.fragment:
        return base, ""
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", "")), parts.query


def _joined(base: tuple[str, str], path: str, query: str) -> str:
    """The URL of ``path?query`` under ``base`` (:func:`_split_base`): after its path prefix, with
    its own query parameters first (``http://h/p/?k=K`` and ``/x?a=1``: ``http://h/p/x?k=K&a=1``)."""
    prefix, base_query = base
    both = "&".join(q for q in (base_query, query) if q)
    return prefix + path + (f"?{both}" if both else "")


@dataclass
class Attempt:
    url: str
    outcome: str


@dataclass
class JsonClient:
    """GET JSON from the first of ``bases`` that answers it properly."""

    bases: list[str]
    answerer: str = "node"      # what a base is, in the line said when none answered ("no node answered ...")
    rate_per_min: float = 20.0
    burst: int = 200
    timeout: float = 10.0
    deadline: float | None = None  # total seconds per request; None: DEADLINE_FACTOR × timeout
    retries: int = 3
    backoff: float = 0.5
    record_dir: Path | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic    # the rate buckets' clock (a test's fast one)
    requests_sent: int = 0
    _buckets: dict[str, TokenBucket] = field(default_factory=dict)
    _down: set[str] = field(default_factory=set)
    _record_seq: int = 0
    _split: dict[str, tuple[str, str]] = field(default_factory=dict)   # base -> (path prefix, its query)

    def __post_init__(self) -> None:
        if not self.bases:
            raise SourceError("no source URL given")
        self.bases = [b.rstrip("/") for b in self.bases]
        for b in self.bases:
            self._split[b] = _split_base(b)
            try:
                url = httpx.URL(b)
            except httpx.InvalidURL as exc:
                raise UsageError(f"not a usable URL: {redact_url(b)} ({exc})") from None
            if url.scheme not in ("http", "https") or not url.host:
                raise UsageError(f"not a usable URL: {redact_url(b)} (give http://HOST[:PORT] or https://...)")
        if self.deadline is None:
            self.deadline = DEADLINE_FACTOR * self.timeout
        self._http = _with_deadlines(httpx.Client(
            timeout=self.timeout, follow_redirects=True,
            headers={"accept": "application/json", "accept-encoding": ", ".join(CODINGS_ASKED),
                     "user-agent": "auditor"}))
        if self.record_dir is not None:
            from .replay import start_recording

            self.record_dir = Path(self.record_dir)
            self._record_seq = start_recording(self.record_dir)

    @property
    def shown(self) -> list[str]:
        """The base URLs as they may be printed: credentials redacted."""
        return [redact_url(b) for b in self.bases]

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "JsonClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str, params: dict[str, Any] | None = None, *, height: int | None = None,
            parse: Callable[[str], Any] = json.loads) -> Response:
        """GET JSON at ``path`` (with ``params``), pinned at ``height`` when given.

        ``parse`` turns the text into ``data`` (``json.loads``; a streaming reader of the same
        JSON for a large answer): the ValueError it raises on malformed JSON fails over.
        Raises NotFoundError when a node answers 404 to an unpinned request
        (``{"found": false}`` answers are left to the caller), SourceError when no
        node gave a usable answer.
        """
        return self._fetch(path, params, height, parse)

    def get_text(self, path: str, params: dict[str, Any] | None = None) -> Response:
        """GET a text body (e.g. a Prometheus exposition); ``data`` is the text."""
        return self._fetch(path, params, None, lambda text: text)

    def get_bytes(self, path: str, params: dict[str, Any] | None = None,
                  parse: Callable[[bytes], Any] = bytes) -> Response:
        """GET a binary body (a demand bundle's Parquet); ``data`` is ``parse`` of the bytes,
        whose ValueError is a malformed answer, like JSON's."""
        return self._fetch(path, params, None, parse, raw=True)

    def _fetch(self, path: str, params: dict[str, Any] | None, height: int | None,
               decode: Callable[[Any], Any], raw: bool = False) -> Response:
        query = urlencode(params or {}, doseq=True)
        target = path + (f"?{query}" if query else "")
        headers = {HEIGHT_HEADER: str(height)} if height is not None else {}
        tried: list[Attempt] = []
        not_found: str | None = None
        # nodes that failed at the transport level earlier in this run are asked last
        order = [b for b in self.bases if b not in self._down] + [b for b in self.bases if b in self._down]
        for i, base in enumerate(order):
            url = _joined(self._split[base], path, query)
            shown = redact_url(url)
            others_left = i < len(order) - 1
            bucket = self._buckets.setdefault(base, TokenBucket(self.rate_per_min, self.burst, self.clock, self.sleep))
            for attempt in range(self.retries + 1):
                bucket.take()
                fetched_at = datetime.now(timezone.utc)
                self.requests_sent += 1
                try:
                    answer = self._get(url, headers)
                except _DeadlineExceeded:
                    self._down.add(base)
                    tried.append(Attempt(shown, f"no complete answer within the {self.deadline:g} s deadline"))
                    break  # a server that drips its answer will not speed up for a retry
                except httpx.TimeoutException:
                    outcome = "timed out"
                    if others_left:  # fail over at once; the last node left gets the retries
                        self._down.add(base)
                        tried.append(Attempt(shown, outcome))
                        break
                    answer = None
                except httpx.TransportError as exc:
                    self._down.add(base)
                    tried.append(Attempt(shown, f"unreachable ({type(exc).__name__})"))
                    break  # a node that refuses connections will not recover within a retry
                except httpx.RequestError as exc:  # undecodable content, too many redirects
                    tried.append(Attempt(shown, f"failed ({type(exc).__name__})"))
                    break
                except _Refused as exc:
                    tried.append(Attempt(shown, str(exc)))
                    break
                else:
                    self._down.discard(base)
                    self._record(path, query, height, answer)
                    status, final = answer.status, answer.url
                    if status == 200:
                        try:
                            data = decode(answer.body if raw else answer.text)
                        except json.JSONDecodeError as exc:
                            # "Unterminated string starting at" already ends in "at"
                            where = "" if exc.msg.endswith(" at") else " at"
                            tried.append(Attempt(final, f"malformed JSON ({exc.msg}{where} char {exc.pos})"))
                            break
                        except RecursionError:
                            tried.append(Attempt(final, "malformed JSON (nested too deeply)"))
                            break
                        except ValueError as exc:  # a number past Python's 4300 digits, and the like
                            tried.append(Attempt(final, f"malformed JSON ({str(exc).split(':')[0][:120]})"))
                            break
                        return Response(data, final, 200, height, fetched_at)
                    if status == 404 and height is None:
                        not_found = final
                        tried.append(Attempt(final, "404 not found"))
                        break
                    outcome = f"HTTP {status}"
                    if status not in RETRY_STATUSES:
                        tried.append(Attempt(final, outcome))
                        break  # 4xx other than 429, or a pinned height this node lacks
                if attempt < self.retries:
                    wait = answer.retry_after if answer is not None else None
                    self.sleep(self.backoff * (2 ** attempt) if wait is None else wait)
                else:
                    tried.append(Attempt(shown, f"{outcome} after {self.retries + 1} tries"))
        if not_found is not None:
            raise NotFoundError(f"not found: {not_found}")
        detail = "; ".join(f"{a.url}: {a.outcome}" for a in tried)
        raise SourceError(f"no {self.answerer} answered {target or 'the request'}"
                          + (f" at height {height}" if height else "")
                          + f" ({detail})")

    def _get(self, url: str, headers: dict[str, str]) -> _Answer:
        """One GET within the total deadline."""
        end = _deadline.end = time.monotonic() + self.deadline
        try:
            with self._http.stream("GET", url, headers=headers) as r:
                return _Answer(r.status_code, redact_url(str(r.url)), _read_body(r), r.encoding or "utf-8",
                               r.headers.get("content-type", "application/json"),
                               retry_after(r.headers.get("retry-after")))
        except httpx.TimeoutException:
            if time.monotonic() >= end - 0.05:
                raise _DeadlineExceeded from None
            raise
        finally:
            _deadline.end = None

    def _record(self, path: str, query: str, height: int | None, answer: _Answer) -> None:
        if self.record_dir is None:
            return
        from .replay import save_response

        entry = {
            "path": path,
            "query": query,
            "height": height,
            "status": answer.status,
            "content_type": answer.content_type,
            "body": answer.text,
        }
        self._record_seq = save_response(self.record_dir, self._record_seq + 1, entry)
