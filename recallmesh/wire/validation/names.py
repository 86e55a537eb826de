"""The names a request carries: namespaces (and their prefixes), memory ids, and the NUL
character no text field may hold."""

from __future__ import annotations

import unicodedata
import uuid

from recallmesh.shared.errors import InvalidArgument

MAX_NAMESPACE_CHARS = 128


def no_nul(value: str, name: str) -> str:
    if "\x00" in value:
        raise InvalidArgument(f"{name} must not contain NUL characters")
    return value


# Default_Ignorable_Code_Point characters (Unicode DerivedCoreProperties) that are not
# format (Cf) or unassigned (Cn) characters, which namespace() rejects by category anyway:
# invisible fillers, variation selectors and the combining grapheme joiner.
_INVISIBLE = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x3164, 0xFFA0]
    + list(range(0xFE00, 0xFE10)) + list(range(0xE0100, 0xE01F0))
)
# Unicode general categories a namespace must not contain, and how a message names them.
_NAMESPACE_FORBIDDEN = {
    "Cc": "control character",
    "Cf": "format character: zero-width, bidi control or similar",
    "Cs": "surrogate",
    "Co": "private-use character",
    "Cn": "unassigned code point",
    "Zl": "line separator",
    "Zp": "paragraph separator",
    "Zs": "space other than U+0020",
}


def _namespace_problem(char: str) -> str:
    """Why `char` may not appear in a namespace, or "" when it may."""
    if char == " ":
        return ""
    if ord(char) in _INVISIBLE:
        return "invisible character"
    return _NAMESPACE_FORBIDDEN.get(unicodedata.category(char), "")


def namespace(value: str, name: str = "namespace") -> str:
    """A request's namespace: NFC-normalised, trimmed, 1..128 printable characters.

    Printable: no character of the categories in _NAMESPACE_FORBIDDEN (control, format,
    surrogate, private use, unassigned, separators; U+0020 is allowed inside) and none of
    _INVISIBLE. A rejection names the field and the first offending code point, never the
    raw input.
    """
    value = unicodedata.normalize("NFC", value).strip()
    if not value:
        raise InvalidArgument(f"{name} is required")
    return _namespace_chars(value, name)


def namespace_prefix(value: str, name: str = "prefix") -> str:
    """The start of namespace names (ListNamespaces): "" for every one, else NFC-normalised
    characters as namespace() takes them, not trimmed (a prefix may end with a space inside a
    name)."""
    value = unicodedata.normalize("NFC", value)
    return _namespace_chars(value, name) if value else ""


def _namespace_chars(value: str, name: str) -> str:
    if len(value) > MAX_NAMESPACE_CHARS:
        raise InvalidArgument(f"{name} must be at most {MAX_NAMESPACE_CHARS} characters")
    for i, char in enumerate(value):
        if problem := _namespace_problem(char):
            raise InvalidArgument(
                f"{name} must not contain U+{ord(char):04X} ({problem}) at character "
                f"{i + 1}; a namespace holds printable characters only"
            )
    return value


def memory_id(value: str) -> str:
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise InvalidArgument(f"id must be a UUID, got {value[:64]!r}") from None


def same_id(value: str) -> str | None:
    """`value` as the id it names (ids compare as UUIDs: case and braces aside), or None."""
    try:
        return memory_id(value)
    except InvalidArgument:
        return None

