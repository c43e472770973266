"""An answer's text made ready to grade: reasoning blocks, markdown emphasis, surrounding quotes and white space
removed, in time linear in its length (a server's answer may be megabytes of hostile text)."""

from __future__ import annotations

import re
import unicodedata

# Literal tags, found with one linear scan each: a lazy `<think>.*?</think>` rescans the rest of the text from every
# unclosed opening tag, which is quadratic on an answer of nothing but opening tags.
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_MARKDOWN_EMPHASIS = re.compile(r"\*\*|__|`")
_QUOTE_PAIRS = (('"', '"'), ("'", "'"), ("\u201c", "\u201d"), ("\u2018", "\u2019"))


def clean_answer(raw: str) -> str:
    """The answer text with reasoning blocks, markdown emphasis, surrounding quotes and whitespace removed, in time
    linear in its length."""
    text = _without_reasoning(unicodedata.normalize("NFKC", raw))
    text = _MARKDOWN_EMPHASIS.sub("", text).strip()
    start, end = 0, len(text)
    stripped = True
    while stripped and end - start >= 2:  # indices, not slices: a long run of quotes is not copied once per layer
        stripped = False
        for left, right in _QUOTE_PAIRS:
            if text.startswith(left, start, end) and text.endswith(right, start, end):
                start, end = start + len(left), end - len(right)
                while start < end and text[start].isspace():
                    start += 1
                while end > start and text[end - 1].isspace():
                    end -= 1
                stripped = True
    return text[start:end]


def _without_reasoning(text: str) -> str:
    """Each `<think>...</think>` block (the first closing tag after its opening one) as one space. A block cut off
    before its end hides the answer entirely: the text ends at its opening tag. A lone closing tag (servers that strip
    the opening one) means everything before it was reasoning."""
    closes = [match.span() for match in _THINK_CLOSE.finditer(text)]
    kept: list[str] = []
    position, next_close = 0, 0
    for opened in _THINK_OPEN.finditer(text):
        if opened.start() < position:
            continue  # inside a block already removed
        while next_close < len(closes) and closes[next_close][0] < opened.end():
            next_close += 1
        kept.append(text[position : opened.start()])
        if next_close == len(closes):  # cut off: nothing after its opening tag is the answer
            position = len(text)
            break
        kept.append(" ")
        position = closes[next_close][1]
        next_close += 1
    kept.append(text[position:])
    text = "".join(kept)
    ends = [match.end() for match in _THINK_CLOSE.finditer(text)]
    return text[ends[-1] :] if ends else text


# ---------------------------------------------------------------------------------------------------------
# Letter rules

# A letter, optionally wrapped: (B) [B] B. B) B: or bare B. Named groups tell a bare letter apart.
