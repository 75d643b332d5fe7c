#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Trickle payloads into a sheep, from another host's address.

trickle.py PORT OID N SECONDS: N connections to the client port each send
a WRITE_OBJ header announcing 4 MiB for object OID (hex).
trickle.py --nbd PORT PREFIX N SECONDS: N connections to the NBD port,
connection i to export PREFIXi, each send a WRITE of 32 MiB.

Each then sends 4 KiB of the payload and a byte every 8 s, for SECONDS;
prints how many the sheep closed (or answered) meanwhile."""
import socket
import struct
import sys
import time

MIB = 1 << 20
SRC = "127.0.0.2"  # another host's address, as an attacker's


def sd_header(oid, conn_id):
    # protocol.md §2: version, opcode (WRITE_OBJ), flags (WRITE), epoch,
    # id, data_length, then the object fields (oid first)
    h = struct.pack("<BBHIII", 0x02, 0x03, 0x0001, 0, 0x7e000000 + conn_id,
                    4 * MIB)
    h += struct.pack("<Q", oid)
    return h + bytes(48 - len(h))


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        got = s.recv(n - len(b))
        if not got:
            raise OSError("closed during the handshake")
        b += got
    return b


def nbd_open(s, name):
    # fixed newstyle: greeting, client flags (FIXED_NEWSTYLE|NO_ZEROES),
    # NBD_OPT_EXPORT_NAME, then the export's size and flags
    recv_exact(s, 18)
    s.sendall(struct.pack(">I", 3))
    n = name.encode()
    s.sendall(struct.pack(">QII", 0x49484156454f5054, 1, len(n)) + n)
    recv_exact(s, 10)
    # NBD_CMD_WRITE of 32 MiB at offset 0
    return struct.pack(">IHHQQI", 0x25609513, 0, 1, 1, 0, 32 * MIB)


def main():
    nbd = sys.argv[1] == "--nbd"
    args = sys.argv[2:] if nbd else sys.argv[1:]
    port, what, n, secs = (int(args[0]), args[1], int(args[2]),
                           float(args[3]))
    conns = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port),
                                     source_address=(SRC, 0))
        if nbd:
            s.sendall(nbd_open(s, "%s%d" % (what, i)) + bytes(4096))
        else:
            s.sendall(sd_header(int(what, 16), i) + bytes(4096))
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
