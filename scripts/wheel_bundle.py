"""Copies into a repaired wheel the libraries auditwheel leaves to the system.

auditwheel's manylinux policies count a few libraries as always present (libz.so.1 among them)
and do not bundle them. Volley's wheel bundles zlib too, so that `ldd` on its extension and CLI
lists nothing outside the wheel but glibc and the C++ runtime. For each soname given, this script
does what auditwheel does for the others: copies the system's library into volley.libs/ under a
name with a hash (libz-1a2b3c4d.so.1), sets its soname, points every ELF file of the wheel that
needs it at the new name, and rewrites RECORD.

    python scripts/wheel_bundle.py build/dist/volley-*.whl libz.so.1
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile


def system_path(soname: str, elf: str) -> str:
    """Where the dynamic loader finds `soname` for `elf` (from ldd)."""
    output = subprocess.run(["ldd", elf], capture_output=True, text=True, check=True).stdout
    for line in output.splitlines():
        parts = line.split()
        if parts and parts[0] == soname and "=>" in parts:
            return os.path.realpath(parts[parts.index("=>") + 1])
    raise SystemExit(f"wheel_bundle: {soname} is not a dependency of {elf}")


def needed(path: str, patchelf: str) -> list:
    result = subprocess.run([patchelf, "--print-needed", path], capture_output=True, text=True)
    return result.stdout.split() if result.returncode == 0 else []


def record_line(root: str, name: str) -> str:
    with open(os.path.join(root, name), "rb") as stream:
        data = stream.read()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main() -> int:
    wheel, sonames = sys.argv[1], sys.argv[2:]
    patchelf = shutil.which("patchelf") or os.path.join(os.path.dirname(sys.executable), "patchelf")
    with tempfile.TemporaryDirectory() as root, zipfile.ZipFile(wheel) as archive:
        infos = archive.infolist()
        archive.extractall(root)
        names = [info.filename for info in infos if not info.is_dir()]
        elves = [n for n in names if open(os.path.join(root, n), "rb").read(4) == b"\x7fELF"]
        extension = next(n for n in elves if n.startswith("volley/_volley"))
        libs_dir = "volley.libs"  # where auditwheel put the other libraries
        added = []
        for soname in sonames:
            source = system_path(soname, os.path.join(root, extension))
            with open(source, "rb") as stream:
                digest = hashlib.sha256(stream.read()).hexdigest()[:8]
            stem, _, suffix = soname.partition(".so")
            new_name = f"{stem}-{digest}.so{suffix}"
            target = f"{libs_dir}/{new_name}"
            shutil.copyfile(source, os.path.join(root, target))
            os.chmod(os.path.join(root, target), 0o755)
            subprocess.run([patchelf, "--set-soname", new_name, os.path.join(root, target)],
                           check=True)
            for elf in elves:
                path = os.path.join(root, elf)
                if soname in needed(path, patchelf):
                    subprocess.run([patchelf, "--replace-needed", soname, new_name, path],
                                   check=True)
                    print(f"wheel_bundle: {elf}: {soname} -> {libs_dir}/{new_name}")
            added.append(target)
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        lines = [record_line(root, n) for n in names + added if n != record] + [f"{record},,"]
        with open(os.path.join(root, record), "w", encoding="utf-8") as stream:
            stream.write("\n".join(lines) + "\n")
        repacked = wheel + ".tmp"
        with zipfile.ZipFile(repacked, "w", zipfile.ZIP_DEFLATED) as out:
            for info in infos:
                if info.is_dir():
                    continue
                with open(os.path.join(root, info.filename), "rb") as stream:
                    out.writestr(info, stream.read(), zipfile.ZIP_DEFLATED)
            for name in added:
                info = zipfile.ZipInfo(name)
                info.external_attr = (0o100755 & 0xFFFF) << 16
                with open(os.path.join(root, name), "rb") as stream:
                    out.writestr(info, stream.read(), zipfile.ZIP_DEFLATED)
        os.replace(repacked, wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
