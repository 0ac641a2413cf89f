"""Text files: plain text, Markdown, logs, JSON, YAML, XML, HTML (visible text) and RTF (as text).

One module an idea, re-exported here under the names they always had: decoding the bytes of a text
file (`hippocamp.perceive.decode`), plain text and Markdown as chunks of lines
(`hippocamp.perceive.plaintext`), JSON record by record (`hippocamp.perceive.jsonfile`), HTML's visible
text (`hippocamp.perceive.htmlpage`) and RTF as text (`hippocamp.perceive.rtf`). Each module says how
its segments are located.
"""

from __future__ import annotations

from hippocamp.perceive.decode import BINARY, Decoded, decode_text, read_decoded
from hippocamp.perceive.htmlpage import HtmlBlock, HtmlReader, html_blocks
from hippocamp.perceive.jsonfile import MAX_RECORDS, JsonReader, json_records
from hippocamp.perceive.plaintext import (
    MAX_CHARS,
    Chunk,
    TextReader,
    chunk_lines,
    line_locator,
    read_lines,
    split_lines,
)
from hippocamp.perceive.rtf import RtfReader, rtf_to_text

__all__ = [
    "BINARY",
    "MAX_CHARS",
    "MAX_RECORDS",
    "Chunk",
    "Decoded",
    "HtmlBlock",
    "HtmlReader",
    "JsonReader",
    "RtfReader",
    "TextReader",
    "chunk_lines",
    "decode_text",
    "html_blocks",
    "json_records",
    "line_locator",
    "read_decoded",
    "read_lines",
    "rtf_to_text",
    "split_lines",
]
