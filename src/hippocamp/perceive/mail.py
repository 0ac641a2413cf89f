"""Mail: ``.eml`` (one message) and ``.mbox`` (many), read with the standard library's ``email``.

Every message gives

* a **header segment**: ``From:``, ``To:``, ``Cc:``, ``Date:``, ``Subject:`` and ``Attachments:``
  lines as text; ``meta`` holds the parsed values: ``from``, ``to`` and ``cc`` (lists of
  ``Name <addr>``), ``date`` (ISO 8601), ``subject``, ``message_id`` (without angle brackets),
  ``in_reply_to``, ``attachments`` (the names, in order). Its locator is None: it is the message.
* **body segments**: the decoded body (text/plain preferred, else the HTML's visible text), in
  chunks of about `CHUNK_CHARS` characters cut at paragraph boundaries. Each is located by
  ``LineLocator(unit="paragraph", line=first, line_end=last)``: 1-based paragraphs (blank-line
  separated blocks) of the decoded body text, ``line_end`` only when the chunk spans several.
* **attachments** (inline images, forwarded messages and calendar invitations too), each read by
  the reader of its own type through ``ctx.read_nested``; their segments are placed inside
  ``ItemLocator(unit="attachment", id=FILENAME)`` (``index`` added when a name repeats within one
  message). A part without a filename is named from its content type: ``attachment-3.png``.

Where the message sits: an ``.eml`` *is* the message, so its segments need no container. In an
``.mbox`` each message is ``ItemLocator(unit="email", index=N, id=MESSAGE_ID)`` (N 1-based in file
order) and that locator leads ``within`` of all its segments, attachments' segments included, e.g.
``within == [email index=2, attachment "report.pdf"]`` with ``locator`` page 2 of the PDF.

Bad input: charsets that are unknown or wrong fall back to UTF-8, then Windows-1252, with a note;
a truncated or corrupt message yields what parses, with a note; a file with no mail headers at all
(or an mbox without a ``From `` line) raises `ReadError`.
"""

from __future__ import annotations

import email
import email.parser
import email.policy
import email.utils
import html
import mimetypes
import re
from collections.abc import Iterator
from email.headerregistry import HeaderRegistry
from email.message import EmailMessage, Message
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.perceive.base import Part, ReadContext, ReadError
from hippocamp.registry import register
from hippocamp.schema.locators import ItemLocator, LineLocator, Locator
from hippocamp.schema.segment import Segment

__all__ = ["CHUNK_CHARS", "EmailReader", "MboxReader", "html_to_text", "read_message"]

#: body chunks are cut at paragraph boundaries near this many characters
CHUNK_CHARS = 1500

#: headers of which at least one makes a file mail
_MAIL_HEADERS = frozenset(
    "from to cc bcc subject date message-id received return-path mime-version sender reply-to delivered-to "
    "x-mailer in-reply-to references content-type content-transfer-encoding x-original-to".split()
)
#: defects that mean part of the message is missing or garbled
_SERIOUS_DEFECTS = frozenset(
    {
        "StartBoundaryNotFoundDefect",
        "CloseBoundaryNotFoundDefect",
        "MultipartInvariantViolationDefect",
        "NoBoundaryInMultipartDefect",
        "InvalidBase64PaddingDefect",
        "InvalidBase64CharactersDefect",
        "InvalidBase64LengthDefect",
        "MissingHeaderBodySeparatorDefect",
    }
)
#: signature parts: listed, never read
_SIGNATURE_TYPES = frozenset(
    {"application/pgp-signature", "application/pkcs7-signature", "application/x-pkcs7-signature"}
)
_EXTENSIONS = {
    "text/plain": ".txt",
    "text/html": ".html",
    "text/calendar": ".ics",
    "text/csv": ".csv",
    "text/markdown": ".md",
    "text/vcard": ".vcf",
    "text/x-vcard": ".vcf",
    "message/rfc822": ".eml",
    "application/pdf": ".pdf",
    "application/json": ".json",
    "application/zip": ".zip",
    "application/octet-stream": ".bin",
    "application/pgp-signature": ".asc",
    "application/pkcs7-signature": ".p7s",
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/heic": ".heic",
    "image/svg+xml": ".svg",
    "audio/mpeg": ".mp3",
    "audio/wav": ".wav",
    "video/mp4": ".mp4",
    "application/msword": ".doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
}


@register("reader", "email")
class EmailReader:
    """One message per file (``.eml``): header, body chunks, attachments read by their own readers."""

    name: ClassVar[str] = "email"
    extensions: ClassVar[tuple[str, ...]] = ("eml",)
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        data = path.read_bytes()
        message = _parse(data, ctx)
        if not _looks_like_mail(message):
            raise ReadError("not an email message (no mail headers)")
        return read_message(message, ctx, container=None, label="message")


@register("reader", "mbox")
class MboxReader:
    """A mailbox of many messages (``.mbox``); message N is ``ItemLocator(unit="email", index=N, id=Message-ID)``."""

    name: ClassVar[str] = "mbox"
    extensions: ClassVar[tuple[str, ...]] = ("mbox",)
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        segments: list[Segment] = []
        count = mail = 0
        preamble: list[bytes] = []
        with path.open("rb") as fh:
            for index, raw in enumerate(_split_mbox(fh, preamble), start=1):
                count = index
                message = _parse(raw, ctx, f"message {index}")
                if not _looks_like_mail(message):
                    ctx.note(f"message {index}: no mail headers (truncated or not mail): skipped")
                    continue
                mail += 1
                item = ItemLocator(unit="email", index=index, id=_message_id(message))
                segments.extend(read_message(message, ctx, container=item, label=f"message {index}"))
        if count == 0:
            raise ReadError("not an mbox file (no 'From ' line starting a message)")
        if mail == 0:
            raise ReadError("not an mbox file (no message has mail headers)")
        if b"".join(preamble).strip():
            ctx.note("text before the first message skipped")
        return segments


# -- mbox ----------------------------------------------------------------------------------------
_FROM_QUOTED = re.compile(rb"^>+From ")
#: a From_ line with an asctime date ("From ann@example.com Tue Sep  3 09:15:00 2024")
_FROM_LINE = re.compile(
    rb"^From \S+ +(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) +(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} "
    rb"+\d{1,2}:\d\d(?::\d\d)? .*\d{4}\s*$"
)


def _split_mbox(fh: Any, preamble: list[bytes]) -> Iterator[bytes]:
    """Messages of an mbox, in file order.

    A message starts at a ``From `` line at the start of the file or after a blank line, or at any
    ``From `` line carrying an asctime date. Bytes before the first message go to ``preamble``;
    ``>From `` lines are unquoted one level (mboxrd).
    """
    lines: list[bytes] | None = None
    previous_blank = True
    for line in fh:
        if line.startswith(b"From ") and (previous_blank or _FROM_LINE.match(line)):
            if lines is not None:
                yield b"".join(lines)
            lines = []
        elif lines is not None:
            lines.append(line[1:] if _FROM_QUOTED.match(line) else line)
        else:
            preamble.append(line)
        previous_blank = line.strip() == b""
    if lines is not None:
        yield b"".join(lines)


# -- one message ---------------------------------------------------------------------------------
class _CachingHeaders(HeaderRegistry):
    """``policy.default``'s header registry, remembering recent parses.

    ``policy.default`` parses a header anew on every access, and the parser itself reads each
    part's Content-Type many times; header objects are immutable, so sharing them is safe. This
    makes parsing a mailbox about three times faster.
    """

    def __init__(self, size: int = 1024) -> None:
        super().__init__()
        self._cache: dict[tuple[str, str], Any] = {}
        self._size = size

    def __call__(self, name: str, value: str) -> Any:
        key = (name, value)
        header = self._cache.get(key)
        if header is None:
            if len(self._cache) >= self._size:
                self._cache.clear()
            header = self._cache[key] = super().__call__(name, value)
        return header


#: ``email.policy.default`` with cached header parsing
POLICY = email.policy.default.clone(header_factory=_CachingHeaders())


#: MIME parts nested deeper than this (messages attached to messages...) are not taken apart
MAX_MIME_DEPTH = 64


def _parse(data: bytes, ctx: ReadContext | None = None, label: str = "message") -> EmailMessage:
    """The message, its parts taken apart; one nested past `MAX_MIME_DEPTH` levels (Python's parser
    recurses once per level and fails near a thousand) keeps its headers and its body as raw text."""
    try:
        message: EmailMessage = email.message_from_bytes(data, policy=POLICY)  # type: ignore[assignment]
        if _depth(message) <= MAX_MIME_DEPTH:
            return message
        why = f"more than {MAX_MIME_DEPTH} levels deep"
    except RecursionError:
        why = "too deep for the parser"
    if ctx is not None:
        ctx.note(f"{label}: MIME parts nested {why}: its body was read as raw text")
    return email.parser.BytesParser(policy=POLICY).parsebytes(data, headersonly=True)  # type: ignore[return-value]


def _depth(message: Message) -> int:
    """How deep parts nest in ``message`` (1: a single part), counted without recursion."""
    deepest = 0
    stack: list[tuple[Message, int]] = [(message, 1)]
    while stack:
        part, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_MIME_DEPTH:
            break
        payload = part.get_payload() if part.is_multipart() else None
        if isinstance(payload, list):
            stack.extend((child, depth + 1) for child in payload if isinstance(child, Message))
    return deepest


def _looks_like_mail(message: Message) -> bool:
    return any(str(key).lower() in _MAIL_HEADERS for key in message)


def read_message(message: EmailMessage, ctx: ReadContext, container: Locator | None, label: str) -> list[Segment]:
    """Segments of one parsed message; ``container`` (the mbox item) leads ``within`` of each."""
    outer = [container] if container is not None else []
    walk = _Walk(ctx, label)
    walk.visit(message, in_body=True)
    for defect in _defects(message):
        ctx.note(f"{label}: damaged ({defect}); read what could be parsed")

    names = _attachment_names(walk.attachments)
    headers = _headers(message, ctx, label)
    lines = [f"{key}: {headers[key]}" for key in ("From", "To", "Cc", "Date", "Subject") if headers.get(key)]
    if names:
        lines.append(f"Attachments: {', '.join(names)}")
    meta = {
        "from": _first(headers["_from"]),
        "to": headers["_to"] or None,
        "cc": headers["_cc"] or None,
        "date": headers["_date"],
        "subject": headers.get("Subject"),
        "message_id": headers["_message_id"],
        "in_reply_to": headers["_in_reply_to"],
        "attachments": names,
    }
    segments = [_place(ctx.segment("\n".join(lines), None, **meta), outer)]

    body = "\n\n".join(t for t in walk.texts if t.strip())
    for text, first, last in chunk_paragraphs(body, CHUNK_CHARS):
        locator = LineLocator(unit="paragraph", line=first, line_end=last if last != first else None)
        seg = ctx.segment(text, locator, subject=meta["subject"], message_id=meta["message_id"])
        segments.append(_place(seg, outer))

    for position, (name, (_part, ctype, data)) in enumerate(zip(names, walk.attachments, strict=True), start=1):
        if ctype in _SIGNATURE_TYPES:
            continue
        index = position if names.count(name) > 1 else None  # a repeated name also gets its position
        locator = ItemLocator(unit="attachment", id=name, index=index)
        segments.extend(ctx.read_nested(name, data, [*outer, locator]))
    return segments


def _place(seg: Segment, outer: list[Locator]) -> Segment:
    seg.within = [*seg.within, *outer]
    return seg


def _first(values: list[str]) -> str | None:
    return values[0] if values else None


def _defects(message: Message) -> list[str]:
    found: list[str] = []
    for part in message.walk():
        for defect in getattr(part, "defects", []):
            name = type(defect).__name__
            if name in _SERIOUS_DEFECTS and name not in found:
                found.append(name)
    return found


# -- headers -------------------------------------------------------------------------------------
def _clean(text: str) -> str:
    """Header text without stray undecodable bytes (kept as surrogates by the parser) or folding."""
    if any("\udc80" <= ch <= "\udcff" for ch in text):
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", errors="replace")
    return re.sub(r"\s*\r?\n\s+", " ", text).strip()


def _raw_header(message: Message, name: str) -> str | None:
    for key, value in message.raw_items():
        if key.lower() == name.lower():
            return _clean(str(value))
    return None


def _header(message: Message, name: str) -> Any:
    """The parsed header object, or its raw text when the parser chokes on it."""
    try:
        return message.get(name)
    except Exception:
        return _raw_header(message, name)


def _addresses(value: Any) -> list[str]:
    if value is None:
        return []
    out: list[str] = []
    try:
        for addr in value.addresses:
            display, spec = _clean(addr.display_name or ""), _clean(addr.addr_spec or "")
            if display and spec and display != spec:
                out.append(f"{display} <{spec}>")
            elif spec or display:
                out.append(spec or display)
    except Exception:
        out = [f"{n} <{a}>" if n else a for n, a in email.utils.getaddresses([str(value)]) if a or n]
    return [_clean(a) for a in out if a]


def _headers(message: Message, ctx: ReadContext, label: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("From", "To", "Cc", "Date", "Subject"):
        value = _header(message, key)
        if value is not None:
            try:
                out[key] = _clean(str(value))
            except Exception:
                out[key] = _raw_header(message, key) or ""
    out["_from"] = _addresses(_header(message, "From"))
    out["_to"] = _addresses(_header(message, "To"))
    out["_cc"] = _addresses(_header(message, "Cc"))
    out["_date"] = _iso_date(_header(message, "Date"))
    if out.get("Date") and out["_date"] is None:
        ctx.note(f"{label}: unreadable Date header {out['Date']!r}")
    out["_message_id"] = _message_id(message)
    reply = _header(message, "In-Reply-To")
    out["_in_reply_to"] = _strip_id(str(reply)) if reply is not None else None
    return out


def _iso_date(value: Any) -> str | None:
    if value is None:
        return None
    when = getattr(value, "datetime", None)
    if when is None:
        try:
            when = email.utils.parsedate_to_datetime(str(value))
        except (TypeError, ValueError, IndexError):
            return None
    return when.isoformat() if when is not None else None


def _strip_id(text: str) -> str | None:
    text = _clean(text).strip()
    if text.startswith("<") and ">" in text:
        text = text[1 : text.index(">")]
    return text.strip() or None


def _message_id(message: Message) -> str | None:
    value = _header(message, "Message-ID")
    return None if value is None else _strip_id(str(value))


# -- MIME structure ------------------------------------------------------------------------------
class _Walk:
    """Collects body texts and attachments (part, content type, bytes) from a message's MIME tree, in order."""

    def __init__(self, ctx: ReadContext, label: str) -> None:
        self.ctx, self.label = ctx, label
        self.texts: list[str] = []
        self.attachments: list[tuple[Message, str, bytes]] = []
        self._types: dict[int, str] = {}  # parsing a header again on every access is slow under policy.default

    def ctype(self, part: Message) -> str:
        key = id(part)
        if key not in self._types:
            self._types[key] = part.get_content_type()
        return self._types[key]

    def visit(self, part: Message, in_body: bool) -> None:
        ctype = self.ctype(part)
        maintype = ctype.split("/", 1)[0]
        if ctype == "message/rfc822" or (maintype != "multipart" and self.is_attachment(part)):
            self._attach(part, ctype)
            return
        if maintype == "message":  # delivery-status and the like: not content
            return
        if maintype == "multipart" and not part.is_multipart():  # no boundary: the raw text
            if in_body:
                self.texts.append(_normalize(_clean(str(part.get_payload() or ""))))
            return
        if part.is_multipart():
            children = [p for p in (part.get_payload() or []) if isinstance(p, Message)]
            if ctype == "multipart/alternative" and children:
                chosen = self.choose_alternative(children)
                for child in children:
                    self.visit(child, in_body=in_body and child is chosen)
            else:
                for child in children:
                    self.visit(child, in_body=in_body)
            return
        if ctype in ("text/plain", "text/html"):
            if in_body:
                text = decode_text(part, self.ctx, self.label)
                self.texts.append(html_to_text(text) if ctype == "text/html" else _normalize(text))
            return
        self._attach(part, ctype)

    def _attach(self, part: Message, ctype: str) -> None:
        try:
            if ctype == "message/rfc822":
                inner = part.get_payload()
                inner = inner[0] if isinstance(inner, list) and inner else inner
                data = inner.as_bytes() if isinstance(inner, Message) else bytes(part.get_payload(decode=True) or b"")
            else:
                data = part.get_payload(decode=True) or b""
        except Exception as exc:
            self.ctx.note(f"{self.label}: attachment could not be decoded ({type(exc).__name__}: {exc})")
            data = b""
        self.attachments.append((part, ctype, bytes(data)))

    def is_attachment(self, part: Message) -> bool:
        disposition = (part.get_content_disposition() or "").lower()
        if disposition == "attachment":
            return True
        ctype = self.ctype(part)
        if ctype in ("text/plain", "text/html"):
            return bool(_safe_filename(part))
        return ctype.split("/", 1)[0] not in ("multipart", "message")

    def choose_alternative(self, children: list[Message]) -> Message:
        """The rendering of a multipart/alternative to read: plain text first, else HTML, else the first."""
        for wanted in ("text/plain", "text/html"):
            for child in children:
                if self.holds(child, wanted):
                    return child
        return children[0]

    def holds(self, part: Message, wanted: str) -> bool:
        """Whether ``part`` is (or its body is) a text part of type ``wanted``."""
        ctype = self.ctype(part)
        if ctype == wanted and not self.is_attachment(part):
            return True
        if part.is_multipart() and ctype.startswith("multipart/"):
            payload = part.get_payload() or []
            first = payload[0] if payload and ctype == "multipart/related" else None
            candidates = [first] if first is not None else payload
            return any(isinstance(p, Message) and self.holds(p, wanted) for p in candidates)
        return False


def _safe_filename(part: Message) -> str | None:
    try:
        name = part.get_filename()
    except Exception:
        return None
    if not name:
        return None
    name = _clean(str(name)).replace("\\", "/").rsplit("/", 1)[-1].strip()
    return name or None


def _attachment_names(attachments: list[tuple[Message, str, bytes]]) -> list[str]:
    names = []
    for i, (part, ctype, _data) in enumerate(attachments, start=1):
        name = _safe_filename(part)
        if name is None:
            ext = _EXTENSIONS.get(ctype) or mimetypes.guess_extension(ctype, strict=False) or ""
            name = f"attachment-{i}{ext}"
        names.append(name)
    return names


# -- text ----------------------------------------------------------------------------------------
def decode_text(part: Message, ctx: ReadContext, label: str) -> str:
    """A text part's content, robust to missing, unknown and wrong charsets (noted, then UTF-8 / cp1252)."""
    try:
        data = part.get_payload(decode=True) or b""
    except Exception as exc:
        ctx.note(f"{label}: body could not be decoded ({type(exc).__name__})")
        return ""
    if isinstance(data, str):
        return data
    declared = part.get_content_charset()
    if declared:
        try:
            return data.decode(declared)
        except LookupError:
            problem = f"unknown charset {declared!r}"
        except UnicodeDecodeError:
            problem = f"text is not valid {declared!r}"
    else:
        try:
            return data.decode("ascii")
        except UnicodeDecodeError:
            problem = "no charset declared for 8-bit text"
    for fallback in ("utf-8", "cp1252"):
        try:
            text = data.decode(fallback)
        except UnicodeDecodeError:
            continue
        ctx.note(f"{label}: {problem}; decoded as {fallback}")
        return text
    ctx.note(f"{label}: {problem}; decoded as latin-1")
    return data.decode("latin-1")


def _normalize(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


_BLOCK_TAGS = frozenset(
    "p div br hr li ul ol tr table h1 h2 h3 h4 h5 h6 blockquote pre section article header footer "
    "nav aside dl dt dd address figure figcaption form fieldset main center".split()
)
_HIDDEN_TAGS = frozenset({"script", "style", "head", "title", "template", "noscript"})


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.hidden = 0
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN_TAGS:
            self.hidden += 1
        elif tag == "pre":
            self.pre += 1
        if tag in ("p", "div", "table", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol"):
            self.out.append("\n\n")
        elif tag == "li":
            self.out.append("\n- ")
        elif tag in _BLOCK_TAGS:
            self.out.append("\n")
        elif tag in ("td", "th"):
            self.out.append(" ")
        elif tag == "img":
            alt = dict(attrs).get("alt")
            if alt and not self.hidden:
                self.out.append(f" {alt} ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in _HIDDEN_TAGS:
            self.hidden -= 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN_TAGS:
            self.hidden = max(0, self.hidden - 1)
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in ("p", "div", "table", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol"):
            self.out.append("\n\n")
        elif tag in _BLOCK_TAGS and tag not in ("li", "br"):
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if self.hidden:
            return
        self.out.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_to_text(markup: str) -> str:
    """The visible text of an HTML body: no scripts, styles or head; blocks become paragraphs."""
    parser = _TextExtractor()
    try:
        parser.feed(markup)
        parser.close()
    except Exception:  # malformed markup: strip the tags crudely
        return _normalize(html.unescape(re.sub(r"<[^>]*>", " ", markup)))
    text = "".join(parser.out).replace("\xa0", " ")
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def chunk_paragraphs(text: str, limit: int = CHUNK_CHARS) -> list[tuple[str, int, int]]:
    """Split text into chunks of whole paragraphs near ``limit`` chars: (chunk, first, last) paragraph numbers.

    Paragraphs are blocks separated by blank lines, numbered from 1; a paragraph longer than
    ``limit`` is cut at line or word boundaries into several chunks carrying the same number.
    """
    paragraphs = [p.strip("\n") for p in re.split(r"\n[ \t]*\n", _normalize(text))]
    chunks: list[tuple[str, int, int]] = []
    buf: list[str] = []
    first = last_number = 0
    size = 0
    for number, para in enumerate(paragraphs, start=1):
        if not para.strip():
            continue
        if len(para) > limit:
            if buf:
                chunks.append(("\n\n".join(buf), first, last_number))
                buf, size = [], 0
            chunks.extend((piece, number, number) for piece in _split_long(para, limit))
            continue
        if buf and size + 2 + len(para) > limit:
            chunks.append(("\n\n".join(buf), first, last_number))
            buf, size = [], 0
        if not buf:
            first = number
        buf.append(para)
        size += len(para) + (2 if size else 0)
        last_number = number
    if buf:
        chunks.append(("\n\n".join(buf), first, last_number))
    return chunks


def _split_long(para: str, limit: int) -> list[str]:
    pieces: list[str] = []
    rest = para
    while len(rest) > limit:
        cut = rest.rfind("\n", 0, limit)
        if cut < limit // 2:
            cut = rest.rfind(" ", 0, limit)
        if cut < limit // 2:
            cut = limit
        pieces.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        pieces.append(rest)
    return pieces
