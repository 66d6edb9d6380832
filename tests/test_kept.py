"""kiln/kept.py: what a process keeps across requests stays within its count and its bytes."""

from __future__ import annotations

from kiln.kept import Kept, text_size


def kept(limit: int = 3, budget: int = 1600) -> Kept[str]:
    return Kept(limit, budget, size=len)


def test_a_kept_value_is_found_by_its_key():
    values = kept()
    values.put("a", "x")
    assert (values.get("a"), values.get("b")) == ("x", None)


def test_past_the_count_the_oldest_key_goes():
    values = kept(limit=2)
    for key in "abc":
        values.put(key, key)
    assert [values.get(key) for key in "abc"] == [None, "b", "c"]


def test_past_the_bytes_the_oldest_keys_go():
    values = kept(limit=100, budget=1600)
    for n in range(16):
        values.put(n, "x" * 100)  # 1600 bytes: full
    values.put("next", "y" * 100)
    assert values.get(0) is None
    assert values.get(1) == values.get(15) == "x" * 100
    assert (values.get("next"), values.bytes) == ("y" * 100, 1600)


def test_a_value_larger_than_a_sixteenth_of_the_bytes_is_not_kept():
    values = kept(budget=1600)
    values.put("big", "x" * 101)
    values.put("small", "x" * 100)
    assert (values.get("big"), len(values), values.bytes) == (None, 1, 100)


def test_a_key_kept_again_counts_its_bytes_once():
    values = kept()
    values.put("a", "x" * 50)
    values.put("a", "y" * 20)
    assert (values.get("a"), values.bytes, len(values)) == ("y" * 20, 20, 1)


def test_the_size_of_rows_is_their_text():
    assert text_size(("ab", None, 3), ["cd"], {"k": "vv"}) == 2 + 8 + 8 + 2 + 1 + 2


def test_many_reads_at_once_what_is_not_kept_and_keeps_it_under_the_key_read():
    values = kept(limit=10)
    values.put("a-1", "A")
    calls: list[list[str]] = []

    def read(missing: list[str]) -> list[tuple[str, str, str | None]]:
        calls.append(missing)
        return [(ident, ident.upper(), f"{ident}-2" if ident == "b" else None) for ident in missing]

    # "a" is kept under its key; "b" and "c" are read in one call; "c" is never to be kept.
    assert values.many({"a": "a-1", "b": "b-1", "c": None}, read) == {"a": "A", "b": "B", "c": "C"}
    assert calls == [["b", "c"]]
    # "b" is kept under the key it was read with, not the one asked for.
    assert (values.get("b-1"), values.get("b-2"), len(values)) == (None, "B", 2)
