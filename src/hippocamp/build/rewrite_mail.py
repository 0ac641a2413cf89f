"""Calendar and mail rewritten in their own formats (handlers of `hippocamp.build.rewrite`).

* ``.ics .ical .ifb .vcs .vcf`` (`rewrite_ical`): text properties, ORGANIZER/ATTENDEE values and their CN
  parameters, UID; GEO and Apple's structured locations are removed; dates, times and rules are kept as
  they are.
* ``.eml`` (`rewrite_eml`), ``.mbox`` (`rewrite_mbox`): every header but dates and MIME structure (RFC 2047
  words decoded, re-encoded when they were; Message-ID and References too, they carry addresses), text
  bodies in their own charset and transfer encoding, attachment names, and attachments by their own format
  (`RewriteJob.nested`), `hippocamp.build.rewrite.MAX_DEPTH` levels deep; routing and device headers
  (``Received``, ``X-Mailer``, ``X-Originating-IP``, ``User-Agent``, ``X-Apple-*``, DKIM/ARC...) are
  removed. ``Date`` is kept. The ``From`` line starting each message of an mbox is edited too.

Text is decoded as `hippocamp.build.rewrite` decodes text files (the encoding and the newlines are kept).
"""

from __future__ import annotations

import base64
import dataclasses
import email
import email.errors
import email.generator
import email.header
import email.policy
import email.quoprimime
import email.utils
import io
import re
from email.message import Message

from hippocamp.build.rewrite import _LINES, MAX_DEPTH, RewriteJob, _decode, _Decoded

__all__ = ["rewrite_eml", "rewrite_ical", "rewrite_mbox"]


# -- iCalendar and vCard ----------------------------------------------------------------------------------
_PARAM = re.compile(r';([A-Za-z0-9-]+)=((?:"[^"]*"|[^";:,]*)(?:,(?:"[^"]*"|[^";:,]*))*)')
#: never edited: dates, times, rules and structure
_ICAL_KEEP = frozenset(
    "BEGIN END VERSION PRODID CALSCALE METHOD DTSTART DTEND DUE DURATION DTSTAMP CREATED LAST-MODIFIED RRULE "
    "RDATE EXDATE EXRULE RECURRENCE-ID SEQUENCE STATUS TRANSP CLASS PRIORITY TZID TZOFFSETFROM TZOFFSETTO TZNAME "
    "TZURL ACTION TRIGGER REPEAT FREEBUSY PERCENT-COMPLETE COMPLETED REV KIND X-WR-TIMEZONE "
    "X-MICROSOFT-CDO-BUSYSTATUS X-MICROSOFT-CDO-INTENDEDSTATUS X-MICROSOFT-CDO-ALLDAYEVENT".split()
)
#: removed with their values: places and pictures
_ICAL_SCRUB = frozenset("GEO X-APPLE-STRUCTURED-LOCATION X-APPLE-MAPKIT-HANDLE PHOTO LOGO SOUND KEY".split())
#: values that are addresses or identifiers, edited as they are (no text escapes)
_ICAL_RAW = frozenset("ORGANIZER ATTENDEE UID RELATED-TO URL ATTACH N ADR ORG GENDER SOURCE MEMBER IMPP".split())
#: parameters that name or address people
_ICAL_PARAMS = frozenset("CN SENT-BY DELEGATED-TO DELEGATED-FROM MEMBER EMAIL DIR ALTREP X-TITLE LABEL".split())
_UNESCAPE = re.compile(r"\\([nN,;\\])")


def _ical_unescape(value: str) -> str:
    return _UNESCAPE.sub(lambda m: "\n" if m.group(1) in "nN" else m.group(1), value)


def _ical_escape(value: str) -> str:
    return (
        value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,").replace("\r\n", "\\n").replace("\n", "\\n")
    )


def _fold(line: str, newline: str) -> str:
    """A content line folded at 75 octets (never inside a UTF-8 character)."""
    out: list[str] = []
    current: list[str] = []
    size, limit = 0, 75
    for ch in line:
        width = len(ch.encode("utf-8", "surrogateescape"))
        if size + width > limit:
            out.append("".join(current))
            current, size, limit = [" "], 1, 75
        current.append(ch)
        size += width
    out.append("".join(current))
    return newline.join(out)


def _ical_line(line: str, job: RewriteJob, where: str, kind: str) -> str | None:
    """One unfolded content line edited (None: remove it)."""
    m = re.match(r"[A-Za-z0-9-]+", line)
    if not m:
        return line
    name, i, params = m.group(0).upper(), m.end(), []
    while i < len(line) and line[i] == ";":
        p = _PARAM.match(line, i)
        if p is None:
            return line
        params.append([p.group(1), p.group(2)])
        i = p.end()
    if i >= len(line) or line[i] != ":":
        return line
    value = line[i + 1 :]
    label = f"{where} {name}"
    if name in _ICAL_SCRUB or name.startswith("X-APPLE-STRUCTURED"):
        job.scrub(f"{kind} {name}", value if not name.startswith(("PHOTO", "LOGO", "SOUND", "KEY")) else None)
        return None
    if name in _ICAL_KEEP:
        return line
    for param in params:
        if param[0].upper() in _ICAL_PARAMS:
            quoted = param[1].startswith('"') and param[1].endswith('"') and len(param[1]) > 1
            raw = param[1][1:-1] if quoted else param[1]
            new = job.edit(f"{label} {param[0].upper()}", raw).replace('"', "'")
            if new != raw:
                param[1] = f'"{new}"' if quoted or re.search(r"[:;,]", new) else new
    upper = {p[0].upper(): p[1].upper() for p in params}
    if upper.get("VALUE") == "BINARY" or upper.get("ENCODING") in ("B", "BASE64"):
        pass
    elif upper.get("ENCODING") == "QUOTED-PRINTABLE":
        charset = upper.get("CHARSET", "UTF-8").strip('"')
        text = email.quoprimime.header_decode(value.replace("_", "=5F")).encode("latin-1").decode(charset, "replace")
        new = job.edit(label, text)
        if new != text:
            value = email.quoprimime.body_encode(new.encode(charset, "replace").decode("latin-1"), maxlinelen=10**6)
    elif name in _ICAL_RAW:
        value = job.edit(label, value)
    else:
        text = _ical_unescape(value)
        new = job.edit(label, text)
        if new != text:
            value = _ical_escape(new)
    return m.group(0) + "".join(f";{k}={v}" for k, v in params) + ":" + value


def rewrite_ical(data: bytes, job: RewriteJob) -> bytes:
    decoded = _decode(data, job)
    kind = "vCard" if job.ext == "vcf" else "iCalendar"
    if not re.search(r"(?im)^BEGIN:V(CALENDAR|CARD|EVENT|TODO)", decoded.text):
        raise job.fail(f"not {'a vCard' if kind == 'vCard' else 'an iCalendar'} file: no BEGIN line")
    newline = "\r\n" if "\r\n" in decoded.text else "\n"
    physical = _LINES.split(decoded.text)[::2]
    logical: list[tuple[str, list[str]]] = []
    for raw in physical:
        prev = logical[-1] if logical else None
        soft_qp = prev is not None and "QUOTED-PRINTABLE" in prev[0].upper() and prev[0].endswith("=")
        if prev is not None and (raw[:1] in (" ", "\t") or soft_qp):
            joined = prev[0][:-1] + raw if soft_qp else prev[0] + raw[1:]
            logical[-1] = (joined, [*prev[1], raw])
        else:
            logical.append((raw, [raw]))
    out: list[str] = []
    event = 0
    for text, raws in logical:
        if text.upper().startswith(("BEGIN:VEVENT", "BEGIN:VTODO", "BEGIN:VJOURNAL", "BEGIN:VCARD")):
            event += 1
        where = f"{'card' if kind == 'vCard' else 'item'} {event}" if event else "calendar"
        new = _ical_line(text, job, where, kind)
        if new is None:
            continue
        out += raws if new == text else [_fold(new, newline)]
    result = newline.join(out)
    return data if result == newline.join(physical) else decoded.encode(result)


# -- mail -------------------------------------------------------------------------------------------------
#: headers removed: routes, addresses of machines, mail programs and devices
_MAIL_SCRUB = frozenset(
    "received x-received x-originating-ip x-sender-ip x-client-ip x-source-ip x-forwarded-for x-mailer "
    "user-agent x-mimeole x-newsreader dkim-signature x-google-dkim-signature authentication-results "
    "received-spf thread-index x-universally-unique-identifier x-uniform-type-identifier x-originating-client "
    "x-mail-created-date x-ms-has-attach x-ms-tnef-correlator".split()
)
_MAIL_SCRUB_PREFIXES = ("x-apple-", "x-ms-exchange-", "x-microsoft-", "x-google-", "x-gm-", "arc-", "x-icloud-",
                        "x-proofpoint-", "x-mimecast-", "x-forefront-", "x-ms-office365-")  # fmt: skip
#: headers kept as they are (dates and MIME structure; attachment names are edited separately)
_MAIL_KEEP = frozenset(
    "date resent-date mime-version content-type content-transfer-encoding content-disposition content-length "
    "importance priority x-priority content-language lines status".split()
)
_MAIL_ADDRESSES = frozenset(
    "from to cc bcc reply-to sender return-path delivered-to x-original-to resent-from resent-to resent-cc "
    "resent-sender disposition-notification-to errors-to envelope-to x-sender x-receiver".split()
)


def _header_text(value: str) -> tuple[str, bool]:
    """A raw header value decoded (RFC 2047 words), and whether it held encoded words."""
    try:
        parts = email.header.decode_header(value)
        encoded = any(charset is not None for _, charset in parts)
        return (str(email.header.make_header(parts)) if encoded else value), encoded
    except (email.errors.HeaderParseError, LookupError, UnicodeDecodeError):
        return value, False


def _encode_words(text: str, force: bool) -> str:
    if force or not text.isascii():
        return email.header.Header(text, "utf-8").encode()
    return text


def _address_header(text: str, encoded: bool) -> str:
    pairs = email.utils.getaddresses([text])
    if not pairs or all(not addr and not name for name, addr in pairs):
        return _encode_words(text, encoded)
    out = []
    for name, addr in pairs:
        if name and (encoded or not name.isascii()):
            out.append(f"{_encode_words(name, True)} <{addr}>")
        elif name:
            out.append(email.utils.formataddr((name, addr)))
        else:
            out.append(f"<{addr}>" if "<" in text else addr)
    return ", ".join(out)


def _scrubbed_header(name: str) -> bool:
    low = name.lower()
    return low in _MAIL_SCRUB or low.startswith(_MAIL_SCRUB_PREFIXES)


def _rewrite_headers(msg: Message, job: RewriteJob, where: str) -> None:
    items = msg.items()
    new_items: list[tuple[str, str]] = []
    changed = False
    for name, value in items:
        low = name.lower()
        if _scrubbed_header(name):
            job.scrub(f"mail header {name}", _header_text(str(value))[0])
            changed = True
            continue
        if low in _MAIL_KEEP or not isinstance(value, str):
            new_items.append((name, value))
            continue
        text, encoded = _header_text(value)
        flat = re.sub(r"\r?\n[ \t]", " ", text)
        new = job.edit(f"{where}header {name}", flat)
        if new == flat:
            new_items.append((name, value))
            continue
        changed = True
        new_items.append(
            (name, _address_header(new, encoded) if low in _MAIL_ADDRESSES else _encode_words(new, encoded))
        )
    if changed:
        for name in {n for n, _ in items}:
            del msg[name]
        for name, value in new_items:
            msg[name] = value


def _cte(part: Message) -> str:
    return str(part.get("Content-Transfer-Encoding", "7bit")).strip().lower()


def _set_body(part: Message, raw: bytes) -> None:
    """Put ``raw`` back as the part's body in its own transfer encoding (7bit becomes quoted-printable
    when the new text is not ASCII)."""
    cte = _cte(part)
    if cte == "7bit" and not raw.isascii():
        cte = "quoted-printable"
        del part["Content-Transfer-Encoding"]
        part["Content-Transfer-Encoding"] = cte
    if cte == "base64":
        payload = base64.encodebytes(raw).decode("ascii")
    elif cte == "quoted-printable":
        payload = email.quoprimime.body_encode(raw.decode("latin-1"))
    else:
        payload = raw.decode("ascii", "surrogateescape")
    part.set_payload(payload)


def _body_text(part: Message, raw: bytes, job: RewriteJob) -> _Decoded:
    charset = part.get_content_charset()
    if charset:
        try:
            return _Decoded(raw.decode(charset, "surrogateescape"), charset, b"")
        except (LookupError, UnicodeDecodeError):
            pass
    return _decode(raw, job) if raw else _Decoded("", "utf-8", b"")


def _attachment_name(part: Message) -> str | None:
    """The attachment's file name, decoded (RFC 2231, and the RFC 2047 words some mailers put there)."""
    try:
        name = part.get_filename()
    except (LookupError, UnicodeError, ValueError):
        return None
    return _header_text(name)[0] if name and "=?" in name else name


def _rewrite_part(part: Message, job: RewriteJob, where: str, counter: list[int]) -> None:
    ctype = part.get_content_type()
    if part.is_multipart():
        children = part.get_payload()
        if ctype == "message/rfc822" and isinstance(children, list):
            for inner in children:
                if isinstance(inner, Message):
                    counter[0] += 1
                    label = f"{where}attachment {counter[0]} (message)"
                    if job.depth + 1 > MAX_DEPTH:
                        raise job.fail(f"{label}: nested more than {MAX_DEPTH} levels deep")
                    child = dataclasses.replace(job, depth=job.depth + 1, prefix=f"{job.prefix}{label}: ")
                    _rewrite_message(inner, child, "")
            return
        for sub in children if isinstance(children, list) else []:
            if isinstance(sub, Message):
                _rewrite_headers_of_part(sub, job, where)
                _rewrite_part(sub, job, where, counter)
        return
    name = _attachment_name(part)
    disposition = str(part.get("Content-Disposition", "")).split(";")[0].strip().lower()
    if name is None and disposition != "attachment" and ctype in ("text/plain", "text/html", "text/enriched"):
        raw = part.get_payload(decode=True)
        decoded = _body_text(part, raw if isinstance(raw, bytes) else b"", job)
        label = f"{where}body {ctype}"
        new = job.edit(label, decoded.text, decoded.fitter(ctype == "text/html"))
        if new != decoded.text:
            _set_body(part, new.encode(decoded.codec, "surrogateescape"))
        return
    counter[0] += 1
    index = counter[0]
    shown = name
    if name:
        shown = job.edit(f"{where}attachment {index} name", name)
        if shown != name:
            for header, param in (("Content-Disposition", "filename"), ("Content-Type", "name")):
                if part.get_param(param, header=header) is not None:
                    part.set_param(param, shown, header=header, charset=None if shown.isascii() else "utf-8")
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes) or not data:
        return
    label = f"{where}attachment {index} ({shown or ctype})"
    rewritten = job.nested(name or f"attachment.{ctype.split('/')[-1]}", data, label)
    if rewritten != data:
        _set_body(part, rewritten)


def _rewrite_headers_of_part(part: Message, job: RewriteJob, where: str) -> None:
    """Headers of a MIME part other than structure (Content-Description...)."""
    for name in ("Content-Description", "Content-ID"):
        value = part.get(name)
        if isinstance(value, str):
            text, encoded = _header_text(value)
            new = job.edit(f"{where}part header {name}", text)
            if new != text:
                part.replace_header(name, _encode_words(new, encoded))


def _rewrite_message(msg: Message, job: RewriteJob, where: str) -> None:
    _rewrite_headers(msg, job, where)
    _rewrite_part(msg, job, where, [0])


_MAIL_HEADER_NAMES = frozenset("from to cc subject date message-id received mime-version sender reply-to".split())


def _parse_mail(data: bytes, job: RewriteJob, label: str) -> Message:
    msg = email.message_from_bytes(data, policy=email.policy.compat32)
    if not any(k.lower() in _MAIL_HEADER_NAMES for k in msg):
        raise job.fail(f"{label}not a mail message: no mail headers")
    return msg


def _mail_bytes(msg: Message, newline: str, mbox: bool) -> bytes:
    buf = io.BytesIO()
    policy = email.policy.compat32.clone(linesep=newline)
    email.generator.BytesGenerator(buf, mangle_from_=mbox, policy=policy).flatten(msg)
    return buf.getvalue()


def rewrite_eml(data: bytes, job: RewriteJob) -> bytes:
    msg = _parse_mail(data, job, "")
    _rewrite_message(msg, job, "")
    if job.dry:
        return data
    return _mail_bytes(msg, "\r\n" if b"\r\n" in data[:4096] else "\n", mbox=False)


def rewrite_mbox(data: bytes, job: RewriteJob) -> bytes:
    starts = [m.start() for m in re.finditer(rb"(?:\A|(?<=\n\n)|(?<=\r\n\r\n))From ", data)]
    if not starts:
        raise job.fail("not an mbox file: no 'From ' line")
    out = [data[: starts[0]]]
    for n, (a, b) in enumerate(zip(starts, [*starts[1:], len(data)], strict=True), 1):
        chunk = data[a:b]
        head, sep, body = chunk.partition(b"\n")
        envelope = head.decode("utf-8", "surrogateescape")
        new_env = job.edit(f"message {n} envelope", envelope)
        msg = _parse_mail(body, job, f"message {n}: ")
        child = dataclasses.replace(job, prefix=f"{job.prefix}message {n}: ")
        _rewrite_message(msg, child, "")
        if job.dry:
            continue
        newline = "\r\n" if b"\r\n" in body[:4096] else "\n"
        tail = body[len(body.rstrip(b"\r\n")) :]
        text = _mail_bytes(msg, newline, mbox=True).rstrip(b"\r\n") + tail
        out.append(new_env.encode("utf-8", "surrogateescape") + sep + text)
    return data if job.dry else b"".join(out)
