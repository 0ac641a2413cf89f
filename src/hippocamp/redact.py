"""Secrets never leave the process: one redaction for every string hippocamp writes or prints.

A user can hand hippocamp a secret in a model string's URL (``http://user:KEY@host/v1?api_key=KEY``),
in model options (``api_key``, ``headers={"Authorization": "Bearer ..."}``) or in the environment
(``OPENAI_API_KEY``, ``HF_TOKEN``...), and any error message may echo it. `redact_text` blanks, in any
text: credentials inside URLs (user-info and secret-named query parameters), header-like pairs
(``Authorization: Bearer ...``, ``api_key='...'``), values shaped like keys (``sk-...``, ``hf_...``,
``ghp_...``, JWTs...), the values of secret-named environment variables, and every secret met so
far (`remember`). `redact` does the same over JSON-like data and also blanks whole values stored under
a secret-named key (for configs such as a run manifest's model options).

The sinks apply it: the durable JSON Lines writer (episodes, scores), the run manifest, the report
writers, the CLI's output streams and error messages, and the log handler the CLI installs. The
replacement never contains a quote or a backslash and no pattern consumes one, so redacting the text
of a JSON document leaves valid JSON.

This module imports nothing of hippocamp's, so every package may use it.
"""

from __future__ import annotations

import functools
import html
import json
import logging
import os
import re
import threading
from collections.abc import Iterable
from typing import Any

__all__ = [
    "REDACTED",
    "RedactingFilter",
    "env_secrets",
    "forget_all",
    "redact",
    "redact_text",
    "remember",
    "scrub",
]

REDACTED = "[redacted]"
#: secrets shorter than this are never replaced verbatim (too likely to be ordinary text)
MIN_SECRET = 6

#: a key (dict key, header, query parameter, option) whose value is a secret
_SECRET_KEY = re.compile(
    r"(^|[_\-.])(api[_\-]?key|apikey|key|secret|secrets|token|access[_\-]?token|password|passwd|pwd|"
    r"authorization|auth|credential|credentials|bearer|cookie|session|client[_\-]?secret|private[_\-]?key|"
    r"sig|signature)$",
    re.IGNORECASE,
)
#: a whole value shaped like a key
_SECRET_VALUE = re.compile(
    r"^(sk|pk|rk)-[A-Za-z0-9_\-]{8,}|^hf_[A-Za-z0-9]{16,}|^gh[pousr]_[A-Za-z0-9]{16,}|^glpat-|^xox[abprs]-|"
    r"^AKIA[0-9A-Z]{12,}|^AIza[0-9A-Za-z_\-]{20,}|^Bearer\s|^eyJ[A-Za-z0-9_\-]{10,}\.",
)
# Characters a secret value may not span in text: blanks, quotes, backslashes (JSON escapes) and
# delimiters. Keeping '"' and '\\' out of every match keeps redacted JSON valid.
_V = r"[^\s\"'\\<>,;&)\]}]"
#: credentials in a URL's user-info: scheme://user:PASSWORD@ or scheme://TOKEN@
_URL_USERINFO = re.compile(r"(?P<head>://)(?P<user>[^\s\"'\\/@:?#]*)(?::(?P<pw>[^\s\"'\\/@?#]*))?@")
#: query or fragment parameters: ?name=value, &name=value (also HTML-escaped &amp;name=value)
_URL_PARAM = re.compile(r"(?P<head>[?&;#](?P<name>[A-Za-z0-9_.\-]{1,64})=)(?P<value>[^\s\"'\\&#<>]+)")
#: header-like and option-like pairs in text: Authorization: Bearer X, "api_key": "X", password=X
_PAIR = re.compile(
    r"(?P<head>\b(?P<name>authorization|proxy-authorization|x-api-key|api-key|api_key|apikey|x-auth-token|"
    r"access_token|auth_token|refresh_token|client_secret|secret_key|private_key|password|passwd|cookie|set-cookie|"
    r"token|secret)(?:\\?[\"']|&#3[49];|&quot;)?\s*[:=]\s*(?:\\?[\"']|&#3[49];|&quot;)?\s*"
    r"(?:(?:bearer|basic|token|digest)\s+)?)(?P<value>" + _V + r"{3,})",
    re.IGNORECASE,
)
#: key-shaped values anywhere in text, each with a literal that must occur for it to be tried (fast)
_SHAPES: list[tuple[str, bool, re.Pattern[str]]] = [
    ("sk-", False, re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")),
    ("hf_", False, re.compile(r"\bhf_[A-Za-z0-9]{16,}")),
    ("gh", False, re.compile(r"\bgh[pousr]_[A-Za-z0-9]{16,}|\bgithub_pat_[A-Za-z0-9_]{20,}")),
    ("glpat-", False, re.compile(r"\bglpat-[A-Za-z0-9_\-]{10,}")),
    ("xox", False, re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}")),
    ("AKIA", False, re.compile(r"\bAKIA[0-9A-Z]{12,}")),
    ("AIza", False, re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}")),
    ("eyJ", False, re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*")),
    ("bearer", True, re.compile(r"(?P<scheme>\b[Bb][Ee][Aa][Rr][Ee][Rr]\s+)[A-Za-z0-9._~+/=\-]{8,}")),
    # HTTP basic credentials (base64 of user:password), as a client sends a URL's user-info
    ("Basic", False, re.compile(r"(?P<scheme>\bBasic\s+)(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2}")),
]
#: words one of which a header- or option-like pair needs (a fast test before the pattern)
_PAIR_WORDS = ("auth", "api", "token", "secret", "passw", "cookie", "private")
#: environment variables whose value is a secret: a name part among these
_ENV_PARTS = frozenset(
    {"KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL",
     "CREDENTIALS", "AUTH", "COOKIE", "PAT", "PRIVATE"}
)  # fmt: skip
#: ... unless the name ends like a path or a setting about the secret, not the secret itself
_ENV_NOT = re.compile(
    r"_(SOCK|SOCKET|FILE|PATH|DIR|HOME|CACHE|CONFIG|LOCATION|PREFIX|URL|HOST|PORT|ID|TYPE|NAME|MODE|LENGTH|LEN|VAR|ENV|"
    r"PROVIDER|HELPER|COMMAND|CMD|ALGORITHM)$"
)
_ENV_VALUES_IGNORED = frozenset({"", "0", "1", "true", "false", "yes", "no", "none", "null", "no-key-needed"})

_lock = threading.Lock()
_remembered: set[str] = set()


def remember(*secrets: str | None) -> None:
    """Secrets to blank wherever they appear from now on, in this process (e.g. a URL's password)."""
    with _lock:
        for s in secrets:
            if s and len(s) >= MIN_SECRET and s != REDACTED:
                _remembered.add(s)


def forget_all() -> None:
    """Forget every remembered secret (tests)."""
    with _lock:
        _remembered.clear()


def _env_secret_name(name: str) -> bool:
    upper = name.upper()
    if upper in ("PWD", "OLDPWD") or _ENV_NOT.search(upper):
        return False
    return any(part in _ENV_PARTS for part in re.split(r"[_\-.]", upper))


def env_secrets(environ: Any = None) -> list[str]:
    """Values of environment variables named like secrets (``OPENAI_API_KEY``, ``HF_TOKEN``, ...),
    except flags and paths that exist (``*_TOKEN_CACHE=/root/.cache`` is no secret)."""
    env = os.environ if environ is None else environ
    candidates = tuple(sorted(
        value for name, value in list(env.items())
        if _env_secret_name(name) and len(value) >= MIN_SECRET and value.strip().lower() not in _ENV_VALUES_IGNORED
    ))  # fmt: skip
    return _not_paths(candidates)


@functools.lru_cache(maxsize=64)
def _not_paths(values: tuple[str, ...]) -> list[str]:
    return [v for v in values if not (v.startswith(("/", "~", "./")) and os.path.exists(os.path.expanduser(v)))]


def _literals() -> list[str]:
    with _lock:
        found = set(_remembered)
    found.update(env_secrets())
    forms: set[str] = set()
    for s in found:
        forms.add(s)
        forms.add(json.dumps(s, ensure_ascii=False)[1:-1])  # as it appears inside a JSON string
        forms.add(html.escape(s))  # as it appears in HTML
        forms.add(html.escape(s).replace("&#x27;", "&#39;").replace("&quot;", "&#34;"))  # as jinja2 escapes it
    return sorted((f for f in forms if len(f) >= MIN_SECRET), key=len, reverse=True)


def _blank_userinfo(m: re.Match[str], found: list[str] | None) -> str:
    user, pw = m.group("user"), m.group("pw")
    if pw is not None:
        if not pw or pw == REDACTED:
            return m.group(0)
        if found is not None:
            found.append(pw)
        return f"{m.group('head')}{user}:{REDACTED}@"
    if len(user) < 12 or user == REDACTED:  # git@, user@: names; a long lone user-info is a token
        return m.group(0)
    if found is not None:
        found.append(user)  # a lone user-info is usually a token (https://TOKEN@host)
    return f"{m.group('head')}{REDACTED}@"


def _blank_param(m: re.Match[str], found: list[str] | None) -> str:
    value = m.group("value")
    if not _SECRET_KEY.search(m.group("name")) or value == REDACTED:
        return m.group(0)
    if found is not None:
        found.append(value)
    return m.group("head") + REDACTED


def _blank_pair(m: re.Match[str], found: list[str] | None) -> str:
    value = m.group("value")
    if value == REDACTED or value.startswith("[redacted"):
        return m.group(0)
    if found is not None:
        found.append(value)
    return m.group("head") + REDACTED


#: embedded data (a report's figures): never redacted, a pattern could match inside the base64
_DATA_URI = re.compile(r"(data:[\w/+.\-]+;base64,[A-Za-z0-9+/=]{16,})")


def redact_text(text: str, found: list[str] | None = None) -> str:
    """``text`` with every secret blanked (see the module docstring); secrets found by pattern are
    appended to ``found``. Safe on JSON and HTML text: the result stays valid JSON or HTML, and
    base64 ``data:`` URIs are left alone."""
    if not text:
        return text
    if ";base64," in text:
        parts = _DATA_URI.split(text)
        return "".join(p if i % 2 else _redact(p, found) for i, p in enumerate(parts))
    return _redact(text, found)


def _redact(text: str, found: list[str] | None) -> str:
    if not text:
        return text
    for literal in _literals():
        if literal in text:
            text = text.replace(literal, REDACTED)
    if "://" in text and "@" in text:
        text = _URL_USERINFO.sub(lambda m: _blank_userinfo(m, found), text)
    if "=" in text:
        text = _URL_PARAM.sub(lambda m: _blank_param(m, found), text)
    low = text.lower()
    if any(word in low for word in _PAIR_WORDS):
        text = _PAIR.sub(lambda m: _blank_pair(m, found), text)
        low = text.lower()

    def shape(m: re.Match[str]) -> str:
        scheme = (m.groupdict().get("scheme") or "") if m.re.groupindex else ""
        if found is not None:
            found.append(m.group(0)[len(scheme) :])
        return scheme + REDACTED

    for literal, folded, pattern in _SHAPES:
        if literal in (low if folded else text):
            text = pattern.sub(shape, text)
            low = text.lower() if folded else low
    return text


def redact(value: Any, found: list[str] | None = None, key: str = "", *, by_key: bool = True) -> Any:
    """A copy of ``value`` (JSON-like data) with secrets replaced by ``[redacted]``: every string as by
    `redact_text`, and, with ``by_key``, whole values under a key that names a secret (api_key, token,
    password, Authorization...) or shaped like keys (sk-..., hf_..., Bearer ...). Secrets found are
    appended to ``found``."""
    found = found if found is not None else []
    if isinstance(value, dict):
        return {k: redact(v, found, str(k), by_key=by_key) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, found, key, by_key=by_key) for v in value]
    if isinstance(value, str):
        if by_key and value and value != REDACTED and (_SECRET_KEY.search(key) or _SECRET_VALUE.search(value.strip())):
            found.append(value)
            return REDACTED
        return redact_text(value, found)
    if value is None or isinstance(value, bool | int | float):
        return value
    return redact(repr(value), found, key, by_key=by_key)


def scrub(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` with every occurrence of the given secrets (4 characters or more) blanked in strings."""
    secrets = [s for s in secrets if len(s) >= 4 and s != REDACTED]
    if not secrets:
        return value
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message (arguments merged in) and exception text."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed log call: keep what can be kept
            message = str(record.msg)
        record.msg, record.args = redact_text(message), None
        if record.exc_info:
            import traceback

            record.exc_text = redact_text("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
            record.exc_info = None
        return True
