#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A protocol WRITE_OBJ sent across a stop of the sheep.

across_stop.py PORT OID: a WRITE_OBJ of 64 KiB of 0x5b at offset 0 of
object OID (hex), sent in three parts: 1 KiB, "begun" on stdout, then (the
test stops the sheep 2 s later, for 32 s) 1 KiB 4 s later and the rest 40 s
later.  Prints whether the sheep answered it, and its result."""
import socket
import struct
import sys
import time

LEN = 64 << 10


def main():
    port, oid = int(sys.argv[1]), int(sys.argv[2], 16)
    # protocol.md §2: version, opcode (WRITE_OBJ), flags (WRITE), epoch,
    # id, data_length, then the object request (oid first, offset 0)
    h = struct.pack("<BBHIII", 0x02, 0x03, 0x0001, 0, 1, LEN)
    h += struct.pack("<Q", oid)
    h += bytes(48 - len(h))
    data = b"\x5b" * LEN
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(h + data[:1024])
    print("begun", flush=True)
    time.sleep(4)
    s.sendall(data[1024:2048])
    time.sleep(36)
    try:
        s.sendall(data[2048:])
        s.settimeout(10)
        rsp = b""
        while len(rsp) < 48:
            got = s.recv(48 - len(rsp))
            if not got:
                break
            rsp += got
    except OSError:
        rsp = b""
    what = ("answered, result %d" % struct.unpack_from("<I", rsp, 16)[0]
            if len(rsp) == 48 else "closed")
    print("a protocol WRITE sent across 32 s of the sheep stopped: " + what)


main()
