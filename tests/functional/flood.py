#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Hold idle connections to a sheep, as a flood would: flood.py PORT N
SRC[,SRC...] SECONDS.  Opens up to N connections to 127.0.0.1:PORT, from
the source addresses in turn (127.0.0.x: any loopback address), and when
the sheep closes one takes another, for SECONDS; prints "held H of N" at
the start and at the end."""
import select
import socket
import sys
import time


def connect(src, port):
    s = socket.socket()
    s.setblocking(False)
    s.bind((src, 0))
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s


def main():
    port, n, srcs, secs = (int(sys.argv[1]), int(sys.argv[2]),
                           sys.argv[3].split(","), float(sys.argv[4]))
    held = []
    i = 0
    for i in range(n):
        try:
            held.append(connect(srcs[i % len(srcs)], port))
        except OSError:
            break
    time.sleep(1)
    alive = [s for s in held if not closed(s)]
    print("held %d of %d" % (len(alive), n), flush=True)
    end = time.time() + secs
    while time.time() < end:
        # take each slot that frees up
        for s in list(alive):
            if closed(s):
                s.close()
                alive.remove(s)
                i += 1
                try:
                    alive.append(connect(srcs[i % len(srcs)], port))
                except OSError:
                    pass
        time.sleep(0.05)
    print("held %d of %d" % (len([s for s in alive if not closed(s)]), n),
          flush=True)


def closed(s):
    """the sheep closed it (or refused it)"""
    try:
        p = select.poll()
        p.register(s, select.POLLIN | select.POLLHUP | select.POLLERR)
        if not p.poll(0):
            return False
        return s.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


if __name__ == "__main__":
    main()
