"""The demo agent's chart: a PNG a viewer can decode, with one bar per value (demo_agent/chart.py)."""

import struct
import zlib

from demo_agent.chart import HEIGHT, WIDTH, bar_chart


def chunks(png: bytes) -> dict[bytes, bytes]:
    found, at = {}, 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, data = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", png[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + data)
        found[kind] = data
        at += 12 + length
    return found


def test_a_chart_is_a_png_of_its_size_with_taller_bars_for_larger_values():
    png = bar_chart([1, 4])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    parts = chunks(png)
    assert struct.unpack(">II", parts[b"IHDR"][:8]) == (WIDTH, HEIGHT)
    rows = zlib.decompress(parts[b"IDAT"])
    stride = 1 + WIDTH * 3

    def blue_rows(x: int) -> int:
        return sum(
            rows[y * stride + 1 + x * 3 : y * stride + 4 + x * 3] == bytes((54, 123, 240))
            for y in range(HEIGHT)
        )

    first_bar, second_bar = 10 + (WIDTH - 20) // 4, 10 + 3 * (WIDTH - 20) // 4
    assert blue_rows(second_bar) == 4 * blue_rows(first_bar) > 0
