"""What a clip's own bytes say about its container: the MIME type, and whether the file was cut short.

FFmpeg opens many truncated files without complaint (a Matroska file cut in half demuxes the frames that are
left; an mp4 cut inside its trailing index may still play), so the structure is checked here, from the bytes,
before FFmpeg sees them. Pure functions; no FFmpeg.
"""

from __future__ import annotations

import struct
from os import PathLike
from pathlib import PurePath

_ISO_BOX_TYPES = {b"ftyp", b"moov", b"mdat", b"free", b"skip", b"wide", b"pnot"}
_EBML_MAGIC = b"\x1a\x45\xdf\xa3"
_EBML_DOCTYPE = 0x4282
_MATROSKA_SEGMENT = 0x18538067
_MPEG_PACK_START = b"\x00\x00\x01\xba"
_MPEG_PROGRAM_END = 0xB9
_MPEG_SYSTEM_HEADER = 0xBB

_MIME_BY_SUFFIX = {
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".mov": "video/quicktime",
    ".webm": "video/webm",
    ".mkv": "video/x-matroska",
    ".avi": "video/x-msvideo",
    ".mpg": "video/mpeg",
    ".mpeg": "video/mpeg",
    ".ts": "video/mp2t",
    ".ogv": "video/ogg",
    ".gif": "image/gif",
}

_BOX_ROLES = {"moov": "moov box (the index)", "mdat": "mdat box (the media data)"}


def sniff_mime(data: bytes) -> str | None:
    """The MIME type the leading bytes show (mp4 -> video/mp4, webm -> video/webm, ...), or None."""
    if _is_iso_bmff(data):
        return "video/quicktime" if data[8:12] == b"qt  " else "video/mp4"
    if data.startswith(_EBML_MAGIC):
        doctype = _ebml_doctype(data)
        return "video/webm" if doctype == "webm" else "video/x-matroska"
    if data[:4] == b"RIFF" and data[8:12] == b"AVI ":
        return "video/x-msvideo"
    if data[:4] == _MPEG_PACK_START:
        return "video/mpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"OggS":
        return "video/ogg"
    if len(data) > 188 and data[0] == 0x47 and data[188] == 0x47:
        return "video/mp2t"
    return None


def mime_for_suffix(path: str | PathLike[str]) -> str | None:
    """The MIME type conventionally used for a file name's extension, or None."""
    return _MIME_BY_SUFFIX.get(PurePath(path).suffix.lower())


def find_truncation(data: bytes) -> str | None:
    """A sentence saying how the file is cut short ("is truncated: ..."), or None when its structure is whole.

    Checked: ISO BMFF (mp4/mov) top-level boxes, the Matroska/WebM segment size, the AVI RIFF size, the GIF
    trailer, and the MPEG-PS packets' own lengths (an MPEG-PS cut exactly between two packs cannot be told from
    a shorter clip). MPEG-TS and Ogg are not checked; their damage shows when decoding.
    """
    if _is_iso_bmff(data):
        return _iso_truncation(data)
    if data.startswith(_EBML_MAGIC):
        return _matroska_truncation(data)
    if data[:4] == b"RIFF" and data[8:12] == b"AVI ":
        declared = struct.unpack_from("<I", data, 4)[0] + 8
        if declared > len(data):
            return f"is truncated: its RIFF header declares {declared} bytes but the file has only {len(data)}"
        return None
    if data[:6] in (b"GIF87a", b"GIF89a") and not data.rstrip(b"\x00").endswith(b";"):
        return "is truncated: the GIF trailer byte (0x3B) that ends every GIF is missing"
    if data[:4] == _MPEG_PACK_START:
        return _mpeg_ps_truncation(data)
    return None


def _is_iso_bmff(data: bytes) -> bool:
    return len(data) >= 8 and data[4:8] in _ISO_BOX_TYPES


def _iso_truncation(data: bytes) -> str | None:
    size_of_file = len(data)
    pos = 0
    seen: set[str] = set()
    while pos < size_of_file:
        remaining = size_of_file - pos
        if remaining < 8:
            return f"is truncated: a box header at byte {pos} is cut short (the file ends after {size_of_file} bytes)"
        size, raw_type = struct.unpack_from(">I4s", data, pos)
        box = raw_type.decode("latin-1")
        header = 8
        if size == 1:
            if remaining < 16:
                return f"is truncated: the header of box '{box}' at byte {pos} is cut short"
            size = struct.unpack_from(">Q", data, pos + 8)[0]
            header = 16
        elif size == 0:  # "extends to the end of the file", allowed for the last box
            size = remaining
        if size < header:
            return f"is corrupt: box '{box}' at byte {pos} declares an impossible size of {size} bytes"
        if size > remaining:
            role = _BOX_ROLES.get(box, f"'{box}' box")
            problem = f"is truncated: its {role} at byte {pos} declares {size} bytes but only {remaining} remain"
            if box != "moov" and "moov" not in seen:
                problem += ", and the moov box (the index), which would follow it, is missing"
            return problem
        seen.add(box)
        pos += size
    if "moov" not in seen:
        return "has no moov box (the index a player needs): it was cut short or never finalised"
    return None


def _read_vint(data: bytes, pos: int, *, keep_marker: bool) -> tuple[int, int] | None:
    """The EBML variable-length integer at pos as (value, length in bytes); None when malformed or cut."""
    if pos >= len(data) or data[pos] == 0:
        return None
    first = data[pos]
    length = 9 - first.bit_length()
    if pos + length > len(data):
        return None
    value = first if keep_marker else first & ((1 << (8 - length)) - 1)
    for byte in data[pos + 1 : pos + length]:
        value = (value << 8) | byte
    return value, length


def _ebml_element(data: bytes, pos: int) -> tuple[int, int, int | None] | None:
    """(element id, data start, data size or None when "unknown size"); None when the header is cut."""
    element_id = _read_vint(data, pos, keep_marker=True)
    if element_id is None:
        return None
    size = _read_vint(data, pos + element_id[1], keep_marker=False)
    if size is None:
        return None
    start = pos + element_id[1] + size[1]
    unknown = size[0] == (1 << (7 * size[1])) - 1
    return element_id[0], start, None if unknown else size[0]


def _ebml_doctype(data: bytes) -> str | None:
    header = _ebml_element(data, 0)
    if header is None or header[2] is None:
        return None
    pos, end = header[1], min(header[1] + header[2], len(data))
    while pos < end:
        child = _ebml_element(data, pos)
        if child is None or child[2] is None:
            return None
        if child[0] == _EBML_DOCTYPE:
            return data[child[1] : child[1] + child[2]].decode("ascii", "replace")
        pos = child[1] + child[2]
    return None


def _matroska_truncation(data: bytes) -> str | None:
    header = _ebml_element(data, 0)
    if header is None or header[2] is None or header[1] + header[2] > len(data):
        return "is truncated: its EBML header is cut short"
    segment = _ebml_element(data, header[1] + header[2])
    if segment is None:
        return "is truncated: the file ends before its Matroska segment begins"
    segment_id, start, size = segment
    if segment_id != _MATROSKA_SEGMENT:
        return None  # not the layout this check knows; leave the verdict to FFmpeg
    if size is not None and start + size > len(data):
        return f"is truncated: its Matroska segment declares {size} bytes of data but only {len(data) - start} remain"
    return None


def _mpeg_ps_truncation(data: bytes) -> str | None:
    """Walk pack headers and PES packets by their declared lengths; the last one must fit in the file."""
    size_of_file = len(data)
    pos = 0
    while pos < size_of_file:
        if size_of_file - pos < 6:
            return f"is truncated: an MPEG packet header at byte {pos} is cut short"
        if data[pos : pos + 3] != b"\x00\x00\x01":
            return None  # not at a start code: a layout this walk does not follow; leave it to FFmpeg
        code = data[pos + 3]
        if code == _MPEG_PROGRAM_END:
            return None
        if code == _MPEG_PACK_START[3]:
            if data[pos + 4] & 0xC0 == 0x40:  # MPEG-2 pack header: 14 bytes plus stuffing
                if size_of_file - pos < 14:
                    return f"is truncated: the MPEG pack header at byte {pos} is cut short"
                size = 14 + (data[pos + 13] & 0x07)
            else:  # MPEG-1 pack header
                size = 12
        elif code >= _MPEG_SYSTEM_HEADER:
            size = 6 + struct.unpack_from(">H", data, pos + 4)[0]
        else:
            return None
        if pos + size > size_of_file:
            return (
                f"is truncated: its MPEG packet at byte {pos} declares {size} bytes but only "
                f"{size_of_file - pos} remain"
            )
        pos += size
    return None
