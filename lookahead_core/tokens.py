"""What tokens read as: a token's text alone (bytes of a split character marked, not U+FFFD), the vocabulary a
record keeps, and the text each committed group of tokens adds to the output.
"""

from __future__ import annotations

import codecs
import os
import re


def text_pieces(tokenizer, groups: list[list[int]]) -> list[str]:
    """The text each group of tokens adds to the output, decoded from the whole output so far.

    A token decoded alone can be a fragment of a character (a Chinese character or an emoji is
    often split across tokens) and reads as U+FFFD; decoded with all before it, the character is
    whole. So a group that ends inside a character adds the text before it (possibly nothing),
    and the group that completes the character adds it. Should decoding more tokens ever rewrite
    earlier text, the group adds what follows the part that stayed the same.
    """
    pieces, ids, shown = [], [], ""
    for group in groups:
        ids += group
        text = tokenizer.decode(ids, skip_special_tokens=True).rstrip("\ufffd")
        pieces.append(text[len(os.path.commonprefix([shown, text])) :])
        shown = text
    return pieces


def byte_level_alphabet() -> dict[str, int]:
    """Byte-level BPE's printable stand-in for each byte (GPT-2's table): printable Latin-1 bytes stand for
    themselves, the other bytes for the characters from U+0100 on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + n): b for n, b in enumerate(others)}


BYTE_LEVEL = byte_level_alphabet()
BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")  # sentencepiece's byte tokens


def token_bytes(tokenizer, token_id: int) -> bytes | None:
    """The bytes a token stands for, read from its vocabulary entry (byte-level BPE or sentencepiece's byte
    fallback); None for a tokenizer of another kind."""
    piece = tokenizer.convert_ids_to_tokens(token_id)
    if not isinstance(piece, str):
        return None
    if (fallback := BYTE_FALLBACK.fullmatch(piece)) is not None:
        return bytes([int(fallback.group(1), 16)])
    if piece and all(ch in BYTE_LEVEL for ch in piece):
        return bytes(BYTE_LEVEL[ch] for ch in piece)
    return None


def marked_bytes(error: UnicodeDecodeError) -> tuple[str, int]:
    """A codecs error handler: bytes that are not a whole character, as ‹e4 b8›."""
    return "‹" + " ".join(f"{b:02x}" for b in error.object[error.start : error.end]) + "›", error.end


codecs.register_error("lookahead-lab-marked-bytes", marked_bytes)


def token_text(tokenizer, token_id: int) -> str:
    """What a token reads as alone. A token that holds part of a character (a Chinese character or an emoji
    is often split across tokens) reads as U+FFFD when decoded alone; where the tokenizer says which bytes
    it stands for, those bytes are shown instead, marked as ‹f0 9f 98›."""
    text = tokenizer.decode([token_id])
    if "\ufffd" not in text or (raw := token_bytes(tokenizer, token_id)) is None:
        return text
    return raw.decode("utf-8", errors="lookahead-lab-marked-bytes")


def vocab_for(tokenizer, ids: set[int]) -> dict[str, str]:
    """Text of each token id (token_text), keyed by str(id) so the dict survives JSON unchanged."""
    return {str(i): token_text(tokenizer, i) for i in sorted(ids)}
