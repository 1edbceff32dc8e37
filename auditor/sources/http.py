"""The shared HTTP client of every collector: failover, retry, rate limit, record.

- Several base URLs mean failover in order: a node that is down, keeps answering
  429/5xx, times out or sends a body that is not JSON is left for the next one.
  A node that refused a connection or timed out is asked last for the rest of the run.
- Each node gets its own token bucket (default 20 requests per minute, burst 200:
  the public node proxy's limit), so one epoch's collection goes through at once
  and a long run never exceeds the limit. ``rate=0`` means unlimited.
- ``record_dir`` saves every raw response (status, headers, body as text) so a
  run can be replayed by :mod:`auditor.sources.replay` and shared as evidence.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlencode

import httpx

from ..errors import NotFoundError, SourceError

HEIGHT_HEADER = "x-cosmos-block-height"
RETRY_STATUSES = {429, 500, 502, 503, 504}


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


@dataclass
class Response:
    """A decoded JSON answer and where it came from (provenance of every stored row)."""

    data: Any
    url: str
    status: int
    height: int | None
    fetched_at: datetime


@dataclass
class Attempt:
    url: str
    outcome: str


@dataclass
class JsonClient:
    """GET JSON from the first of ``bases`` that answers it properly."""

    bases: list[str]
    rate_per_min: float = 20.0
    burst: int = 200
    timeout: float = 10.0
    retries: int = 3
    backoff: float = 0.5
    record_dir: Path | None = None
    sleep: Callable[[float], None] = time.sleep
    requests_sent: int = 0
    _buckets: dict[str, TokenBucket] = field(default_factory=dict)
    _down: set[str] = field(default_factory=set)
    _record_seq: int = 0

    def __post_init__(self) -> None:
        if not self.bases:
            raise SourceError("no source URL given")
        self.bases = [b.rstrip("/") for b in self.bases]
        self._http = httpx.Client(timeout=self.timeout, follow_redirects=True,
                                  headers={"accept": "application/json", "user-agent": "auditor"})
        if self.record_dir is not None:
            self.record_dir = Path(self.record_dir)
            self.record_dir.mkdir(parents=True, exist_ok=True)
            self._record_seq = len(list(self.record_dir.glob("*.json")))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "JsonClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str, params: dict[str, Any] | None = None, *, height: int | None = None) -> Response:
        """GET JSON at ``path`` (with ``params``), pinned at ``height`` when given.

        Raises NotFoundError when a node answers 404 to an unpinned request
        (``{"found": false}`` answers are left to the caller), SourceError when no
        node gave a usable answer.
        """
        return self._fetch(path, params, height, json.loads)

    def get_text(self, path: str, params: dict[str, Any] | None = None) -> Response:
        """GET a text body (e.g. a Prometheus exposition); ``data`` is the text."""
        return self._fetch(path, params, None, lambda text: text)

    def _fetch(self, path: str, params: dict[str, Any] | None, height: int | None,
               decode: Callable[[str], Any]) -> Response:
        query = urlencode(params or {}, doseq=True)
        target = path + (f"?{query}" if query else "")
        headers = {HEIGHT_HEADER: str(height)} if height is not None else {}
        tried: list[Attempt] = []
        not_found: str | None = None
        # nodes that failed at the transport level earlier in this run are asked last
        order = [b for b in self.bases if b not in self._down] + [b for b in self.bases if b in self._down]
        for i, base in enumerate(order):
            url = base + target
            others_left = i < len(order) - 1
            bucket = self._buckets.setdefault(base, TokenBucket(self.rate_per_min, self.burst, sleep=self.sleep))
            for attempt in range(self.retries + 1):
                r: httpx.Response | None = None
                bucket.take()
                fetched_at = datetime.now(timezone.utc)
                self.requests_sent += 1
                try:
                    r = self._http.get(url, headers=headers)
                except httpx.TimeoutException:
                    outcome = "timed out"
                    if others_left:  # fail over at once; the last node left gets the retries
                        self._down.add(base)
                        tried.append(Attempt(url, outcome))
                        break
                except httpx.TransportError as exc:
                    self._down.add(base)
                    tried.append(Attempt(url, f"unreachable ({type(exc).__name__})"))
                    break  # a node that refuses connections will not recover within a retry
                else:
                    self._down.discard(base)
                    self._record(path, query, height, r)
                    if r.status_code == 200:
                        try:
                            data = decode(r.text)
                        except json.JSONDecodeError as exc:
                            tried.append(Attempt(url, f"malformed JSON ({exc.msg} at char {exc.pos})"))
                            break
                        return Response(data, url, 200, height, fetched_at)
                    if r.status_code == 404 and height is None:
                        not_found = url
                        tried.append(Attempt(url, "404 not found"))
                        break
                    outcome = f"HTTP {r.status_code}"
                    if r.status_code not in RETRY_STATUSES:
                        tried.append(Attempt(url, outcome))
                        break  # 4xx other than 429, or a pinned height this node lacks
                if attempt < self.retries:
                    self.sleep(self._delay(attempt, r))
                else:
                    tried.append(Attempt(url, f"{outcome} after {self.retries + 1} tries"))
        if not_found is not None:
            raise NotFoundError(f"not found: {not_found}")
        detail = "; ".join(f"{a.url}: {a.outcome}" for a in tried)
        raise SourceError(f"no node answered {target or 'the request'}" + (f" at height {height}" if height else "")
                          + f" ({detail})")

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None and response.status_code == 429:
            try:
                return min(float(response.headers.get("retry-after", "")), 60.0)
            except ValueError:
                pass
        return self.backoff * (2 ** attempt)

    def _record(self, path: str, query: str, height: int | None, r: httpx.Response) -> None:
        if self.record_dir is None:
            return
        self._record_seq += 1
        entry = {
            "path": path,
            "query": query,
            "height": height,
            "status": r.status_code,
            "content_type": r.headers.get("content-type", "application/json"),
            "body": r.text,
        }
        out = self.record_dir / f"{self._record_seq:06d}.json"
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(entry, ensure_ascii=False, indent=1), encoding="utf-8")
        tmp.replace(out)
