"""Shared by the pymodbus peer servers: serve a datastore on a free loopback port, announce it, and
report changes of the watched registers until time runs out."""
import asyncio
import socket

from pymodbus.server import StartAsyncTcpServer


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
