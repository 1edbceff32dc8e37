"""Credentials never leave the process: every URL printed or stored goes through here.

- :func:`redact_url` drops the userinfo (``http://user:password@host`` becomes
  ``http://***@host``) and masks the value of every query parameter that carries a
  credential (:func:`secret_name`).
- :func:`redact_text` does the same to every URL inside a free-form message.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

MASK = "***"

# query-parameter and header names (lower case) that carry a credential
_SECRET_NAMES = {
    "token", "key", "apikey", "api_key", "api-key", "access_token", "auth", "authorization",
    "password", "passwd", "pwd", "pass", "secret", "client_secret", "signature", "sig",
    "credential", "credentials", "session", "sessionid", "jwt", "cookie", "set-cookie",
    "proxy-authorization", "x-amz-credential",
}
# ...and any name ending in one of these (x-amz-signature, refresh_token, x-api-key, db_password)
_SECRET_SUFFIXES = ("token", "secret", "password", "signature", "apikey", "api_key", "api-key", "auth")

_URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]{},;]+(?<![:.!?])")  # not the sentence's : or .


def secret_name(name: str) -> bool:
    """Whether a query parameter or header called ``name`` carries a credential (any case)."""
    n = name.strip().lower()
    return n in _SECRET_NAMES or n.endswith(_SECRET_SUFFIXES)


def redact_url(url: str) -> str:
    """``url`` without its userinfo and with credential-bearing query values masked."""
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
        if any(secret_name(k) for k, _ in pairs):
            query = "&".join(f"{quote(k, safe='.-_~')}={MASK if secret_name(k) else quote(v, safe='.-_~')}"
                             for k, v in pairs)
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _fallback(text: str) -> str:
    """For a string ``urlsplit`` refuses: cut anything that looks like userinfo or a secret value."""
    text = re.sub(r"://[^/\s@]*@", f"://{MASK}@", text)
    return re.sub(r"([?&;]([^=&\s]+)=)[^&\s]*",
                  lambda m: m.group(1) + MASK if secret_name(m.group(2)) else m.group(0), text)


def redact_text(text: str) -> str:
    """``text`` with every URL in it redacted."""
    return _URL_RE.sub(lambda m: redact_url(m.group(0)), text)
