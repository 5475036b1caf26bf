from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ragcheck_local.claims.cache import ClaimCache
from ragcheck_local.errors import RagcheckError
from ragcheck_local.formats.store import model_fingerprint, text_hash
from ragcheck_local.judge.cache import NLICache

REPO_ROOT = Path(__file__).resolve().parents[2]


def _key(i: int) -> tuple[str, str]:
    return text_hash(f"premise {i}"), text_hash(f"claim {i}")


def _probs(i: int) -> tuple[float, float, float]:
    # Distinct, non-round floats so any truncation or column mix-up shows.
    a = (i % 97) / 97.0
    b = (1.0 - a) / 3.0
    return a, b, 1.0 - a - b


def test_text_hash_is_sha256_of_utf8() -> None:
    assert text_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert text_hash("é") != text_hash("e")
    # Lone surrogates (valid in JSON) must hash rather than raise.
    assert len(text_hash("\ud800")) == 64


def test_nli_round_trip_and_misses(tmp_path: Path) -> None:
    with NLICache(tmp_path / "c.sqlite", namespace="ns") as cache:
        assert cache.get_many([_key(1)]) == {}
        cache.put_many({_key(i): _probs(i) for i in range(5)})
        got = cache.get_many([_key(3), _key(1), _key(3), _key(99)])
    assert got == {_key(3): _probs(3), _key(1): _probs(1)}
    assert all(isinstance(p, float) for p in got[_key(3)])


def test_nli_put_replaces_existing_value(tmp_path: Path) -> None:
    with NLICache(tmp_path / "c.sqlite", namespace="ns") as cache:
        cache.put_many({_key(0): (0.1, 0.2, 0.7)})
        cache.put_many({_key(0): (0.6, 0.3, 0.1)})
        assert cache.get_many([_key(0)]) == {_key(0): (0.6, 0.3, 0.1)}


def test_nli_accepts_numpy_values(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    with NLICache(tmp_path / "c.sqlite", namespace="ns") as cache:
        cache.put_many({_key(0): np.array([0.25, 0.5, 0.25], dtype=np.float32)})
        assert cache.get_many([_key(0)]) == {_key(0): (0.25, 0.5, 0.25)}


def test_namespace_isolation(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with NLICache(path, namespace="model-a") as a, NLICache(path, namespace="model-b") as b:
        a.put_many({_key(1): (0.9, 0.05, 0.05)})
        b.put_many({_key(1): (0.1, 0.1, 0.8)})
        assert a.get_many([_key(1)]) == {_key(1): (0.9, 0.05, 0.05)}
        assert b.get_many([_key(1)]) == {_key(1): (0.1, 0.1, 0.8)}
    with NLICache(path, namespace="model-c") as c:
        assert c.get_many([_key(1)]) == {}


def test_many_keys_exercise_chunking(tmp_path: Path) -> None:
    n = 2500
    with NLICache(tmp_path / "c.sqlite", namespace="ns") as cache:
        cache.put_many({_key(i): _probs(i) for i in range(0, n, 2)})
        got = cache.get_many([_key(i) for i in range(n)])
    assert len(got) == n // 2
    assert got == {_key(i): _probs(i) for i in range(0, n, 2)}


def test_reopen_persists(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dir" / "c.sqlite"  # parents are created
    with NLICache(path, namespace="ns") as cache:
        cache.put_many({_key(7): _probs(7)})
    with ClaimCache(path, namespace="claims-ns") as claims:
        claims.put_many({text_hash("t"): [("A claim.", 0, 8)]})
    with NLICache(path, namespace="ns") as cache:
        assert cache.get_many([_key(7)]) == {_key(7): _probs(7)}
    with ClaimCache(path, namespace="claims-ns") as claims:
        assert claims.get_many([text_hash("t")]) == {text_hash("t"): [("A claim.", 0, 8)]}


def test_claim_cache_round_trip(tmp_path: Path) -> None:
    items = {
        text_hash("ja"): [("東京は日本の首都である。", 0, 12), ("二つ目。", 12, 16)],
        text_hash("empty"): [],
        text_hash("odd"): [("lone \ud800 surrogate", 3, 21)],
    }
    with ClaimCache(tmp_path / "c.sqlite", namespace="spacy-en") as cache:
        cache.put_many(items)
        got = cache.get_many([*items, text_hash("missing")])
        with ClaimCache(tmp_path / "c.sqlite", namespace="other") as other:
            assert other.get_many(list(items)) == {}
    assert got == items
    assert got[text_hash("empty")] == []  # cached "no claims" is distinct from a miss


def test_claim_cache_many_keys(tmp_path: Path) -> None:
    items = {text_hash(str(i)): [(f"claim {i}", i, i + 7)] for i in range(2100)}
    with ClaimCache(tmp_path / "c.sqlite", namespace="ns") as cache:
        cache.put_many(items)
        assert cache.get_many(list(items)) == items


def test_bad_keys_and_values_rejected(tmp_path: Path) -> None:
    with NLICache(tmp_path / "c.sqlite", namespace="ns") as cache:
        with pytest.raises(ValueError, match="sha256"):
            cache.get_many([("not-a-hash", text_hash("x"))])
        with pytest.raises(ValueError, match="3 probabilities"):
            cache.put_many({_key(0): (0.5, 0.5)})
        with pytest.raises(ValueError, match="not finite"):
            cache.put_many({_key(0): (float("nan"), 0.5, 0.5)})
        assert cache.get_many([_key(0)]) == {}
    with ClaimCache(tmp_path / "c.sqlite", namespace="ns") as claims:
        with pytest.raises(ValueError, match=r"\(str, int, int\)"):
            claims.put_many({text_hash("x"): [("claim", 0, True)]})
    with pytest.raises(ValueError, match="namespace"):
        NLICache(tmp_path / "c.sqlite", namespace="")


def test_closed_cache_raises(tmp_path: Path) -> None:
    cache = NLICache(tmp_path / "c.sqlite", namespace="ns")
    cache.close()
    cache.close()  # idempotent
    with pytest.raises(RagcheckError, match="closed"):
        cache.get_many([_key(0)])


def test_corrupt_file_error_names_path(tmp_path: Path) -> None:
    path = tmp_path / "broken.sqlite"
    path.write_bytes(b"this is definitely not an sqlite database\n" * 200)
    with pytest.raises(RagcheckError, match=r"broken\.sqlite") as info:
        NLICache(path, namespace="ns")
    assert "corrupt" in str(info.value)


def test_foreign_sqlite_file_rejected(tmp_path: Path) -> None:
    path = tmp_path / "foreign.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(RagcheckError, match=r"foreign\.sqlite.*not a ragcheck_local cache"):
        ClaimCache(path, namespace="ns")


def test_schema_version_mismatch_rejected(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    NLICache(path, namespace="ns").close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(RagcheckError, match="schema version '999'"):
        NLICache(path, namespace="ns")


def test_concurrent_thread_readers_while_writing(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    n = 3000
    errors: list[BaseException] = []
    seen_counts: list[int] = []
    done = threading.Event()

    def reader() -> None:
        try:
            with NLICache(path, namespace="ns") as cache:
                index = {_key(i): i for i in range(n)}
                while True:
                    finished = done.is_set()
                    got = cache.get_many(list(index))
                    for key, probs in got.items():
                        if probs != _probs(index[key]):
                            raise AssertionError(f"wrong value for key {index[key]}: {probs}")
                    seen_counts.append(len(got))
                    if finished:
                        return
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)

    with NLICache(path, namespace="ns") as writer:
        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        for start in range(0, n, 100):  # many short write transactions
            writer.put_many({_key(i): _probs(i) for i in range(start, start + 100)})
        done.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors
    # Readers saw the writer's progress, and each finished with the complete data.
    assert max(seen_counts) == n
    with NLICache(path, namespace="ns") as cache:
        assert cache.get_many([_key(i) for i in range(n)]) == {_key(i): _probs(i) for i in range(n)}


_READER_SCRIPT = """
import json, sys
from ragcheck_local.formats.store import text_hash
from ragcheck_local.judge.cache import NLICache
path, n = sys.argv[1], int(sys.argv[2])
keys = [(text_hash(f"premise {i}"), text_hash(f"claim {i}")) for i in range(n)]
counts = []
with NLICache(path, namespace="ns") as cache:
    while True:
        got = cache.get_many(keys)
        for i, key in enumerate(keys):
            if key in got:
                a = (i % 97) / 97.0
                b = (1.0 - a) / 3.0
                if got[key] != (a, b, 1.0 - a - b):
                    sys.exit(f"wrong value for key {i}: {got[key]}")
        counts.append(len(got))
        if len(counts) == 1:
            print("ready", flush=True)  # the writer resumes only now: reads overlap writes
        if len(got) == n:
            break
print(json.dumps({"reads": len(counts), "first": counts[0]}))
"""


def test_reader_process_while_writing(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    n = 2000
    with NLICache(path, namespace="ns") as writer:
        writer.put_many({_key(i): _probs(i) for i in range(100)})
        proc = subprocess.Popen(
            [sys.executable, "-c", _READER_SCRIPT, str(path), str(n)],
            cwd=REPO_ROOT,  # `python -c` imports from the working directory: this checkout
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        for start in range(100, n, 50):
            writer.put_many({_key(i): _probs(i) for i in range(start, start + 50)})
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    report = json.loads(out)
    assert report["first"] == 100  # it read the pre-populated rows before the writer went on
    assert report["reads"] >= 2  # ... and again until it saw everything the writer added


def _make_model_dir(path: Path) -> Path:
    path.mkdir()
    (path / "config.json").write_text('{"model_type": "bert"}')
    (path / "model.safetensors").write_bytes(bytes(range(256)) * 4096)  # 1 MiB: > one chunk
    (path / "vocab.txt").write_text("[PAD]\n[UNK]\nhello\n")
    return path


def test_fingerprint_stable_and_location_independent(tmp_path: Path) -> None:
    model = _make_model_dir(tmp_path / "m")
    first = model_fingerprint(model)
    assert len(first) == 64
    assert model_fingerprint(str(model)) == first
    copy = shutil.copytree(model, tmp_path / "copy")
    assert model_fingerprint(copy) == first
    # Files that do not define the model, and subfolders (an onnx/ export), are ignored.
    (model / "README.md").write_text("notes")
    (model / "training_args.bin").write_bytes(b"\x80\x04 trainer state")
    (model / "onnx").mkdir()
    (model / "onnx" / "model.onnx").write_bytes(b"exported")
    assert model_fingerprint(model) == first


def test_fingerprint_changes_when_one_weight_byte_changes(tmp_path: Path) -> None:
    model = _make_model_dir(tmp_path / "m")
    before = model_fingerprint(model)
    with (model / "model.safetensors").open("r+b") as fh:  # in place: same size, same inode
        fh.seek(700_000)
        fh.write(b"\xff")
    after = model_fingerprint(model)
    assert after != before
    (model / "tokenizer.json").write_text("{}")
    assert model_fingerprint(model) not in {before, after}


def test_fingerprint_of_missing_or_empty_dir(tmp_path: Path) -> None:
    with pytest.raises(RagcheckError, match="not found"):
        model_fingerprint(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RagcheckError, match="empty"):
        model_fingerprint(tmp_path / "empty")
