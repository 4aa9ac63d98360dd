"""The LLM layer without real models: scripted backend, wrapper (cache, retries, usage), factory,
GGUF assembly, and the openai backend against a stub HTTP server on loopback."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from hydra_vr.config import EmbeddingConfig, LLMConfig
from hydra_vr.llm import (
    CHAT_BACKENDS,
    EMBEDDING_BACKENDS,
    ChatMessage,
    ChatModel,
    ChatResult,
    LLMError,
    ManagedChatModel,
    ManagedEmbedder,
    ScriptedChat,
    TransientLLMError,
    build_chat_model,
    build_embedder,
)
from hydra_vr.llm import models as gguf
from hydra_vr.registry import UnknownComponentError

U = lambda text: ChatMessage("user", text)  # noqa: E731


# -- scripted backend ------------------------------------------------------------------------
def test_scripted_queue_rules_and_recording() -> None:
    fake = ScriptedChat(responses=["first", "second"], rules=[(r"capital of (\w+)", lambda m: f"{m.group(1)}ville")])
    assert isinstance(fake, ChatModel)
    assert fake.chat([U("what is the capital of France?")]).text == "Franceville"
    assert fake.chat([ChatMessage("system", "s"), U("step 1")], max_tokens=7).text == "first"
    assert fake.chat([U("step 2")], stop=["ond"]).text == "sec"  # stop strings honoured like a real model
    assert [c.last_user for c in fake.calls] == ["what is the capital of France?", "step 1", "step 2"]
    assert fake.calls[1].max_tokens == 7 and fake.calls[1].messages[0].role == "system"
    with pytest.raises(LLMError, match=r"ran out of replies after 3 call.*step 3"):
        fake.chat([U("step 3")])
    fake.push("more")
    assert fake.chat([U("step 4")]).text == "more"


def test_scripted_from_config_is_not_cached(tmp_path: Path) -> None:
    cfg = LLMConfig(backend="scripted", options={"responses": ["a", "b"], "rules": [["^ping$", "pong"]]})
    model = build_chat_model(cfg, tmp_path)
    assert isinstance(model, ManagedChatModel) and not model.cache_enabled
    # Same prompt twice gives the next queued reply, not a cached replay.
    assert [model.chat([U("x")]).text, model.chat([U("x")]).text, model.chat([U("ping")]).text] == ["a", "b", "pong"]
    assert model.usage.calls == 3 and model.usage.cache_hits == 0


# -- wrapper: cache --------------------------------------------------------------------------
class CountingModel:
    """A deterministic double: replies with a counter so a cache hit is visible."""

    name = "counting"

    def __init__(self) -> None:
        self.n = 0

    def cache_identity(self) -> dict[str, Any]:
        return {"backend": "counting"}

    def chat(self, messages, *, max_tokens=512, temperature=0.0, stop=None, json_schema=None) -> ChatResult:  # type: ignore[no-untyped-def]
        self.n += 1
        return ChatResult(text=f"reply {self.n}", model=self.name, prompt_tokens=10, completion_tokens=3)


def test_cache_hit_is_identical_and_counted(tmp_path: Path) -> None:
    inner = CountingModel()
    model = ManagedChatModel(inner, cache_dir=tmp_path)
    first = model.chat([U("hello")], max_tokens=16)
    second = model.chat([U("hello")], max_tokens=16)
    assert (first.text, first.cached) == ("reply 1", False)
    assert (second.text, second.cached) == ("reply 1", True)
    assert second.prompt_tokens == 10 and inner.n == 1
    u = model.usage.snapshot()
    assert (u["calls"], u["cache_hits"], u["model_calls"], u["prompt_tokens"], u["completion_tokens"]) == (2, 1, 1, 10, 3)
    # A new wrapper over the same directory (a rerun) is served from disk too.
    rerun = ManagedChatModel(CountingModel(), cache_dir=tmp_path)
    again = rerun.chat([U("hello")], max_tokens=16)
    assert again.cached and again.text == "reply 1"


def test_cache_key_depends_on_every_parameter(tmp_path: Path) -> None:
    model = ManagedChatModel(CountingModel(), cache_dir=tmp_path)
    base = dict(max_tokens=16, temperature=0.0, stop=None, json_schema=None)
    key = model.cache_key([U("hi")], **base)
    assert key == model.cache_key([U("hi")], **base)
    variants = [
        model.cache_key([U("hi!")], **base),
        model.cache_key([ChatMessage("system", "hi")], **base),
        model.cache_key([U("hi")], **{**base, "max_tokens": 17}),
        model.cache_key([U("hi")], **{**base, "temperature": 0.5}),
        model.cache_key([U("hi")], **{**base, "stop": ["\n"]}),
        model.cache_key([U("hi")], **{**base, "json_schema": {"type": "object"}}),
        ManagedChatModel(ScriptedChat(), cache_dir=tmp_path).cache_key([U("hi")], **base),  # other backend
    ]
    assert len({key, *variants}) == 1 + len(variants)


def test_sampling_calls_get_fresh_samples_but_replay_on_rerun(tmp_path: Path) -> None:
    model = ManagedChatModel(CountingModel(), cache_dir=tmp_path)
    texts = [model.chat([U("plan")], temperature=0.7).text for _ in range(3)]
    assert texts == ["reply 1", "reply 2", "reply 3"]
    rerun = ManagedChatModel(CountingModel(), cache_dir=tmp_path)
    replay = [rerun.chat([U("plan")], temperature=0.7) for _ in range(3)]
    assert [r.text for r in replay] == texts and all(r.cached for r in replay)


def test_cache_can_be_disabled(tmp_path: Path) -> None:
    inner = CountingModel()
    model = ManagedChatModel(inner, cache_dir=tmp_path, cache=False)
    assert [model.chat([U("x")]).text for _ in range(2)] == ["reply 1", "reply 2"]
    assert not any(tmp_path.iterdir())


# -- wrapper: retries ------------------------------------------------------------------------
class FlakyModel(CountingModel):
    def __init__(self, failures: int, exc: type[Exception] = TransientLLMError) -> None:
        super().__init__()
        self.failures = failures
        self.exc = exc
        self.attempts = 0

    def chat(self, messages, **kwargs):  # type: ignore[no-untyped-def]
        self.attempts += 1
        if self.attempts <= self.failures:
            raise self.exc(f"boom {self.attempts}")
        return super().chat(messages, **kwargs)


def test_retries_transient_errors_with_backoff() -> None:
    inner = FlakyModel(failures=2)
    model = ManagedChatModel(inner, max_retries=2, retry_wait=0.05)
    start = time.perf_counter()
    assert model.chat([U("x")]).text == "reply 1"
    assert time.perf_counter() - start >= 0.05 + 0.1 * 0.9  # two exponential waits happened
    assert inner.attempts == 3 and model.usage.retries == 2 and model.usage.errors == 0


def test_retries_give_up_and_permanent_errors_are_not_retried() -> None:
    model = ManagedChatModel(FlakyModel(failures=5), max_retries=1, retry_wait=0.01)
    with pytest.raises(TransientLLMError, match="boom 2"):
        model.chat([U("x")])
    assert model.usage.errors == 1 and model.usage.retries == 1
    permanent = FlakyModel(failures=5, exc=LLMError)
    with pytest.raises(LLMError, match="boom 1"):
        ManagedChatModel(permanent, max_retries=3, retry_wait=0.01).chat([U("x")])
    assert permanent.attempts == 1


# -- embedder wrapper ------------------------------------------------------------------------
class HashEmbedder:
    name = "hash"
    dim = 8

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.seen.extend(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32) for t in texts]
        out = np.stack(rows)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_embedder_cache_only_computes_new_texts(tmp_path: Path) -> None:
    inner = HashEmbedder()
    emb = ManagedEmbedder(inner, cache_dir=tmp_path)
    a = emb.embed(["one", "two"])
    b = emb.embed(["two", "three", "one"])
    assert inner.seen == ["one", "two", "three"]
    np.testing.assert_array_equal(b[0], a[1])
    np.testing.assert_array_equal(b[2], a[0])
    assert emb.usage.cache_hits == 2 and emb.usage.texts == 5
    assert emb.embed([]).shape == (0, 8)


# -- factory ---------------------------------------------------------------------------------
def test_registries_and_errors(tmp_path: Path) -> None:
    assert {"llama_cpp", "openai", "scripted"} <= set(CHAT_BACKENDS.names())
    assert {"minilm", "openai"} <= set(EMBEDDING_BACKENDS.names())
    with pytest.raises(UnknownComponentError, match="available: .*llama_cpp"):
        build_chat_model(LLMConfig(backend="nope"), tmp_path)
    with pytest.raises(LLMError, match="bad options.*temprature") as err:
        build_chat_model(LLMConfig(backend="openai", options={"temprature": 1}), tmp_path)
    # the message names what the backend does not take and what it does
    assert "does not take ['temprature']" in str(err.value) and "'base_url'" in str(err.value)
    assert "'llm.options={}'" in str(err.value)
    with pytest.raises(LLMError, match="does not take \\['state_cache'\\].*'embedding.options=\\{\\}'"):
        build_embedder(EmbeddingConfig(backend="minilm", options={"state_cache": True}), tmp_path)
    emb = build_embedder(EmbeddingConfig(backend="minilm", options={"cache": False}), tmp_path)
    assert emb.dim == 384 and emb.inner._model is None  # nothing loaded until the first embed


def test_llama_cpp_backend_builds_without_loading(tmp_path: Path) -> None:
    model = build_chat_model(LLMConfig(backend="llama_cpp", options={"model": "qwen2.5-coder-0.5b", "n_ctx": 2048}), tmp_path)
    assert model.name == "llama_cpp:qwen2.5-coder-0.5b" and model.inner._llama is None
    with pytest.raises(LLMError, match="unknown llama_cpp model"):
        build_chat_model(LLMConfig(backend="llama_cpp", options={"model": "gpt-17"}), tmp_path).chat([U("x")])
    with pytest.raises(LLMError, match="GGUF model file not found"):
        build_chat_model(LLMConfig(backend="llama_cpp", options={"model": str(tmp_path / "m.gguf")}), tmp_path).chat([U("x")])


# -- GGUF assembly ---------------------------------------------------------------------------
def _fake_spec(chunks: list[bytes], sha: str | None = None) -> gguf.GGUFSpec:
    data = b"".join(chunks)
    return gguf.GGUFSpec(
        name="fake-model",
        description="test",
        dist_prefix="hydra-vr-test-nonexistent-part",
        num_parts=len(chunks),
        version="1.0",
        size=len(data),
        sha256=sha or hashlib.sha256(data).hexdigest(),
    )


def test_missing_parts_error_names_the_pip_command(tmp_path: Path) -> None:
    spec = _fake_spec([b"a", b"b"])
    with pytest.raises(LLMError, match=r"(?s)missing: hydra-vr-test-nonexistent-part1, .*pip install 'hydra-vr-test-nonexistent-part1==1.0'"):
        gguf.assemble(spec, tmp_path / "models" / "fake.gguf")


def test_assembly_concatenates_in_order_and_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = [b"GGUF" + bytes(range(200)), b"x" * 10_000, b"tail"]
    files = []
    for i, chunk in enumerate(chunks, start=1):
        f = tmp_path / f"part{i:02d}.bin"
        f.write_bytes(chunk)
        files.append(f)
    monkeypatch.setattr(gguf, "_part_path", lambda dist, index: files[index - 1])
    target = tmp_path / "models" / "fake.gguf"
    assert gguf.assemble(_fake_spec(chunks), target) == target
    assert target.read_bytes() == b"".join(chunks)
    bad = tmp_path / "models" / "bad.gguf"
    with pytest.raises(LLMError, match="corrupt"):
        gguf.assemble(_fake_spec(chunks, sha="0" * 64), bad)
    assert not bad.exists() and [p.name for p in bad.parent.iterdir()] == ["fake.gguf"]  # no temp left behind


def test_known_models_match_the_published_sizes_and_hashes() -> None:
    # Figures from shared/MODELS.md; the full hashes were computed from the part packages.
    published = {"qwen2.5-coder-1.5b": (1_117_320_768, "cc324af0"), "qwen2.5-coder-0.5b": (491_400_064, "1d961463")}
    for name, (size, prefix) in published.items():
        spec = gguf.KNOWN_MODELS[name]
        assert spec.size == size and spec.sha256.startswith(prefix) and len(bytes.fromhex(spec.sha256)) == 32
    assert gguf.DEFAULT_MODEL == "qwen2.5-coder-1.5b"


# -- openai backend against a stub server ----------------------------------------------------
class _Stub(BaseHTTPRequestHandler):
    """Answers like an OpenAI server; ``script`` decides per request (status, body)."""

    state: Any  # SimpleNamespace(url, requests, script), set per fixture

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.state.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        status, payload = self.state.script(self.path, body, len(self.state.requests))
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "stub-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }


@pytest.fixture
def stub_server() -> Iterator[Any]:
    state = SimpleNamespace(url="", requests=[], script=None)
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Stub,), {"state": state}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()
    server.server_close()


def test_openai_json_schema_falls_back_when_unsupported(stub_server: Any, tmp_path: Path) -> None:
    def script(path: str, body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        if body.get("response_format", {}).get("type") == "json_schema":
            return 400, {"error": {"message": "response_format json_schema not supported", "type": "invalid_request_error"}}
        return 200, _completion('{"answer": "yes"}')

    stub_server.script = script
    model = build_chat_model(LLMConfig(backend="openai", options={"base_url": stub_server.url, "model": "m", "api_key_env": "HYDRA_TEST_NO_SUCH_KEY"}), tmp_path)
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    result = model.chat([U("yes or no?")], json_schema=schema, max_tokens=20)
    assert json.loads(result.text) == {"answer": "yes"} and result.meta["json_mode"] == "json_object_schema"
    assert (result.prompt_tokens, result.completion_tokens, result.model) == (5, 2, "stub-model")
    sent = [r["body"]["response_format"] for r in stub_server.requests]
    assert sent == [{"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}, {"type": "json_object", "schema": schema}]
    assert stub_server.requests[0]["auth"] == "Bearer sk-no-key-required"
    # The working mode is remembered: the next schema call goes straight to it.
    model.chat([U("again?")], json_schema=schema, max_tokens=20)
    assert stub_server.requests[-1]["body"]["response_format"]["type"] == "json_object" and len(stub_server.requests) == 3


def test_openai_server_errors_are_retried(stub_server: Any, tmp_path: Path) -> None:
    stub_server.script = lambda path, body, n: (503, {"error": {"message": "loading"}}) if n <= 2 else (200, _completion("ok"))
    model = build_chat_model(
        LLMConfig(backend="openai", options={"base_url": stub_server.url, "model": "m", "retry_wait": 0.01, "cache": False}), tmp_path
    )
    assert model.chat([U("hi")]).text == "ok"
    assert len(stub_server.requests) == 3 and model.usage.retries == 2
    stub_server.script = lambda path, body, n: (401, {"error": {"message": "bad key"}})
    with pytest.raises(LLMError, match="rejected the API key"):
        model.chat([U("hi again")])
    assert len(stub_server.requests) == 4  # auth errors are not retried


def test_openai_embedder_orders_and_normalises(stub_server: Any, tmp_path: Path) -> None:
    def script(path: str, body: dict[str, Any], n: int) -> tuple[int, dict[str, Any]]:
        data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])]
        return 200, {"object": "list", "data": data[::-1], "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}

    stub_server.script = script
    emb = build_embedder(EmbeddingConfig(backend="openai", options={"base_url": stub_server.url, "dim": 3}), tmp_path)
    vecs = emb.embed(["a", "abcd"])
    assert vecs.shape == (2, 3)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(vecs[1], np.array([4.0, 1.0, 0.0]) / np.sqrt(17), rtol=1e-6)
    assert stub_server.requests[0]["body"]["dimensions"] == 3


def test_unreachable_endpoint_fails_fast_with_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as s:  # bound then released: nothing listens on this loopback port
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    model = build_chat_model(LLMConfig(backend="openai", options={"base_url": url, "model": "m"}), tmp_path)
    start = time.perf_counter()
    with pytest.raises(LLMError, match=rf"(?s)cannot reach {url}.*Check that the server is running"):
        model.chat([U("hi")])
    assert time.perf_counter() - start < 5
    assert model.usage.errors == 1 and model.usage.retries == 0


def test_excluded_words_come_off_the_schema_wherever_they_are() -> None:
    from hydra_vr.llm.base import excluded_words

    schema = {"type": "object", "required": ["guesses"], "properties": {"guesses": {
        "type": "array", "minItems": 3, "items": {"type": "string", "not": {"enum": ["unknown", "none"]}}}}}
    stripped, words = excluded_words(schema)
    assert words == ("unknown", "none")
    assert stripped["properties"]["guesses"]["items"] == {"type": "string"} and stripped["properties"]["guesses"]["minItems"] == 3
    assert "not" in schema["properties"]["guesses"]["items"]  # the caller's schema is left as it was
    assert excluded_words({"type": "string", "enum": ["a"]}) == ({"type": "string", "enum": ["a"]}, ())
