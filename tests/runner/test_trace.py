"""Masking and the trace buffer: secrets never leave, whatever the chunking."""

from __future__ import annotations

import zlib

import pytest

from kiln.runner.trace import Masker, TraceBuffer


def masked(secrets: list[str], chunks: list[bytes]) -> bytes:
    masker = Masker(secrets)
    return b"".join(masker.feed(chunk) for chunk in chunks) + masker.flush()


def test_a_secret_in_one_write_is_masked():
    assert masked(["hunter22"], [b"pw=hunter22!\n"]) == b"pw=[MASKED]!\n"


@pytest.mark.parametrize("cut", range(1, 8))
def test_a_secret_split_across_writes_is_masked(cut):
    data = b"pw=hunter22!\n"
    at = 3 + cut
    assert masked(["hunter22"], [data[:at], data[at:]]) == b"pw=[MASKED]!\n"


def test_a_secret_fed_byte_by_byte_is_masked():
    data = b"a hunter22 b hunter22"
    assert masked(["hunter22"], [bytes([c]) for c in data]) == b"a [MASKED] b [MASKED]"


def test_the_longer_of_overlapping_secrets_wins():
    assert masked(["abcd1234", "abcd1234efgh"], [b"x abcd1234efgh y"]) == b"x [MASKED] y"


def test_a_prefix_that_does_not_become_a_secret_is_released():
    masker = Masker(["hunter22"])
    assert masker.feed(b"hunt") == b""
    assert masker.feed(b"ing\n") == b"hunting\n"


def test_no_secrets_passes_everything_through():
    assert masked([], [b"abc", b"def"]) == b"abcdef"


def test_the_buffer_keeps_a_crc32_of_what_it_holds():
    buffer = TraceBuffer(["topsecret"])
    buffer.write("one topsecret\n")
    buffer.write(b"two\n")
    buffer.close()
    held = b"one [MASKED]\ntwo\n"
    assert buffer.read(0) == held
    assert buffer.size() == len(held)
    assert buffer.checksum() == f"crc32:{zlib.crc32(held):08x}"


def test_the_buffer_stops_at_its_limit_and_says_so():
    buffer = TraceBuffer([], limit=10)
    buffer.write(b"x" * 50)
    buffer.write(b"later")
    text = buffer.text()
    assert text.startswith("x" * 10)
    assert "exceeded limit of 10 bytes" in text
    assert "later" not in text


def test_the_display_sees_masked_lines_only():
    lines: list[str] = []
    buffer = TraceBuffer(["topsecret"])
    buffer.on_line = lines.append
    buffer.write(b"token topsecret here\n")
    assert lines == ["token [MASKED] here"]
