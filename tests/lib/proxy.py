#!/usr/bin/env python3
"""proxy.py HOST PORT TARGET CONTROL: a TCP relay the soak's nemesis steers.

Listens on HOST:PORT and relays each connection to TARGET (tcp:HOST:PORT or
unix:PATH). CONTROL is a file the nemesis rewrites (atomically, by rename);
it is read every 20 ms and holds "DELAY_S FROZEN RESET_GEN":
  DELAY_S    seconds each chunk waits before it is passed on (both ways)
  FROZEN     1: nothing is passed on, new connections wait unanswered
  RESET_GEN  a number; each time it grows, every open connection is reset
             (RST: SO_LINGER 0, then closed)
Prints "ready PORT" on stdout once it listens (PORT 0 asks the kernel for a
free port, so a test cannot lose the one it picked to a suite alongside).
"""

import asyncio
import os
import socket
import struct
import sys

delay = 0.0
frozen = False
reset_gen = 0
conns = set()


def read_control(path):
    try:
        with open(path) as f:
            parts = f.read().split()
        return float(parts[0]), parts[1] == "1", int(parts[2])
    except (OSError, IndexError, ValueError):
        return None


def abort(writer):
    sock = writer.get_extra_info("socket")
    try:
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack("ii", 1, 0))
    except OSError:
        pass
    writer.transport.abort()


async def watch(path):
    global delay, frozen, reset_gen
    applied = None
    while True:
        found = read_control(path)
        if found:
            delay, frozen, gen = found
            if found != applied:
                # Tell a test that waits for it: the control is in force.
                applied = found
                with open(path) as source, open(path + ".applied.tmp", "w") as f:
                    f.write(source.read())
                os.replace(path + ".applied.tmp", path + ".applied")
            if gen > reset_gen:
                reset_gen = gen
                for pair in list(conns):
                    for writer in pair:
                        abort(writer)
                conns.clear()
        await asyncio.sleep(0.02)


async def pipe(reader, writer, pair):
    try:
        while data := await reader.read(65536):
            while frozen:
                await asyncio.sleep(0.02)
            if delay > 0:
                await asyncio.sleep(delay)
            if pair not in conns:
                break
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    for w in pair:
        abort(w)
    conns.discard(pair)


async def handle(client_reader, client_writer, target):
    while frozen:
        await asyncio.sleep(0.02)
    try:
        if target.startswith("unix:"):
            server_reader, server_writer = await asyncio.open_unix_connection(target[5:])
        else:
            host, port = target[4:].rsplit(":", 1)
            server_reader, server_writer = await asyncio.open_connection(host, int(port))
    except OSError:
        abort(client_writer)
        return
    pair = (client_writer, server_writer)
    conns.add(pair)
    await asyncio.gather(pipe(client_reader, server_writer, pair),
                         pipe(server_reader, client_writer, pair))


async def main():
    host, port, target, control = sys.argv[1:5]
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, target), host, int(port), reuse_address=True)
    asyncio.ensure_future(watch(control))
    bound = server.sockets[0].getsockname()[1]
    print(f"ready {bound}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__.split("\n")[0])
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        os._exit(0)
