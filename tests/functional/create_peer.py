#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Send CREATE_AND_WRITE_PEER requests to a sheep, as a gateway would.

create_peer.py PORT EPOCH COPIES OID=FILE...: for each, the whole object
OID (hex) created with the bytes of FILE, at offset 0, in EPOCH; prints
"OID result N" per object (0 is success)."""
import socket
import struct
import sys

SD_SHEEP_PROTO_VER = 0x0a
SD_OP_CREATE_AND_WRITE_PEER = 0xA3
SD_FLAG_CMD_WRITE = 0x0001


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        got = s.recv(n - len(b))
        if not got:
            raise OSError("closed")
        b += got
    return b


def main():
    port, epoch, copies = (int(sys.argv[1]), int(sys.argv[2]),
                           int(sys.argv[3]))
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    for i, arg in enumerate(sys.argv[4:]):
        oid, path = arg.split("=", 1)
        data = open(path, "rb").read()
        # protocol.md §2: the header, then the object request: oid,
        # cow_oid, copies, copy_policy, ec_index, reserved, tgt_epoch,
        # offset
        h = struct.pack("<BBHIII", SD_SHEEP_PROTO_VER,
                        SD_OP_CREATE_AND_WRITE_PEER, SD_FLAG_CMD_WRITE,
                        epoch, i + 1, len(data))
        h += struct.pack("<QQBBBBII", int(oid, 16), 0, copies, 0, 0, 0, 0,
                         0)
        h += bytes(48 - len(h))
        s.sendall(h + data)
        rsp = recv_exact(s, 48)
        dlen = struct.unpack_from("<I", rsp, 12)[0]
        recv_exact(s, dlen)
        print("%s result %d" % (oid, struct.unpack_from("<I", rsp, 16)[0]))


main()
