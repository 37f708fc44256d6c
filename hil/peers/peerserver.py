"""Shared by the pymodbus peer servers: the SunSpec model layouts from pysunspec2's copy of the
official model JSON, and serving a datastore on a free loopback port, announcing it and reporting
changes of the watched registers until time runs out."""
import asyncio
import json
import os
import socket

import sunspec2
from pymodbus.server import StartAsyncTcpServer

MODELS = os.path.join(os.path.dirname(sunspec2.__file__), "models", "json")
BASE = 40000


def layout(mid):
    """Offsets, sizes and types of the model's top-level points from its ID register, and its L."""
    with open(os.path.join(MODELS, f"model_{mid}.json")) as f:
        group = json.load(f)["group"]
    offsets, offset = {}, 0
    for point in group["points"]:
        offsets[point["name"]] = (offset, point["size"], point["type"])
        offset += point["size"]
    for sub in group.get("groups", []):
        count = sub.get("count", 1)
        offset += sum(p["size"] for p in sub["points"]) * (count if isinstance(count, int) else 1)
    return offsets, offset - 2


def image(models):
    """A SunSpec register image from 40000: "SunS", each model's ID, L and zeroed points, the end
    model. Returns the words, where each model starts with its point offsets, and put(mid, name,
    value) to set a point (one or two registers, high word first)."""
    words = [0x5375, 0x6E53]
    where = {}
    for mid in models:
        offsets, length = layout(mid)
        where[mid] = (BASE + len(words), offsets)
        block = [0] * (length + 2)
        block[0], block[1] = mid, length
        words += block
    words += [0xFFFF, 0]

    def put(mid, name, value):
        address, offsets = where[mid]
        offset, size, _ = offsets[name]
        index = address - BASE + offset
        if size == 1:
            words[index] = value & 0xFFFF
        else:
            words[index] = (value >> 16) & 0xFFFF
            words[index + 1] = value & 0xFFFF

    return words, where, put


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def serve(context, seconds, read_state, report):
    """Prints "PORT <n>", then calls report(state) each time read_state() changes."""
    port = free_port()

    async def watch():
        last = None
        while True:
            state = read_state()
            if state != last and last is not None:
                print(report(state), flush=True)
            last = state
            await asyncio.sleep(0.02)

    async def run():
        server = asyncio.create_task(StartAsyncTcpServer(context=context, address=("127.0.0.1", port)))
        await asyncio.sleep(0.3)
        print(f"PORT {port}", flush=True)
        watcher = asyncio.create_task(watch())
        await asyncio.sleep(seconds)
        watcher.cancel()
        server.cancel()

    asyncio.run(run())
