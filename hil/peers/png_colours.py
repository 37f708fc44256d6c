#!/usr/bin/env python3
"""Counts the pixels of a PNG near each given colour: png_colours.py FILE RRGGBB [RRGGBB …].
Prints one `RRGGBB COUNT` line per colour. 8-bit RGB or RGBA, non-interlaced (what Chromium writes);
decoded here with zlib alone, so the check needs no imaging library."""
import struct
import sys
import zlib

data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, chunks = 8, {}
idat = b""
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG (depth {depth}, colour {colour})"
bpp = 3 if colour == 2 else 4
raw = zlib.decompress(idat)
stride = width * bpp
rows, previous, i = [], bytearray(stride), 0
for _ in range(height):
    kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = previous[x]
        c = previous[x - bpp] if x >= bpp else 0
        if kind == 1:
            line[x] = (line[x] + a) & 255
        elif kind == 2:
            line[x] = (line[x] + b) & 255
        elif kind == 3:
            line[x] = (line[x] + (a + b) // 2) & 255
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line))
    previous = line
targets = [tuple(int(h[k:k + 2], 16) for k in (0, 2, 4)) for h in sys.argv[2:]]
counts = [0] * len(targets)
for line in rows:
    for x in range(0, stride, bpp):
        r, g, b = line[x], line[x + 1], line[x + 2]
        for t, (tr, tg, tb) in enumerate(targets):
            if abs(r - tr) + abs(g - tg) + abs(b - tb) < 40:
                counts[t] += 1
for h, n in zip(sys.argv[2:], counts):
    print(h, n)
