"""No labelled benchmark question may be quoted inside the package.

The labelled real-photo benchmark (benchmarks/real_photos/questions.jsonl, plus
heldout_new.jsonl when present) is what the framework is scored on; a question
copied into code, a comment, a prompt template or a few-shot example would let
the prompts see the test set.  This test normalises every labelled question of
four or more words and fails, listing file:line, for each text file under
hydra_vr/ that contains one.

The tests are held to the same rule: a unit test tests a mechanism with phrasings of its own. A test
that pins behaviour on the labelled questions and photos is a snapshot and lives in tests/snapshots/,
the one place under tests/ (besides this file) where a labelled question may be quoted.
"""

from __future__ import annotations

import bisect
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hydra_vr"
TESTS = ROOT / "tests"
SNAPSHOTS = TESTS / "snapshots"
LABELLED = [
    ROOT / "benchmarks" / "real_photos" / "questions.jsonl",
    ROOT / "benchmarks" / "real_photos" / "heldout_new.jsonl",
]
SUFFIXES = {".py", ".yaml", ".j2", ".md", ".txt", ".json"}
MIN_WORDS = 4

_SPACE = re.compile(r"\s+")
_COMMENT = re.compile(r"^#+\s*")


def _normalise(text: str) -> str:
    """Lower-case, collapse whitespace, strip trailing '?' and '.'."""
    return _SPACE.sub(" ", text.lower()).strip().rstrip("?.").strip()


def _labelled_questions() -> list[str]:
    found: set[str] = set()
    for path in LABELLED:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            question = record.get("question") if isinstance(record, dict) else None
            if not isinstance(question, str):
                continue
            norm = _normalise(question)
            if len(norm.split()) >= MIN_WORDS:
                found.add(norm)
    return sorted(found)


def _package_files() -> list[Path]:
    return sorted(
        p
        for p in PACKAGE.rglob("*")
        if p.suffix in SUFFIXES and p.is_file() and "__pycache__" not in p.parts
    )


def _test_files() -> list[Path]:
    """Every test module and helper under tests/, except the snapshots and this file."""
    return sorted(
        p
        for p in TESTS.rglob("*.py")
        if p.is_file()
        and "__pycache__" not in p.parts
        and not p.is_relative_to(SNAPSHOTS)
        and p.resolve() != Path(__file__).resolve()
    )


def _hits(path: Path, questions: list[str]) -> list[str]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    norm_lines = [_normalise(line) for line in lines]
    # the whole file on one line (a comment's "#" dropped at each line start, so a question wrapped over
    # two comment lines still reads whole), and where each line starts in it: a match across a wrap is
    # reported at the line where it begins
    starts, parts, offset = [], [], 0
    for n, line in enumerate(norm_lines, 1):
        line = _COMMENT.sub("", line)
        if line:
            starts.append((offset, n))
            parts.append(line)
            offset += len(line) + 1
    whole = " ".join(parts)
    out = []
    for q in questions:
        if q not in whole:
            continue
        where = {n for n, line in enumerate(norm_lines, 1) if q in line}
        at = whole.find(q)
        while at >= 0:  # every occurrence, across line wraps too, at the line where it begins
            where.add(starts[bisect.bisect_right(starts, (at, len(lines) + 1)) - 1][1])
            at = whole.find(q, at + 1)
        out.extend(f"{path.relative_to(ROOT)}:{n}: {q!r}" for n in sorted(where))
    return out


def test_labelled_questions_loaded():
    assert len(_labelled_questions()) > 50


def test_no_labelled_question_in_package():
    questions = _labelled_questions()
    hits = [hit for path in _package_files() for hit in _hits(path, questions)]
    assert not hits, "labelled benchmark questions quoted in hydra_vr/:\n" + "\n".join(hits)


def test_no_labelled_question_in_unit_tests():
    questions = _labelled_questions()
    files = _test_files()
    assert any(p.name == "conftest.py" for p in files) and not any(p.is_relative_to(SNAPSHOTS) for p in files)
    hits = [hit for path in files for hit in _hits(path, questions)]
    assert not hits, (
        "labelled benchmark questions quoted in tests/ (use a phrasing of your own, or move a test that pins "
        "behaviour on the labelled photos and questions to tests/snapshots/):\n" + "\n".join(hits)
    )
