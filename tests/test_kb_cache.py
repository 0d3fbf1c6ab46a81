"""The cache of parsed knowledge-base files: the same knowledge base, or none at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlfix.kb import cache
from rlfix.kb import load as load_module
from rlfix.kb.load import _yaml_files, builtin_dir, load_files
from tests.conftest import DATA


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(where))
    return where


def _facts(parsed: object) -> list[tuple[object, ...]]:
    """Everything a signature holds, the fields equality skips (places, extractors) included."""
    sigs = parsed.sigs  # type: ignore[attr-defined]
    return [
        (
            sig,
            str(sig.location),
            [(str(p.location), p.compiled.pattern, p.compiled.ignore_case) for p in sig.patterns],
            [(name, rx.pattern, rx.ignore_case) for name, rx in sig.extract],
        )
        for sig in sigs
    ]


def test_a_cached_knowledge_base_is_the_parsed_one(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _yaml_files(builtin_dir())
    fresh = load_files(files)
    assert not fresh.problems and len(list(cache_dir.glob("kb-*.json"))) == 1

    def parse_again(*_: object) -> None:
        raise AssertionError("parsed again: the cache file did not rebuild (a class it holds is not registered?)")

    # The second load must come from the cache: a cache that cannot rebuild what it kept is silently
    # skipped, and every run pays the whole parse (it did, once Signature held a Decision).
    monkeypatch.setattr(load_module, "_parse", parse_again)
    again = load_files(files)
    assert _facts(again) == _facts(fresh) and len(fresh.sigs) > 40
    assert (again.taxonomy, again.pins, again.files) == (fresh.taxonomy, fresh.pins, fresh.files)
    assert [p.requires for p in again.pins] == [p.requires for p in fresh.pins]
    assert again.messages == fresh.messages and len(fresh.messages) > 2000
    assert [s.decision for s in again.sigs] == [s.decision for s in fresh.sigs]


def test_another_byte_is_another_key_and_problems_are_never_kept(cache_dir: Path, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    source = (DATA / "kb").glob("*.yaml")
    for f in source:
        (kb / f.name).write_bytes(f.read_bytes())
    first = load_files(_yaml_files(kb))
    target = next(p for p in _yaml_files(kb) if "signatures:" in p.read_text())
    target.write_text(target.read_text().replace("signatures:", "signatures:\n  - id: [broken]", 1))
    broken = load_files(_yaml_files(kb))
    assert not first.problems and broken.problems
    assert len(list(cache_dir.glob("kb-*.json"))) == 1  # the broken set was not kept
    assert load_files(_yaml_files(kb)).problems == broken.problems


def test_a_damaged_or_foreign_cache_file_is_ignored(cache_dir: Path) -> None:
    files = _yaml_files(builtin_dir())
    fresh = load_files(files)
    (kept,) = cache_dir.glob("kb-*.json")
    for text in (
        "{not json",
        json.dumps({"class": "Popen", "fields": {"args": ["sh"]}}),
        "[]",
        '{"dict": 3}',
        '{"dict": {"sigs": []}}',
    ):
        kept.write_text(text)
        assert _facts(load_files(files)) == _facts(fresh)


def test_the_cache_can_be_off_or_unwritable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _yaml_files(builtin_dir())
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    assert cache.cache_dir() is None and not load_files(files).problems
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocker / "cache"))  # under a file: cannot be made
    assert not load_files(files).problems


def test_old_cache_files_are_pruned(cache_dir: Path, tmp_path: Path) -> None:
    for n in range(cache.KEEP + 3):
        cache.keep(f"{n:064x}", {"files": [str(n)]})
    assert len(list(cache_dir.glob("kb-*.json"))) == cache.KEEP
    assert not list(cache_dir.glob(".kb-*"))


def test_the_key_moves_with_the_files_rlfix_and_python(monkeypatch: pytest.MonkeyPatch) -> None:
    files = [("knowledge/a.yaml", b"signatures: []\n")]
    base = cache.key_of(files)
    assert cache.key_of(files) == base
    assert cache.key_of([("knowledge/b.yaml", files[0][1])]) != base
    assert cache.key_of([(files[0][0], files[0][1] + b" ")]) != base
    with monkeypatch.context() as patch:
        patch.setattr(cache, "__version__", "99.0")
        assert cache.key_of(files) != base
    with monkeypatch.context() as patch:
        patch.setattr(cache, "_code_digest", lambda: b"edited parse.py")
        assert cache.key_of(files) != base
    with monkeypatch.context() as patch:
        patch.setattr(cache.sys, "version", "3.99.0")
        assert cache.key_of(files) != base


# --- a cache that is never believed blindly (second audit, M6) ----------------------------------


def test_a_cache_file_changed_by_someone_else_is_ignored(cache_dir: Path) -> None:
    files = _yaml_files(builtin_dir())
    fresh = load_files(files)
    (kept,) = cache_dir.glob("kb-*.json")
    mac, _, body = kept.read_bytes().partition(b"\n")
    assert len(mac) == 64 and (cache_dir / cache.SECRET_NAME).stat().st_mode & 0o777 == 0o600
    # Well-formed, with the same key, but edited: a title changed, the MAC left as it was.
    kept.write_bytes(mac + b"\n" + body.replace(b"CUDA out of memory", b"Nothing to see here", 1))
    again = load_files(files)
    assert _facts(again) == _facts(fresh)
    assert "integrity" in (cache.last_note or "")
    # A MAC made without the user's secret does not pass either.
    import hashlib
    import hmac

    forged = hmac.new(b"x" * 32, body, hashlib.sha256).hexdigest().encode()
    kept.write_bytes(forged + b"\n" + body)
    assert _facts(load_files(files)) == _facts(fresh)


def test_a_cache_dir_others_can_write_is_not_used(cache_dir: Path) -> None:
    files = _yaml_files(builtin_dir())
    cache_dir.mkdir(mode=0o700)
    cache_dir.chmod(0o777)
    assert not load_files(files).problems
    assert not list(cache_dir.glob("kb-*.json"))  # nothing written there
    assert cache.fetch("0" * 64) is None and "writable by group or others" in (cache.last_note or "")
    from rlfix.kb.load import load_knowledge
    from rlfix.tools.describe import describe_knowledge

    assert "parsed-file cache note:" in describe_knowledge(load_knowledge())


def test_links_and_huge_files_are_not_read_and_pruning_keeps_foreign_names(cache_dir: Path, tmp_path: Path) -> None:
    files = _yaml_files(builtin_dir())
    fresh = load_files(files)
    (kept,) = cache_dir.glob("kb-*.json")
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(kept.read_bytes())
    kept.unlink()
    kept.symlink_to(elsewhere)  # a link planted where the cache file was: not followed
    key = kept.name[3:-5]
    assert cache.fetch(key) is None
    kept.unlink()
    kept.write_bytes(b"0" * 64 + b"\n" + b" " * (cache.MAX_BYTES + 1))
    assert cache.fetch(key) is None and _facts(load_files(files)) == _facts(fresh)
    foreign = [cache_dir / "kb-notes.json", cache_dir / "kb-1234.json", cache_dir / "mine.txt"]
    for path in foreign:
        path.write_text("keep me")
    for n in range(cache.KEEP + 3):
        cache.keep(f"{n:064x}", {"files": [str(n)]})
    assert all(path.exists() for path in foreign)
