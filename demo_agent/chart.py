"""A small bar chart as PNG bytes, drawn without any imaging library: what the demo agent returns for
"draw a chart" (a file part, uploaded into the thread by Agent Kourier). Pure."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

WIDTH, HEIGHT = 320, 160
BACKGROUND = (255, 255, 255)
BAR = (54, 123, 240)
AXIS = (80, 80, 80)


def bar_chart(values: Sequence[float]) -> bytes:
    """One bar per value, scaled to the largest, on a white ground with an axis line."""
    top = max(values, default=1) or 1
    slot = (WIDTH - 20) // max(len(values), 1)
    heights = [int((HEIGHT - 20) * value / top) for value in values]
    rows = []
    for y in range(HEIGHT):
        row = bytearray()
        for x in range(WIDTH):
            row += bytes(_pixel(x, y, slot, heights))
        rows.append(b"\x00" + bytes(row))  # filter type 0 for each scanline
    return _png(b"".join(rows))


def _pixel(x: int, y: int, slot: int, heights: Sequence[int]) -> tuple[int, int, int]:
    if y == HEIGHT - 10 and x >= 10:
        return AXIS
    index = (x - 10) // slot if x >= 10 else -1
    in_a_bar = 0 <= index < len(heights) and (x - 10) % slot > slot // 5
    if in_a_bar and HEIGHT - 10 - heights[index] <= y < HEIGHT - 10:
        return BAR
    return BACKGROUND


def _png(raw: bytes) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
