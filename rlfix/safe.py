"""Make log and knowledge-base text inert in every output: terminal, Markdown, HTML/SVG.

Reports quote text rlfix does not control (log lines, file names, user signatures). Printed to a
terminal, an escape sequence in it could retitle the window, hide lines or forge a hyperlink; in
Markdown it could close a code fence and inject a link, an image or an @mention; in SVG a control
character makes the whole document ill-formed XML. These helpers are the only way such text
reaches an output, and they are pure functions so the renderers stay formatting only.
"""

from __future__ import annotations

import html
import re

# C0 controls except tab and newline, DEL, C1 controls (U+009B is a one-byte CSI, U+009D an OSC),
# bidi embeddings, overrides and isolates (they reorder what a reader sees), and line separators.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# The colour sequences rlfix itself writes (see rlfix.render.text._STYLES); nothing else survives.
_OWN_STYLE = re.compile(r"\x1b\[(?:0|(?:1|2|3[1-6])(?:;(?:1|2|3[1-6]))*)m")
# Characters XML 1.0 forbids even as references: an SVG holding one does not parse at all.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _shown(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str, keep_style: bool = False) -> str:
    """`text` with every control and bidi character shown escaped (`\\x1b`, `\\u202e`).

    Tabs and newlines stay. With `keep_style`, the colour sequences rlfix writes are kept; any
    other escape sequence, including one in a log line, is shown escaped.
    """
    if not keep_style:
        return _UNSAFE.sub(_shown, text)
    out, pos = [], 0
    for m in _OWN_STYLE.finditer(text):
        out.append(_UNSAFE.sub(_shown, text[pos : m.start()]))
        out.append(m.group())
        pos = m.end()
    out.append(_UNSAFE.sub(_shown, text[pos:]))
    return "".join(out)


def one_line(text: str) -> str:
    """`text` made safe for one line of a terminal or a comment: newlines and tabs escaped too."""
    return _UNSAFE_LINE.sub(_shown, text)


def xml_text(text: object) -> str:
    """Escape for HTML/SVG text and attributes; controls and bidi characters shown escaped."""
    return html.escape(_NOT_XML.sub(_shown, one_line(str(text))), quote=True)


def xml_block(text: object) -> str:
    """Like `xml_text`, but newlines stay (for `<pre>`)."""
    return html.escape(_NOT_XML.sub(_shown, terminal(str(text))), quote=True)


def _longest_run(text: str, char: str) -> int:
    longest = run = 0
    for c in text:
        run = run + 1 if c == char else 0
        longest = max(longest, run)
    return longest


def md_code(text: object) -> str:
    """An inline code span no content can close: its fence is longer than any backtick run inside.

    Inside a code span Markdown renders no link, image, HTML or @mention.
    """
    body = one_line(str(text))
    fence = "`" * (_longest_run(body, "`") + 1)
    # A space lets a span start or end with a backtick (Markdown strips one on each side).
    pad = " " if body[:1] in ("`", " ") or body[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def md_block(lines: list[str], info: str = "text") -> list[str]:
    """A fenced code block no line can close (the fence is longer than any backtick run inside)."""
    body = [one_line(line) for line in lines]
    fence = "`" * max(3, max((_longest_run(line, "`") for line in body), default=0) + 1)
    return [fence + info, *body, fence]


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|@~&])")


def md_text(text: object) -> str:
    """Prose for Markdown: every character Markdown or GitHub gives a meaning is backslash-escaped,
    and GitHub's autolinks are broken (see `break_autolinks`)."""
    return break_autolinks(_MD_SPECIAL.sub(r"\\\1", one_line(str(text))))


#: Where GitHub's autolink extension would start a link in text: `www.`, a scheme's `://`, the `@`
#: of an address. Backslash escapes do not stop it (`\@` is unescaped before links are found).
_AUTOLINK_START = re.compile(r"(?i)(?<=ww)(?=w\\?\.)|(?<=[a-z])(?=:/)|(?<!\\)(?=\\?@)")
#: Zero-width space: invisible, and no autolink runs through it.
ZERO_WIDTH_SPACE = "\u200b"


def break_autolinks(text: str) -> str:
    """`text` with a zero-width space where a GitHub autolink would start, so a host name, URL or
    address from a log stays text and never becomes a link."""
    return _AUTOLINK_START.sub(ZERO_WIDTH_SPACE, text)


_PLAIN_URL = re.compile(r"https?://[^\s<>()\[\]`\\|\"']+")


def md_link(url: str) -> str:
    """An autolink for a plain http(s) URL; anything else is shown as code, never as a link."""
    return f"<{url}>" if _PLAIN_URL.fullmatch(url) else md_code(url)
