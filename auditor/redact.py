"""Credentials never leave the process: every URL printed or stored goes through here.

- :func:`redact_url` drops the userinfo (``http://user:password@host`` becomes
  ``http://***@host``), masks the value of every query parameter but the few the auditor
  itself sends (:data:`API_PARAMS`: ``?api_key=K`` and ``?project=K`` become ``=***``), and
  masks every path
  segment that looks like a key (:func:`keylike`: ``https://x.provider.example/Q2x9…/``
  becomes ``https://x.provider.example/***/``), never a segment of the chain's or the
  gateway's API paths (``/chain-api``, ``/devshard/v1``, ``/epoch_performance_summary``).
- :func:`redact_text` does the same to every URL inside a free-form message.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

MASK = "***"

# the query parameters the auditor sends (auditor/sources): their values are the request's, not a secret
API_PARAMS = {"pagination.key", "pagination.limit", "height", "model_id"}
# the segments of the API paths the auditor asks (chain-api.md, gateway-accounting.md, devshard hosts):
# never masked, whatever the key rule says of them
API_SEGMENTS = {
    "chain-api", "chain-rpc", "productscience", "inference", "api", "v1", "epochs", "latest", "participants",
    "devshard", "stats", "shards", "metrics", "block", "params", "models_all", "participant",
    "epoch_group_data", "epoch_performance_summary", "excluded_participants", "confirmation_poc_events",
    "devshard_escrow", "preserved_nodes_snapshot",
}
# a key: a run of 16 or more letters and digits (and the -_.~ of base64url and the like) with a digit
# in it, or of 24 or more letters; an API path's own segments are words, or numbers (an epoch, an escrow id)
_KEY_RE = re.compile(r"(?=[^/]*[0-9])(?=[^/]*[A-Za-z])[A-Za-z0-9_.~=+-]{16,}|[A-Za-z]{24,}")

_URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]{},;]+(?<![:.!?])")  # not the sentence's : or .


def keylike(segment: str) -> bool:
    """Whether a URL path segment looks like a key (``Q2x9aZ…``), not a word or number of an API path."""
    return segment not in API_SEGMENTS and _KEY_RE.fullmatch(segment) is not None


def _masked_value(name: str) -> bool:
    """Every query value is masked but those of the auditor's own parameters."""
    return name not in API_PARAMS


def redact_url(url: str) -> str:
    """``url`` without its userinfo, its query values (but the auditor's own parameters) and
    the path segments that look like keys (:func:`keylike`) masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _fallback(url)
    head, slash, rest = url.partition("/")
    if not parts.netloc and "@" in head:
        # no "//" ("user:password@host:port/path" as typed): what comes before the first "/" is the authority
        return MASK + "@" + head.rpartition("@")[2] + slash + (redact_url(rest) if rest else "")
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_masked_value(k) for k, _ in pairs):
            query = "&".join(f"{quote(k, safe='.-_~')}={MASK if _masked_value(k) else quote(v, safe='.-_~')}"
                             for k, v in pairs)
    path = "/".join(MASK if keylike(seg) else seg for seg in parts.path.split("/"))
    if netloc == parts.netloc and query == parts.query and path == parts.path:
        return url
    return urlunsplit((parts.scheme, netloc, path, query, parts.fragment))


def _fallback(text: str) -> str:
    """For a string ``urlsplit`` refuses: cut anything that looks like userinfo, a query value or a key."""
    text = re.sub(r"://[^/\s@]*@", f"://{MASK}@", text)
    text = re.sub(r"(?<=[^/:]/)[^/?#\s]+", lambda m: MASK if keylike(m.group(0)) else m.group(0), text)
    return re.sub(r"([?&;]([^=&\s]+)=)[^&\s]*",
                  lambda m: m.group(1) + MASK if _masked_value(m.group(2)) else m.group(0), text)


def redact_text(text: str) -> str:
    """``text`` with every URL in it redacted."""
    return _URL_RE.sub(lambda m: redact_url(m.group(0)), text)
