#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Write the seed corpora of tests/fuzz/corpus/<harness>/: small, valid
inputs in each harness's input format (see the comment at the top of each
fuzz_*.c).  The seeds of fuzz_dog_reply are made by running the harness:
it prints the requests dog sends (FUZZ_DOG_TRACE=1), and a response is
appended for each one until dog asks for nothing more; so build first:

    bash tests/fuzz/build.sh && python3 tests/fuzz/gen_corpus.py
"""
import os
import re
import shutil
import struct
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(TOP, "tests", "fuzz", "corpus")


def le(fmt, *v):
    return struct.pack("<" + fmt, *v)


def be(fmt, *v):
    return struct.pack(">" + fmt, *v)


def write(harness, name, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def opcodes():
    """every SD_OP_* of the protocol headers: {name: value}"""
    ops = {}
    for h in ("sheepdog_proto.h", "internal_proto.h"):
        with open(os.path.join(TOP, "include", h)) as f:
            for m in re.finditer(r"#define\s+SD_OP_(\w+)\s+(0x[0-9A-Fa-f]+)",
                                 f.read()):
                ops[m.group(1)] = int(m.group(2), 16)
    return ops


# ---- wire structures ----

def node(i, port=7000):
    nid = bytes(12) + bytes([127, 0, 0, i]) + le("H", port + i)
    nid += bytes(16) + le("H", 0) + bytes(4)
    return bytes(24) + nid + le("HHIQ", 128, 0, i, 1 << 40)


def cinfo(nodes, epoch=1, status=1, ctime=0x5f000000):
    h = struct.pack("<BBhIQHBBBB3s16s7s", 0x0a, 0, len(nodes), epoch, ctime,
                    4, 3, 0, status, 22, bytes(3), b"plain", bytes(7))
    return h + b"".join(nodes)


def epoch_log(epoch, nodes, slots=None):
    h = le("QQIIBBB3sH16s", 0x5f000000, 0x5f000100, epoch, len(nodes), 0, 3,
           0, bytes(3), 4, b"plain")
    body = b"".join(nodes)
    if slots is not None:
        body = body.ljust(slots * 80, b"\0")
    return h + body


def inode_header(name, vid, size=1 << 30, snap=0, parent=0, shift=22,
                 copies=3):
    h = name.encode().ljust(256, b"\0") + b"".ljust(256, b"\0")
    h += le("QQQQQ", 0x5f000000 << 32, snap, 0, size, 0)
    h += bytes([0, 0, copies, shift]) + le("IIII", 1 if snap else 0, vid,
                                            parent, 0)
    return h.ljust(4664, b"\0")


def vdi_state(vid, copies=3, locked=False):
    v = le("I", vid) + bytes([copies, 0, 0, 0, 22, 0, 0, 0]) + le("I", 0)
    v += le("I", 2 if locked else 1) + node(1)[24:64] + le("I", 0)
    return v.ljust(1428, b"\0")


def sd_req(opcode, flags=0, epoch=1, data_length=0, union=b""):
    return struct.pack("<BBHIII", 2, opcode, flags, epoch, 1,
                       data_length) + union.ljust(32, b"\0")


def sd_rsp(opcode, result=0, data_length=0, union=b"", epoch=1):
    return struct.pack("<BBHIII", 2, opcode, 0, epoch, 1, data_length) + \
        (le("I", result) + union).ljust(32, b"\0")


# ---- fuzz_request ----

def gen_request():
    oid = (0x7c2b25 << 32) | 3
    vdi_oid = (1 << 63) | (0x7c2b25 << 32)
    cluster = bytes([3, 22, 1, 0])
    vdis = le("HB", 0x2b25, 0x7c) + bytes([3, 0, 22, 0, 0])
    vdis += le("HB", 0x0001, 0x00) + bytes([2, 0, 20, 9, 0])
    payload = {"CREATE_AND_WRITE_OBJ", "WRITE_OBJ", "NEW_VDI", "LOCK_VDI",
               "GET_VDI_INFO", "DEL_VDI", "MAKE_FS", "SET_LOGLEVEL",
               "OIDS_EXIST", "GET_VDI_ATTR", "SET_RECOVERY",
               "CREATE_AND_WRITE_PEER", "WRITE_PEER"}
    for name, op in sorted(opcodes().items()):
        flags, dlen = 0, 512
        if name in payload:
            flags = 1
        if name in ("NEW_VDI", "GET_VDI_INFO", "LOCK_VDI", "DEL_VDI"):
            union = le("QIBBBBII", 1 << 32, 0, 3, 0, 0, 22, 0, 0)
        elif name in ("MAKE_FS", "ALTER_CLUSTER_COPY", "STAT_CLUSTER"):
            union = le("QQBBHIIB", 0, 0x5f000000, 3, 0, 0, 0, 3, 22)
            dlen = 6 if name == "MAKE_FS" else 0
        elif name in ("REPAIR_REPLICA",):
            union = le("Q", oid) + node(2)[24:42]
            dlen = 0
        elif name in ("DECREF_OBJ", "DECREF_PEER"):
            union = le("QII", oid, 1, 1)
            dlen = 0
        elif name in ("NOTIFY_VDI_ADD", "ALTER_VDI_COPY"):
            union = le("IIBBBB", 0, 0x7c2b25, 2, 1, 0, 22)
            dlen = 0
        else:
            union = le("QQBBBBIII", oid, 0, 3, 0, 0, 0, 0, 4096, 0)
        hdr = sd_req(op, flags, 1, dlen, union)
        write("request", "op-%02x-%s" % (op, name.lower()),
              hdr + cluster + vdis)
        if name.startswith("EC_"):
            # a strip of a 2:2 VDI, which the VDI record gives that code
            ec_vdi = le("HB", 0x2b25, 0x7c) + bytes([4, 0x12, 22, 0, 0])
            d = {"EC_PREPARE": 512, "EC_READ": 512,
                 "EC_STATE": 408}.get(name, 0)
            u = le("QQBBBBIII", oid, 5, 4, 0x12, 1, 0, 0, 1024, 0)
            write("request", "op-%02x-%s-strip" % (op, name.lower()),
                  sd_req(op, int(name == "EC_PREPARE"), 1, d, u) +
                  cluster + ec_vdi)
            if name in ("EC_STATE", "EC_READ"):
                # recovery's last pass: a stale copy may answer
                # (SD_FLAG_CMD_WILDCARD)
                write("request",
                      "op-%02x-%s-strip-wildcard" % (op, name.lower()),
                      sd_req(op, 0x0100, 1, d, u) + cluster + ec_vdi)
        if name in ("READ_OBJ", "WRITE_OBJ", "GET_HASH", "EXIST"):
            u = le("QQBBBBIII", vdi_oid, 0, 3, 0, 0, 0, 0, 4664, 0)
            write("request", "op-%02x-%s-inode" % (op, name.lower()),
                  sd_req(op, flags, 1, 4096, u) + cluster)
    write("request", "unknown-op", sd_req(0x7e) + cluster)


# ---- fuzz_nbd ----

OPTS = 0x49484156454f5054


def nbd_opt(opt, data=b""):
    return be("QII", OPTS, opt, len(data)) + data


def nbd_go(name, opt=7, infos=()):
    d = be("I", len(name)) + name + be("H", len(infos))
    return nbd_opt(opt, d + b"".join(be("H", i) for i in infos))


def nbd_cmd(typ, off=0, length=0, flags=0, handle=1, data=b""):
    return be("IHHQQI", 0x25609513, flags, typ, handle, off, length) + data


def gen_nbd():
    flags = be("I", 3)
    cmds = (nbd_cmd(0, 0, 512, handle=1) +
            nbd_cmd(1, 512, 512, data=b"\xab" * 512, handle=2) +
            nbd_cmd(1, 0, 4, 1, handle=3, data=b"abcd") +
            nbd_cmd(3, handle=4) + nbd_cmd(4, 0, 4096, handle=5) +
            nbd_cmd(6, 4096, 4096, 2, handle=6) + nbd_cmd(2))
    # export: open ok, size index 3 (4096) or 5 (1 MiB)
    ok4k, ok1m = 1 | (3 << 2), 1 | (5 << 2)
    seeds = {
        "go": (ok1m, 0, flags + nbd_go(b"vdi") + cmds),
        "go-later": (ok1m, 0x03, flags + nbd_go(b"vdi", infos=(3,)) + cmds),
        "go-fail": (5 << 5, 0, flags + nbd_go(b"missing") + nbd_go(b"vdi")),
        "go-ro": (ok4k | 2, 0, flags + nbd_go(b"vdi@1") + cmds),
        "export-name": (ok4k, 0, be("I", 1) + nbd_opt(1, b"vdi") + cmds),
        "export-name-fail": (0, 0, be("I", 1) + nbd_opt(1, b"vdi")),
        "info-then-go": (ok1m, 0x01, flags + nbd_go(b"vdi", 6) +
                         nbd_go(b"vdi") + cmds),
        "list": (ok1m, 0x08, flags + nbd_opt(3) + nbd_go(b"alpha") + cmds),
        "list-later": (ok1m, 0x18, flags + nbd_opt(3) + nbd_opt(3, b"x")),
        "abort": (ok1m, 0, flags + nbd_opt(2)),
        "unsupported": (ok1m, 0, flags + nbd_opt(8) + nbd_opt(0x1234, b"z")
                        + nbd_go(b"vdi") + cmds),
        "bad-cmds": (ok4k, 0x06, flags + nbd_go(b"vdi") +
                     nbd_cmd(0, 4000, 512) + nbd_cmd(1, 8192, 16,
                                                     data=b"x" * 16) +
                     nbd_cmd(9) + nbd_cmd(0, 0, 8, 0x80) + nbd_cmd(2)),
        "many-reads": (ok1m, 0x02, flags + nbd_go(b"vdi") +
                       b"".join(nbd_cmd(0, i * 4096, 4096, handle=i)
                                for i in range(80))),
        "timeout": (ok1m, 0x20, flags + nbd_opt(3)),
        "huge-export": (1 | (6 << 2), 0x06, flags + nbd_go(b"vdi") +
                        nbd_cmd(0, (1 << 64) - 8192, 4096) + nbd_cmd(2)),
    }
    for name, (a, b, stream) in seeds.items():
        write("nbd", name, bytes([a, b]) + stream)


# ---- fuzz_proto ----

def gen_proto():
    sizes = [48, 48, 80, 48, 48, 1428, 4664, 40, 24, 120, 24]
    for sel, size in enumerate(sizes):
        write("proto", "codec-%02d" % sel,
              bytes([sel]) + bytes((i * 7 + sel) & 0xff for i in range(size)))
    write("proto", "codec-req-vdi", bytes([0]) + sd_req(0x11, 1, 1, 512,
                                                        le("Q", 1 << 30)))
    write("proto", "codec-node", bytes([2]) + node(1))
    write("proto", "codec-cinfo", bytes([3]) + cinfo([])[:48])
    write("proto", "codec-vdi-state", bytes([5]) + vdi_state(0x7c2b25))
    write("proto", "codec-inode", bytes([6]) + inode_header("v", 0x7c2b25))
    write("proto", "nodes", bytes([176]) + node(1) + node(2) + node(3))
    write("proto", "le32", bytes([177]) + bytes(range(64)))
    write("proto", "le64", bytes([178]) + bytes(range(64)))
    write("proto", "inode-helpers", bytes([179, 3]) +
          le("QQIII", (1 << 63) | (5 << 32), 1 << 34, 7, 4664, 4096))


# ---- fuzz_backup ----

def crc32c(data, crc=0):
    crc ^= 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xffffffff


def backup(records, size=16 << 20, shift=22, frm=0, to=1, flags=0,
           nr=None, version=1):
    h = b"KELPBKP1" + le("IIQIII", version, flags, size, shift, frm, to)
    s = h + le("I", crc32c(h))
    for idx, off, data in records:
        s += le("IIII", idx, off, len(data), crc32c(data)) + data
    end = le("III", 0xffffffff, len(records) if nr is None else nr, 0)
    s += end
    return s + le("I", crc32c(s))


def sd_backup(records, version=1):
    """Sheepdog's stream (dog.md 2.15): no sizes, no checksums"""
    s = le("II", version, 0x11921192)
    for idx, off, data in records:
        s += le("IIII", idx, off, len(data), 0) + data
    return s + le("IIII", 0xffffffff, 0, 0, 0)


def gen_backup():
    recs = [(0, 0, b"\x11" * 512), (2, 4096, b"\x22" * 1024),
            (3, (4 << 20) - 512, b"\x33" * 512)]
    write("backup", "empty", bytes([0, 0]) + backup([]))
    write("backup", "three", bytes([0, 0]) + backup(recs))
    write("backup", "three-pipe", bytes([0x20, 0]) + backup(recs))
    write("backup", "with-current", bytes([0x82, 3]) + backup(recs))
    write("backup", "cur-no-parent", bytes([0x02, 1]) + backup(recs))
    write("backup", "shift-20", bytes([0, 2]) + backup(
        [(1, 0, b"a" * 100), (7, 1000, b"b" * 24)], size=8 << 20, shift=20))
    write("backup", "shift-differs", bytes([0x04, 0]) + backup(recs))
    write("backup", "no-snapshot", bytes([0x01, 0]) + backup(recs))
    write("backup", "new-fails", bytes([0x08, 0]) + backup(recs))
    write("backup", "writes-fail", bytes([0x10, 1]) + backup(recs))
    write("backup", "hyper", bytes([0x40, 0]) + backup(recs))
    write("backup", "del-fails", bytes([0x02, 0x11]) + backup(recs))
    write("backup", "bad-count", bytes([0, 0]) + backup(recs, nr=2))
    write("backup", "trailing", bytes([0, 0]) + backup(recs) + b"x")
    write("backup", "truncated", bytes([0, 0]) + backup(recs)[:-20])
    write("backup", "bad-version", bytes([0, 0]) + backup([], version=2))
    write("backup", "unordered", bytes([0, 0]) + backup(
        [(2, 0, b"x"), (1, 0, b"y")]))
    write("backup", "sheepdog-three", bytes([0, 0]) + sd_backup(recs))
    write("backup", "sheepdog-pipe", bytes([0x20, 0]) + sd_backup(recs))
    write("backup", "sheepdog-empty", bytes([0, 0]) + sd_backup([]))


# ---- fuzz_cluster_msg ----

def rec(typ, who_token, who_node, mver=0, payload=b"", bad=0, wflags=0):
    """wflags: 64 REC_F_MORE (a run goes on), 128 REC_F_RUNS (JOIN)"""
    return bytes([typ | bad, who_token | (who_node << 3) | wflags, mver]) + \
        le("H", len(payload)) + payload


def cmsg(opcode, seq=1, union=b"", data=b"", result=0, flags=0):
    req = sd_req(opcode, flags, 1, len(data), union)
    return le("II", seq, 0) + req + sd_rsp(opcode, result) + data


def gen_cluster_msg():
    JOIN, ACCEPT, LEAVE, NOTIFY, BLOCK, UNBLOCK = 1, 2, 3, 4, 5, 6
    ops = opcodes()
    me = cinfo([], epoch=0, status=2, ctime=0)
    fresh = cinfo([node(1)], epoch=1)
    two = cinfo([node(1), node(2)], epoch=2)
    joins = (rec(JOIN, 0, 0, 0, me) + rec(ACCEPT, 0, 0, 0, fresh) +
             rec(JOIN, 1, 1, 0, me) + rec(ACCEPT, 1, 1, 1, two))
    alter = cmsg(ops["ALTER_CLUSTER_COPY"], union=le("QQBB", 0, 0, 2, 0))
    mkfs = cmsg(ops["MAKE_FS"], union=le("QQBBHIIB", 0, 0x5f000000, 3, 0, 0,
                                          0, 0, 22), data=b"plain",
                flags=1)
    vcopy = cmsg(ops["ALTER_VDI_COPY"], union=le("IIBBBB", 0, 0x2b, 2, 0, 0,
                                                  22))
    peer = vdi_state(0x2b) + vdi_state(0x2c, locked=True)
    for mode in (0, 1, 5):
        pre = bytes([mode]) + le("H", 0)
        write("cluster_msg", "joins-%d" % mode, pre + joins)
        write("cluster_msg", "messages-%d" % mode, pre + joins +
              rec(NOTIFY, 1, 1, 0, alter) + rec(BLOCK, 0, 0) +
              rec(UNBLOCK, 0, 0, 0, mkfs) + rec(NOTIFY, 0, 0, 0, vcopy) +
              rec(LEAVE, 1, 1))
        write("cluster_msg", "dead-member-%d" % mode, pre + joins +
              rec(JOIN, 4, 4, 0, me) + rec(ACCEPT, 4, 4, 2, two) +
              rec(JOIN, 5, 5, 0, me))
        write("cluster_msg", "stale-%d" % mode, pre + joins +
              rec(ACCEPT, 1, 1, 7, two) + rec(LEAVE, 2, 2, 0, b"", 8) +
              rec(JOIN, 2, 2, 0, me) + rec(LEAVE, 2, 2, 0, b"", 8) +
              rec(7, 3, 3))
        # joins decided together: a run of ACCEPTs (MORE on all but the
        # last), then one whose first went stale (a member's LEAVE came
        # before it): its second, whose mver matches by then, must not count
        runs = (rec(JOIN, 0, 0, 0, me, 0, 128) +
                rec(ACCEPT, 0, 0, 0, fresh) +
                rec(JOIN, 1, 1, 0, me, 0, 128) +
                rec(JOIN, 2, 2, 0, me, 0, 128) +
                rec(ACCEPT, 1, 1, 1, two, 0, 64) + rec(ACCEPT, 2, 2, 2, two))
        write("cluster_msg", "accept-run-%d" % mode, pre + runs +
              rec(NOTIFY, 1, 1, 0, alter))
        write("cluster_msg", "accept-run-stale-%d" % mode, pre + runs +
              rec(JOIN, 3, 3, 0, me, 0, 128) +
              rec(JOIN, 4, 4, 0, me, 0, 128) + rec(LEAVE, 2, 2) +
              rec(ACCEPT, 3, 3, 3, two, 0, 64) + rec(ACCEPT, 4, 4, 4, two) +
              rec(ACCEPT, 3, 3, 4, two, 0, 64))
        write("cluster_msg", "corrupt-%d" % mode, pre + joins +
              rec(NOTIFY, 0, 0, 0, alter, 32) + rec(NOTIFY, 0, 0))
    write("cluster_msg", "peer-vdi-state", bytes([1]) + le("H", len(peer)) +
          peer + rec(JOIN, 1, 1, 0, two) + rec(ACCEPT, 1, 1, 0, two) +
          rec(JOIN, 0, 0, 0, me) + rec(ACCEPT, 0, 0, 1, two))
    epochs = le("Q", 0x5f000100) + node(1) + node(2)
    write("cluster_msg", "peer-epochs", bytes([1]) + le("H", len(epochs)) +
          epochs + rec(JOIN, 1, 1, 0, cinfo([node(2)], 5)) +
          rec(ACCEPT, 1, 1, 0, cinfo([node(2)], 5)) +
          rec(JOIN, 0, 0, 0, me) + rec(ACCEPT, 0, 0, 1, cinfo([node(2)], 5)))
    write("cluster_msg", "raw", bytes([2]) + le("H", 0) + b"KREC" +
          bytes(200))
    # peers answered inside peer_submit (bit 3), as a node that cannot be
    # reached is: the epoch fetch may end within its own submit (569af62
    # touched its freed state after it)
    write("cluster_msg", "at-once-joins", bytes([9]) + le("H", 0) + joins)
    write("cluster_msg", "at-once-peer-epochs", bytes([9]) +
          le("H", len(epochs)) + epochs +
          rec(JOIN, 1, 1, 0, cinfo([node(2)], 5)) +
          rec(ACCEPT, 1, 1, 0, cinfo([node(2)], 5)) +
          rec(JOIN, 0, 0, 0, me) + rec(ACCEPT, 0, 0, 1, cinfo([node(2)], 5)))


# ---- fuzz_dog_reply ----

DOG_COMMANDS = 25  # the length of commands[] in fuzz_dog_reply.c


def metrics_text():
    """a short reply of GET_METRICS: a sample of each shape dog reads"""
    lines = ["# HELP kelpie_requests_total Requests.",
             "# TYPE kelpie_requests_total counter",
             'kelpie_requests_total{class="client_write",result="ok"} 7']
    for le_, n in (("0.001", 3), ("0.01", 6), ("+Inf", 7)):
        lines.append('kelpie_request_duration_seconds_bucket{'
                     'class="client_write",le="%s"} %d' % (le_, n))
    lines += ['kelpie_request_duration_seconds_sum{class="client_write"} '
              '0.042',
              'kelpie_request_duration_seconds_count{class="client_write"} 7',
              'kelpie_requests_in_flight{side="client"} 1',
              'kelpie_errors_total{kind="checksum"} 2',
              'kelpie_budget_used_bytes 4096',
              'kelpie_cluster_epoch 3',
              'kelpie_cluster_status{status="ok"} 1',
              'kelpie_recovery_running 1',
              'kelpie_store_size_bytes{path="/s/\\"x\\"/obj"} 1e+12',
              'kelpie_store_free_bytes{path="/s/\\"x\\"/obj"} 5e+11',
              'kelpie_objects{path="/s/\\"x\\"/obj",kind="data"} 12',
              'kelpie_stale_objects 0',
              'kelpie_vdi_operations_total{vid="1f358",op="read"} 3',
              'kelpie_vdi_operations_total{vid="other",op="read"} 1']
    return ("\n".join(lines) + "\n").encode()


def dog_response(req, nth, cmd):
    """the response to request @req (48 bytes), the @nth one of @cmd"""
    op = req[1]
    dlen = struct.unpack_from("<I", req, 12)[0]
    oid = struct.unpack_from("<Q", req, 16)[0]
    off = struct.unpack_from("<I", req, 40)[0]
    nodes = [node(1), node(2), node(3)]
    if op == 0x82:          # GET_NODE_LIST
        return sd_rsp(op, 0, 240, le("I", 3) + bytes(8) +
                      le("QQ", 1 << 40, 1 << 39), epoch=2) + b"".join(nodes)
    if op == 0x87:          # STAT_CLUSTER
        slots = struct.unpack_from("<I", req, 40)[0]
        body = epoch_log(2, nodes, slots) + epoch_log(1, nodes[:2], slots)
        body = body[:dlen]
        return sd_rsp(op, 0, len(body)) + body
    if op == 0x86:          # STAT_SHEEP
        return sd_rsp(op, 0, 0, le("I", 3) + bytes(8) +
                      le("QQ", 1 << 40, 1 << 38))
    if op in (0x15, 0xc9):  # READ_VDIS, READ_DEL_VDIS
        bm = bytearray(16)
        if op == 0x15:
            bm[0] = 0x06    # vids 1 and 2
        return sd_rsp(op, 0, len(bm)) + bytes(bm)
    if op == 0x14:          # GET_VDI_INFO
        return sd_rsp(op, 0, 0, le("III", 0, 1, 0))
    if op == 0x89:          # GET_VDI_ATTR
        return sd_rsp(op, 0, 0, le("III", 0, 1, 5))
    if op == 0x02:          # READ_OBJ
        if oid >> 63 and off == 0:
            vid = (oid >> 32) & 0xffffff
            h = inode_header("fuzz" if vid == 1 else "snap", vid,
                             size=16 << 20, snap=vid - 1, parent=vid - 1)
            data = (h + bytes(8))[:dlen]
        elif oid >> 63:
            data = b"".join(le("I", 1 if i % 2 else 0)
                            for i in range(dlen // 4))
        elif (oid >> 61) & 1:   # attribute object
            data = b"key".ljust(256, b"\0") + le("I", 5) + b"value"
            data = data[:dlen]
        else:
            data = bytes((i * 13) & 0xff for i in range(min(dlen, 4096)))
        return sd_rsp(op, 0, len(data)) + data
    if op == 0x97:          # STAT_RECOVERY
        return sd_rsp(op, 0, 24) + le("B3sIQQ", 1, bytes(3), 1, 10, 100)
    if op == 0xca:          # GET_RECOVERY
        return sd_rsp(op, 0, 24) + le("IIQB7s", 10, 0, 100, 1, bytes(7))
    if op == 0xb8:          # STAT
        return sd_rsp(op, 0, 120) + le("15Q", *range(1, 16))
    if op == 0xe5:          # GET_METRICS
        body = metrics_text()[:dlen]
        return sd_rsp(op, 0, len(body)) + body
    if op == 0xb9:          # GET_LOGLEVEL
        return sd_rsp(op, 0, 4) + le("I", 6)
    if op == 0xab:          # GET_VDI_COPIES
        body = vdi_state(1, locked=True) + vdi_state(2)
        return sd_rsp(op, 0, len(body)) + body
    if op == 0xa2:          # GET_EPOCH
        body = le("Q", 0x5f000100) + b"".join(nodes)
        return sd_rsp(op, 0, len(body)) + body
    return sd_rsp(op, 0, 0)


def dog_trace(data):
    binary = os.path.join(TOP, "build", "fuzz", "fuzz_dog_reply")
    tmp = os.path.join(CORPUS, ".trace-input")
    with open(tmp, "wb") as f:
        f.write(data)
    env = dict(os.environ, FUZZ_DOG_TRACE="1")
    p = subprocess.run([binary, "-runs=1", tmp], env=env,
                       capture_output=True)
    os.unlink(tmp)
    reqs, want_payload = [], 0
    for line in p.stderr.decode(errors="replace").splitlines():
        m = re.match(r"SEND (\d+) ([0-9a-f]*)$", line)
        if not m:
            continue
        n, hexdata = int(m.group(1)), bytes.fromhex(m.group(2))
        if want_payload:
            want_payload = 0
            continue
        if n == 48:
            reqs.append(hexdata)
            flags, dlen = struct.unpack_from("<H", hexdata, 2)[0], \
                struct.unpack_from("<I", hexdata, 12)[0]
            want_payload = (flags & 1) and dlen
    return reqs


def gen_dog_reply():
    if not os.access(os.path.join(TOP, "build", "fuzz", "fuzz_dog_reply"),
                     os.X_OK):
        sys.exit("build fuzz_dog_reply first (bash tests/fuzz/build.sh)")
    for cmd in range(DOG_COMMANDS):
        data = bytes([cmd])
        for nth in range(64):
            reqs = dog_trace(data)
            if len(reqs) <= nth:
                break
            data += dog_response(reqs[nth], nth, cmd)
        write("dog_reply", "cmd-%02d" % cmd, data)
    inode = inode_header("dumped", 5, size=8 << 20)
    inode += b"".join(le("I", 5 if i < 2 else 0) for i in range(16))
    write("dog_reply", "dump-inode-file", bytes([DOG_COMMANDS - 1]) + inode)


# ---- fuzz_snapshot ----

def gen_snapshot():
    """a snapshot log with records, a trunk naming an inode, the inode"""
    hdr = le("II", 0xfee1c001, 1) + bytes([3, 0, 22]) + bytes(21)
    recs = b""
    for i, tag in ((1, b"t"), (2, b"second")):
        recs += le("I", i) + tag.ljust(256, b"\0") + le("Q", 1764547200) + \
            bytes(20)
    log = hdr + recs
    inode = inode_header("saved", 0x7c2b25, size=8 << 20, snap=1)
    ent = le("QBBBBI", (1 << 63) | (0x7c2b25 << 32), 3, 0, 22, 0,
             len(inode)) + bytes(20) + le("I", 0)
    trunk = b"KFTRUNK1" + le("Q", 1) + ent
    for cmd in range(4):
        write("snapshot", "cmd-%d" % cmd, bytes([cmd]) + le("H", len(log)) +
              log + le("H", len(trunk)) + trunk + inode)
    write("snapshot", "no-records", bytes([1]) + le("H", len(hdr)) + hdr)
    write("snapshot", "not-a-trunk", bytes([1]) + le("H", len(log)) + log +
          le("H", 8) + b"KFTRUNK0")


# ---- fuzz_procgroup ----

def gen_procgroup():
    """
    operation streams (fuzz_procgroup.c): a founder alone; a joiner of
    three members that are decided for by a member; a member that blocks
    """
    loop = bytes([0x03])
    # who 0; confchg members [0] joined [0]; our JOIN, ACCEPT go round
    founder = bytes([0]) + bytes([0x00, 1, 0x00, 0, 1, 0x00]) + loop * 3
    write("procgroup", "founder", founder)
    # we are 2; members 0, 1 before us; 0 accepts us with a snapshot
    joiner = bytes([2]) + bytes([0x00, 3, 0x00, 0x01, 0x02, 0, 1, 0x02])
    accept = bytes([0x02, 1, 2, 2, 0, 0, 8, 0x10, 0x11]) + bytes(8)
    write("procgroup", "joiner", joiner + loop + accept + loop)
    # the founder notifies, blocks, unblocks and leaves
    ops = bytes([0x04 | 8, 0x04 | 1 << 3 | 0, 0x05, 0x04 | 2 << 3,
                 0x04 | 3 << 3])
    write("procgroup", "member-ops", founder + ops + loop * 4)
    # the founder blocks, then leaves before its block comes round: it
    # must not be granted (seen once in tests/zookeeper/driver.sh)
    write("procgroup", "leave-with-block",
          founder + bytes([0x04 | 1 << 3, 0x04 | 3 << 3]) + loop * 3)
    # an ACCEPT_SET that reaches decide_set and apply_set (found by hand
    # with llvm-cov, f774d60)
    write("procgroup", "accept-set", bytes.fromhex(
        "00000100000100030300040001020300030102030a01090000000112011200"
        "0000011a011b00000001030305"))


def gen_zk_event():
    """
    operation streams (fuzz_zk_event.c): a queue round of JOINs and a
    message, delivered; the procs list; our own JOIN found; a malformed
    event among good ones
    """
    def child(seq, kind, sender, counter, payload=b""):
        # name "e-<seq>", a well-formed event
        return (bytes([0x01]) + struct.pack("<H", seq) +
                bytes([kind - 1, sender, counter, len(payload)]) + payload)

    def raw_child(seq, data):
        return bytes([0x03]) + struct.pack("<H", seq) + \
            struct.pack("<H", len(data)) + data

    ev_round = bytes([0x00, 3]) + child(1, 1, 3, 0) + child(2, 1, 5, 0) + \
        child(3, 3, 5, 1, b"ping")
    write("zk_event", "joins-and-message", ev_round + bytes([0x02]))
    procs = struct.pack("<II", 0x31505a4b, 2) + struct.pack("<QQ", 3, 5)
    write("zk_event", "procs",
          bytes([0x01]) + struct.pack("<H", len(procs)) + procs)
    write("zk_event", "find-my-join",
          bytes([0x03, 2]) + child(7, 1, 5, 0) + child(8, 1, 3, 0))
    # three join, then two of them leave in one LEFT_SET (kind 4: n, ids)
    left_set = bytes([0x01]) + struct.pack("<H", 4) + bytes([3, 1, 3, 5])
    write("zk_event", "left-set",
          bytes([0x00, 4]) + child(1, 1, 3, 0) + child(2, 1, 5, 0) +
          child(3, 1, 7, 0) + left_set + bytes([0x02]))
    bad = struct.pack("<IBBBBQQ", 0x31515a4b, 9, 0, 0, 0, 5, 1)
    write("zk_event", "malformed",
          bytes([0x00, 3]) + child(1, 1, 5, 0) + raw_child(2, bad) +
          raw_child(3, b"KZQ") + bytes([0x02]))


def gen_btree():
    """fuzz_btree: a root, leaf objects, then operations"""
    magic = 0x6274
    vid = 0x123456
    leaf_max = (4 << 20) // 8 - 1

    def hdr(depth, n):
        return le("HHI", magic, depth, n)

    def leaf(entries):
        return hdr(1, len(entries)) + b"".join(le("II", i, v)
                                               for i, v in entries)

    def two_level(keys):
        return hdr(2, len(keys)) + b"".join(
            le("IIQ", k, 0, (1 << 60) | (vid << 32) | n)
            for n, k in enumerate(keys))

    def blob(b):
        return le("H", len(b)) + b

    def lookup(i):
        return bytes([0]) + le("I", i)

    def setv(i, v):
        return bytes([1]) + le("II", i, v)

    walk, leaves = bytes([2]), bytes([3])
    ops = setv(5, 7) + lookup(5) + setv(5, 8) + lookup(4) + walk + leaves
    write("btree", "empty", blob(hdr(1, 0)) + bytes([0]) + ops)
    write("btree", "leaf-root",
          blob(leaf([(1, 3), (9, 3), (100, 4)])) + bytes([0]) + ops +
          setv(50, 1) + setv(0, 2) + walk)
    write("btree", "two-level",
          blob(two_level([10, 1000])) + bytes([2]) +
          blob(leaf([(2, 1), (10, 1)])) + blob(leaf([(11, 2), (900, 2)])) +
          ops + setv(11, 9) + setv(2000, 3) + lookup(2000) + lookup(900) +
          walk + leaves)
    # counts that claim a full node: the split paths
    write("btree", "full-root",
          blob(hdr(1, leaf_max)) + bytes([0]) + setv(7, 1) + walk)
    write("btree", "full-leaf",
          blob(two_level([5000])) + bytes([1]) + blob(hdr(1, leaf_max)) +
          setv(17, 1) + setv(18, 2) + walk + leaves)



def gen_http():
    """fuzz_http: a flags byte, then a request (head and body)"""
    sig = b"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
    auth = (b"Authorization: AWS4-HMAC-SHA256 Credential=AKID/20261205/"
            b"us-east-1/s3/aws4_request, SignedHeaders=host;"
            b"x-amz-content-sha256;x-amz-date, Signature=" + sig + b"\r\n")
    write("http", "get", b"\x00GET /b/k?list-type=2&prefix=a%2F HTTP/1.1\r\n"
          b"Host: node1:7480\r\nX-Amz-Date: 20261205T131209Z\r\n"
          b"X-Amz-Content-SHA256: UNSIGNED-PAYLOAD\r\n" + auth + b"\r\n")
    write("http", "presigned", b"\x00GET /b/k?X-Amz-Algorithm=AWS4-HMAC-"
          b"SHA256&X-Amz-Credential=AKID%2F20261205%2Fkelpie%2Fs3%2F"
          b"aws4_request&X-Amz-Date=20261205T131209Z&X-Amz-Expires=60&"
          b"X-Amz-SignedHeaders=host&X-Amz-Signature=" + sig +
          b" HTTP/1.1\r\nHost: h\r\n\r\n")
    write("http", "chunked", b"\x06PUT /b/k HTTP/1.1\r\nHost: h\r\n"
          b"Transfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n"
          b"0\r\nX-T: 1\r\n\r\n")
    write("http", "aws-chunked", b"\x03PUT /b/k HTTP/1.1\r\nHost: h\r\n"
          b"Content-Encoding: aws-chunked\r\nTransfer-Encoding: chunked\r\n"
          b"\r\n5;chunk-signature=" + sig + b"\r\nhello\r\n"
          b"0;chunk-signature=" + sig + b"\r\n\r\n")
    write("http", "put-length", b"\x00PUT /b/k HTTP/1.0\r\n"
          b"Content-Length: 5\r\nExpect: 100-continue\r\n"
          b"Connection: keep-alive\r\n\r\nhello")
    write("http", "range", b"\x00GET /b%2Dx/sp%20ace/%C3%A9?x-id=GetObject&"
          b"a+b=c+d&flag HTTP/1.1\r\nHost: h\r\nRange: bytes=100-199\r\n"
          b"\r\n")
    write("http", "complete", b"\x00POST /b/k?uploadId=0123 HTTP/1.1\r\n"
          b"Host: h\r\nContent-Length: 200\r\n\r\n"
          b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
          b"<ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag></Part>"
          b"<Part><ETag>\"0123456789ABCDEF0123456789abcdef\"</ETag>"
          b"<PartNumber>2</PartNumber></Part></CompleteMultipartUpload>")
    write("http", "range-suffix", b"\x00GET /b/k HTTP/1.1\r\nHost: h\r\n"
          b"Range: bytes=-10\r\n\r\n")
    write("http", "sigv2", b"\x00PUT /b/k%20x?partNumber=2&uploadId=u%2F1&"
          b"foo HTTP/1.1\r\nHost: b.s3.test\r\nDate: Tue, 27 Mar 2007 "
          b"19:36:42 +0000\r\nContent-MD5: abc\r\nx-amz-meta-a:  1 \r\n"
          b"X-Amz-Meta-A: 2\r\nAuthorization: AWS AKIAIOSFODNN7EXAMPLE:"
          b"qgk2+6Sv9/oM7G3qLEjTH1a1l1g=\r\n\r\n")
    write("http", "complete-sums", b' POST /b/k?uploadId=0123 HTTP/1.1\r\n'
          b'Host: h\r\n'
          b'Content-Length: 230\r\n'
          b'\r\n'
          b'<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ET'
          b'ag>"0123456789abcdef0123456789abcdef"</ETag><ChecksumCRC32C>'
          b'4waSgw==</ChecksumCRC32C></Part><Part><ChecksumSHA256>FeKw08'
          b'M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=</ChecksumSHA256><Part'
          b'Number>2</PartNumber><ETag>0123456789abcdef0123456789abcdef<'
          b'/ETag></Part></CompleteMultipartUpload>')
    write("http", "delete", b' POST /b?delete HTTP/1.1\r\n'
          b'Host: h\r\n'
          b'Content-Length: 190\r\n'
          b'\r\n'
          b'<Delete xmlns="x"><Quiet>true</Quiet><Object><Key>a&amp;b&#x'
          b'41;&#233;</Key></Object><Object><Key>c</Key><VersionId>null<'
          b'/VersionId></Object><Object><Key>&lt;d&gt;</Key></Object></D'
          b'elete>')
    write("http", "unsigned-trailer", b'\x06PUT /b/k HTTP/1.1\r\n'
          b'Host: h\r\n'
          b'x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\r\n'
          b'Content-Encoding: aws-chunked\r\n'
          b'x-amz-trailer: x-amz-checksum-crc32\r\n'
          b'Transfer-Encoding: chunked\r\n'
          b'\r\n'
          b'5\r\n'
          b'hello\r\n'
          b'0\r\n'
          b'x-amz-checksum-crc32:NhCmhg==\r\n'
          b'\r\n')


def gen_kvtree():
    """fuzz_kvtree: 512-byte pages; the harness fixes up the CRCs"""
    page = 512

    def pad(b):
        return b + bytes(page - len(b))

    def sb(seq, root, next_page, level):
        return pad(le("IIIIQQQH", 0x5354564b, 0, 0, 0, seq, root,
                      next_page, level))

    def leaf(entries):
        body = b"".join(le("HH", len(k), len(v)) + k + v for k, v in entries)
        return pad(le("IHHII", 0x3154564b, 0, len(entries), 0, len(body)) +
                   body)

    def internal(level, child0, seps):
        body = le("Q", child0) + b"".join(le("H", len(k)) + k + le("Q", c)
                                          for k, c in seps)
        return pad(le("IHHII", 0x3154564b, level, len(seps), 0, len(body)) +
                   body)

    zero = bytes(page)
    one = leaf([(b"a", b"1"), (b"b", b"22"), (b"k\x05", b"")])
    write("kvtree", "empty", b"")
    write("kvtree", "one-leaf", zero + sb(1, 2, 3, 0) + one)
    def free_list(pages, nxt=0):
        body = b"".join(le("Q", p) for p in pages)
        return pad(le("IIIIQ", 0x4654564b, 0, 0, len(pages), nxt) + body)

    def sb_free(seq, root, next_page, level, head, nr):
        return pad(le("IIIIQQQHHIQQ", 0x5354564b, 0, 0, 0, seq, root,
                      next_page, level, 0, 0, head, nr))

    write("kvtree", "free-list", zero + sb_free(3, 2, 5, 0, 4, 1) + one +
          zero + free_list([3]))
    write("kvtree", "two-levels",
          sb(2, 3, 5, 1) + sb(1, 2, 3, 0) + one +
          internal(1, 2, [(b"m", 4)]) +
          leaf([(b"m", b"x"), (b"zz", b"y" * 40)]))

def main():
    for h in ("request", "nbd", "proto", "backup", "cluster_msg",
              "dog_reply", "snapshot", "procgroup", "zk_event", "btree",
              "http", "kvtree"):
        shutil.rmtree(os.path.join(CORPUS, h), ignore_errors=True)
    gen_request()
    gen_nbd()
    gen_proto()
    gen_backup()
    gen_cluster_msg()
    gen_dog_reply()
    gen_snapshot()
    gen_procgroup()
    gen_zk_event()
    gen_btree()
    gen_http()
    gen_kvtree()
    for h in sorted(os.listdir(CORPUS)):
        print("%-12s %3d seeds" % (h, len(os.listdir(os.path.join(CORPUS,
                                                                   h)))))


if __name__ == "__main__":
    main()
