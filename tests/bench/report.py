#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Results of Kelpie's benchmarks (tests/bench/run): record and render.

    report.py add RESULTS --meta K=V...
                 (--dog FILE | --fio FILE | --qimg FILE | --fail)
                 [--cpu SECONDS]
        append one run, normalised, to RESULTS (JSON lines)
    report.py scale RESULTS --meta K=V... --dog FILE... [--cpu SECONDS]
        append one scaling run: the sum of several concurrent clients
    report.py space RESULTS --meta K=V... --vdi BYTES --allocated BYTES
                 --apparent BYTES [--ok 0|1]
        append what a filled VDI takes on disk: the bytes allocated (and
        their apparent size) in every node's store over the VDI's size
    report.py verify RESULTS --meta K=V... (--ok 0|1 [--blocks N] |
                 --dog FILE)
        append the outcome of a data verification (with --blocks, the
        blocks it read back and checked; with --dog, of a read-back by
        dog benchmark io: its blocks checked and errors)
    report.py render RESULTS --md FILE --json FILE [--check] [--header TEXT]
        print the Markdown tables (also written to --md), write every run
        and the tables as JSON; with --check exit 1 unless every run
        produced numbers and every verification passed

A run's record: section, table, client, target, nodes, copies, nosync,
baseline, ops, seconds, iops, mbps, lat_us {p50, p99, p99.9}, cpu_s,
errors, verify_errors, verified_blocks, ok; on a cluster formatted
with an erasure code also code ("D:P", with copies D+P); in the journal
section also journal ("none" or the size given to sheep -j), in the
transport section transport ("tcp" or "rdma") and rdma ("device" or
"emulation"); in the direct section direct ("off", or "on" for sheep -D);
the rows of the Ceph RBD baseline are client "fio-rbd", target "ceph",
with osds (and copies 3, nodes 1: one host).  A space record: section
"space", nodes, copies, code, vdi_bytes, allocated_bytes, apparent_bytes,
ratio (allocated over vdi_bytes), ok.  Ratios are throughput (IOPS) over
the throughput of the baseline row of the same table and client (for
fio-rbd, of fio's: qemu-nbd); in the journal table, with -j over
without; in the transport table, RDMA over TCP; in the direct table, -D
over the page cache.
"""
import argparse
import json
import re
import sys

TABLES = [
    # (key, title, latency-oriented)
    ("randwrite-4k-qd1", "4 KiB random write, queue depth 1", True),
    ("randread-4k-qd1", "4 KiB random read, queue depth 1", True),
    ("randwrite-4k-qd32", "4 KiB random write, queue depth 32", False),
    ("randread-4k-qd32", "4 KiB random read, queue depth 32", False),
    ("randwrite-4k-qd32-flush32",
     "4 KiB random write, queue depth 32, writeback + flush every 32 "
     "writes", False),
    ("randwrite-4k-qd1-flush",
     "4 KiB random write + flush after every write, queue depth 1", True),
    ("randwrite-4k-qd1-durable",
     "4 KiB random durable write (no cache flag), queue depth 1", True),
    ("seqwrite-1m-qd4", "1 MiB sequential write, queue depth 4", False),
    ("seqread-1m-qd4", "1 MiB sequential read, queue depth 4", False),
    ("seqwrite-4m-qd4", "4 MiB sequential write, queue depth 4", False),
    ("seqread-4m-qd4", "4 MiB sequential read, queue depth 4", False),
]
TITLE = {k: t for k, t, _ in TABLES}
# the rows of the journal section (tests/bench/run: JOURNAL_DOG,
# JOURNAL_FIO), in the order of its table
JOURNAL_TABLES = [
    ("randwrite-4k-qd1-durable", "4 KiB durable random write, QD1"),
    ("randwrite-4k-qd32-durable", "4 KiB durable random write, QD32"),
    ("randwrite-4k-qd1-flush", "4 KiB random write + flush, QD1"),
    ("randwrite-4k-qd32-flush32",
     "4 KiB random write, QD32, flush every 32"),
    ("randwrite-4k-qd1", "4 KiB random write (cached), QD1"),
    ("randwrite-4k-qd32", "4 KiB random write (cached), QD32"),
]
# the rows of the transport section (tests/bench/run: TRANSPORT_DOG)
TRANSPORT_TABLES = [
    ("randwrite-4k-qd1", "4 KiB random write, QD1"),
    ("randwrite-4k-qd32", "4 KiB random write, QD32"),
    ("seqwrite-4m-qd4", "4 MiB sequential write, QD4"),
    ("randread-4k-qd1", "4 KiB random read, QD1"),
    ("seqread-4m-qd4", "4 MiB sequential read, QD4"),
]
# the rows of the direct section (tests/bench/run: DIRECT_FIO)
DIRECT_TABLES = [
    ("randwrite-4k-qd32", "4 KiB random write (cached), QD32"),
    ("randwrite-4k-qd1-flush", "4 KiB random write + flush, QD1"),
    ("seqwrite-4m-qd4", "4 MiB sequential write, QD4"),
    ("seqwrite-1m-qd4", "1 MiB sequential write, QD4"),
    ("randread-4k-qd32", "4 KiB random read, QD32"),
    ("seqread-4m-qd4", "4 MiB sequential read, QD4"),
]
CLIENT_NAME = {"fio": "fio (NBD)", "fio-rbd": "fio (RBD)",
               "qemu": "qemu-img bench",
               "qemu-orig": "qemu-img bench, QEMU 5.2 original driver",
               "dog": "dog benchmark"}
# the clients of the workload tables, in their order
CLIENTS = ("fio", "fio-rbd", "qemu", "qemu-orig", "dog")
# a client whose rows are compared with the baseline of another: fio's
# rbd engine on Ceph is a second baseline of fio, its ratio over qemu-nbd
BASE_CLIENT = {"fio-rbd": "fio"}
LEGEND = (
    "IOPS: operations per second (in flush rows a write and its flush "
    "count as one operation). MB/s: 10^6 bytes per second. Latency: from "
    "submission to completion, in µs; fio reports a write and its flush "
    "separately, so its flush rows show the sum of both percentiles (an "
    "upper estimate). CPU s/1k ops: CPU seconds used by all sheep "
    "processes (by qemu-nbd for its rows, by every ceph-mon, ceph-mgr and "
    "ceph-osd for Ceph's) per 1,000 operations. "
    "qemu-img bench (Kelpie's patched QEMU, sheepdog driver, cache="
    "writeback) reports no latencies, and its baseline (a raw file) has no "
    "server: the CPU of that row is qemu-img's own; its 4 KiB requests step "
    "through the image by 1 MiB + 4 KiB instead of random offsets; the "
    "rows of QEMU 5.2's original driver (the client of existing Sheepdog "
    "users) have QEMU 5.2's qemu-img on the raw file as their baseline. "
    "fio (RBD): fio's rbd engine (librbd, rbd cache off) on Ceph from "
    "Debian's packages on this host, 3 bluestore OSDs on files, 3 copies: "
    "a second baseline for fio; every write it acknowledges is on all "
    "three copies, so a flush adds little. "
    "× baseline: IOPS over the IOPS of the baseline row of the same "
    "client (for fio (RBD): of qemu-nbd, fio's). Targets: kelpie Nn/Cc = "
    "N nodes, C copies; kelpie Nn/D:P = N nodes, an erasure code of D "
    "data and P parity strips; -n = sheep started with -n (no sync).")


def parse_meta(items):
    meta = {}
    for item in items:
        k, _, v = item.partition("=")
        if v in ("true", "false"):
            meta[k] = v == "true"
        else:
            try:
                meta[k] = int(v)
            except ValueError:
                try:
                    meta[k] = float(v)
                except ValueError:
                    meta[k] = v
    return meta


def from_dog(path):
    with open(path) as f:
        line = [l for l in f if l.startswith("{")][-1]
    d = json.loads(line)
    lat = d["lat_us"]
    return {
        "ops": d["ops"], "seconds": d["seconds"], "iops": d["iops"],
        "mbps": d["mbps"], "errors": d["errors"],
        "lat_us": {"p50": lat["p50"], "p99": lat["p99"],
                   "p99.9": lat["p99.9"]},
        "verify_errors": d["verify_errors"],
        "verified_blocks": d["verified_blocks"],
    }


def fio_pct(lat, p):
    for k, v in lat.get("percentile", {}).items():
        if abs(float(k) - p) < 1e-6:
            return v / 1000.0
    return 0.0


def from_fio(path):
    with open(path) as f:
        text = f.read()
    # fio may print lines before the JSON document
    d = json.loads(text[text.index("{"):])
    j = d["jobs"][0]
    rw = j["write"] if j["write"]["total_ios"] else j["read"]
    secs = rw["runtime"] / 1000.0
    lat = {p: fio_pct(rw["lat_ns"], v)
           for p, v in (("p50", 50), ("p99", 99), ("p99.9", 99.9))}
    sync = j.get("sync", {})
    if sync.get("total_ios", 0) * 2 > rw["total_ios"]:
        # a flush follows every write: add the flush latencies (an upper
        # estimate of the percentiles of their sum)
        for p, v in (("p50", 50), ("p99", 99), ("p99.9", 99.9)):
            lat[p] += fio_pct(sync["lat_ns"], v)
    return {
        "ops": rw["total_ios"], "seconds": secs, "iops": rw["iops"],
        "mbps": rw["io_bytes"] / secs / 1e6 if secs else 0.0,
        "errors": j.get("error", 0), "lat_us": lat,
        "verify_errors": 0, "verified_blocks": 0,
    }


def from_qimg(path):
    """qemu-img bench prints the requests it sends and the elapsed time,
    no latencies"""
    ops = size = secs = None
    with open(path) as f:
        for line in f:
            m = re.match(r"Sending (\d+) (?:read|write) requests, "
                         r"(\d+) bytes each", line)
            if m:
                ops, size = int(m.group(1)), int(m.group(2))
            m = re.match(r"Run completed in ([0-9.]+) seconds", line)
            if m:
                secs = float(m.group(1))
    if ops is None or not secs:
        raise ValueError("qemu-img bench did not complete")
    return {
        "ops": ops, "seconds": secs, "iops": ops / secs,
        "mbps": ops * size / secs / 1e6, "errors": 0, "lat_us": {},
        "verify_errors": 0, "verified_blocks": 0,
    }


def append(path, rec):
    with open(path, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")
    # one line of progress
    if not rec.get("ok"):
        print("  FAILED: %s" % rec.get("error", "errors or bad data"),
              file=sys.stderr)
    elif "iops" in rec:
        lat = rec.get("lat_us")
        print("  %.0f IOPS" % rec["iops"] +
              (", %.1f MB/s" % rec["mbps"] if "mbps" in rec else "") +
              (", p50 %.0f us, p99 %.0f us" % (lat["p50"], lat["p99"])
               if lat else ""), file=sys.stderr)


def cmd_add(a):
    rec = parse_meta(a.meta)
    try:
        if a.fail:
            raise ValueError("the run failed")
        if a.dog:
            rec.update(from_dog(a.dog))
        elif a.qimg:
            rec.update(from_qimg(a.qimg))
        else:
            rec.update(from_fio(a.fio))
        rec["ok"] = (rec["ops"] > 0 and not rec["errors"] and
                     not rec["verify_errors"] and not rec.get("rc"))
    except (OSError, ValueError, KeyError, IndexError) as e:
        rec.update({"ops": 0, "ok": False, "error": str(e)})
    if a.cpu is not None and rec.get("ops"):
        rec["cpu_s"] = a.cpu
    append(a.results, rec)
    return 0


def cmd_scale(a):
    rec = parse_meta(a.meta)
    parts = []
    try:
        parts = [from_dog(p) for p in a.dog]
    except (OSError, ValueError, KeyError, IndexError) as e:
        rec.update({"ops": 0, "ok": False, "error": str(e)})
    if parts:
        rec["clients"] = len(parts)
        rec["ops"] = sum(p["ops"] for p in parts)
        rec["iops"] = sum(p["iops"] for p in parts)
        rec["seconds"] = max(p["seconds"] for p in parts)
        rec["errors"] = sum(p["errors"] for p in parts)
        rec["verify_errors"] = sum(p["verify_errors"] for p in parts)
        rec["verified_blocks"] = sum(p["verified_blocks"] for p in parts)
        rec["ok"] = (all(p["ops"] > 0 for p in parts) and
                     not rec["errors"] and not rec["verify_errors"])
        if a.cpu is not None:
            rec["cpu_s"] = a.cpu
    append(a.results, rec)
    return 0


def cmd_space(a):
    rec = parse_meta(a.meta)
    rec.update({"vdi_bytes": a.vdi, "allocated_bytes": a.allocated,
                "apparent_bytes": a.apparent,
                "ratio": a.allocated / a.vdi if a.vdi else None})
    rec["ok"] = a.ok == "1" and a.vdi > 0 and a.allocated > 0
    append(a.results, rec)
    return 0


def cmd_verify(a):
    rec = parse_meta(a.meta)
    if a.dog:
        try:
            d = from_dog(a.dog)
            rec["verified_blocks"] = d["verified_blocks"]
            rec["verify_errors"] = d["verify_errors"]
            rec["ok"] = (d["ops"] > 0 and not d["errors"] and
                         not d["verify_errors"] and
                         d["verified_blocks"] > 0)
        except (OSError, ValueError, KeyError, IndexError) as e:
            rec.update({"ok": False, "error": str(e)})
    else:
        rec["ok"] = a.ok == "1"
        if a.blocks and rec["ok"]:
            rec["verified_blocks"] = a.blocks
    append(a.results, rec)
    return 0


def fmt(v, digits=0):
    """about three significant digits; digits is ignored (kept for
    readability of the callers)"""
    if v is None:
        return "–"
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def policy_label(r):
    """3c for 3 copies, 2:1 for an erasure code"""
    return r["code"] if r.get("code") else f"{r['copies']}c"


def target_label(r):
    if r["target"] == "ceph":
        return (f"ceph rbd {r.get('osds', '?')} OSDs, "
                f"{r['copies']} copies")
    if r["target"] != "kelpie":
        return r["target"]
    s = f"kelpie {r['nodes']}n/{policy_label(r)}"
    if r.get("nosync"):
        s += " -n"
    return s


def cpu_per_kop(r):
    if r.get("cpu_s") is None or not r.get("ops"):
        return None
    return r["cpu_s"] / r["ops"] * 1000.0


def render_tables(runs):
    out = []
    tables = {}
    for key, title, latency in TABLES:
        rows = [r for r in runs if r.get("section") == "io" and
                r.get("table") == key]
        if not rows:
            continue
        out.append(f"### {title}\n")
        out.append("| client | target | IOPS | MB/s | p50 µs | p99 µs | "
                   "p99.9 µs | CPU s/1k ops | × baseline |")
        out.append("|---|---|--:|--:|--:|--:|--:|--:|--:|")
        trows = []
        for client in CLIENTS:
            crows = [r for r in rows if r["client"] == client]
            bclient = BASE_CLIENT.get(client, client)
            base = next((r for r in rows if r["client"] == bclient and
                         r.get("baseline")), None)
            for r in crows:
                ratio = None
                if (base and base.get("iops") and r.get("ok") and
                        r.get("iops")):
                    ratio = r["iops"] / base["iops"]
                lat = r.get("lat_us", {})
                label = target_label(r)
                if r.get("baseline"):
                    label += " (baseline)"
                if not r.get("ok"):
                    label += " **FAILED**"
                cells = [CLIENT_NAME[client], label,
                         fmt(r.get("iops")), fmt(r.get("mbps"), 1),
                         fmt(lat.get("p50")), fmt(lat.get("p99")),
                         fmt(lat.get("p99.9")), fmt(cpu_per_kop(r), 2),
                         "–" if ratio is None else f"{ratio:.2f}"]
                out.append("| " + " | ".join(cells) + " |")
                trows.append({"client": client, "target": label,
                              "iops": r.get("iops"), "mbps": r.get("mbps"),
                              "lat_us": lat,
                              "cpu_s_per_1k_ops": cpu_per_kop(r),
                              "ratio": ratio})
        out.append("")
        tables[key] = {"title": title, "rows": trows}
    return out, tables


# issue 7's targets: 3 nodes with 3 copies against qemu-nbd, fio over NBD
# (table, what, kind, goal): kind "iops"/"mbps" = at least goal x the
# baseline, "p50"/"p99.9" = latency at most goal x the baseline's
TARGETS = [
    ("randread-4k-qd32", "4 KiB random read QD32, IOPS", "iops", 0.5),
    ("randwrite-4k-qd32-flush32",
     "4 KiB random write QD32, flush every 32, IOPS", "iops", 0.3),
    ("randread-4k-qd1", "4 KiB random read QD1, p50", "p50", 4.0),
    ("randread-4k-qd1", "4 KiB random read QD1, p99.9", "p99.9", 10.0),
    ("randwrite-4k-qd1", "4 KiB random write QD1, p50", "p50", 4.0),
    ("randwrite-4k-qd1", "4 KiB random write QD1, p99.9", "p99.9", 10.0),
    ("seqread-4m-qd4", "4 MiB sequential read, MB/s", "mbps", 0.4),
    ("seqwrite-4m-qd4", "4 MiB sequential write, MB/s", "mbps", 0.4),
]


def target_value(r, kind):
    if not r or not r.get("ok"):
        return None
    if kind in ("iops", "mbps"):
        return r.get(kind)
    return r.get("lat_us", {}).get(kind)


def render_targets(runs):
    fio = [r for r in runs if r.get("section") == "io" and
           r.get("client") == "fio"]
    if not fio:
        return [], {}
    out = ["### Targets: kelpie 3n/3c against qemu-nbd, fio over NBD\n",
           "| workload | qemu-nbd | kelpie 3n/3c | kelpie / qemu-nbd | "
           "target | met |",
           "|---|--:|--:|--:|---|---|"]
    table = []
    for key, what, kind, goal in TARGETS:
        base = next((r for r in fio if r.get("table") == key and
                     r.get("target") == "qemu-nbd"), None)
        k = next((r for r in fio if r.get("table") == key and
                  r.get("target") == "kelpie" and r.get("nodes") == 3 and
                  r.get("copies") == 3 and not r.get("code") and
                  not r.get("nosync")), None)
        bv, kv = target_value(base, kind), target_value(k, kind)
        if base is None or k is None:
            continue
        ratio = kv / bv if bv and kv is not None else None
        if kind in ("iops", "mbps"):
            met = ratio is not None and ratio >= goal
            want = f"≥ {goal:g}×"
        else:
            met = ratio is not None and ratio <= goal
            want = f"≤ {goal:g}×"
        unit = {"iops": "IOPS", "mbps": "MB/s"}.get(kind, "µs")
        out.append("| " + " | ".join([
            what, f"{fmt(bv)} {unit}", f"{fmt(kv)} {unit}",
            "–" if ratio is None else f"{ratio:.2f}×", want,
            "yes" if met else "**no**"]) + " |")
        table.append({"workload": what, "table": key, "kind": kind,
                      "baseline": bv, "kelpie": kv, "ratio": ratio,
                      "goal": goal, "met": met})
    if not table:
        return [], {}
    out.append("")
    return out, {"targets": table}


def render_pair(rows, field, base, names, tables, head, note):
    """rows of one section measured twice on the same cluster, one after
    the other: with rows[field] == base (the first, names[0]) and with
    another value (names[1]); one table row per client and workload"""
    a, b = names
    out = [head + "\n",
           f"| client | workload | IOPS {a} | IOPS {b} | {b} / {a} | "
           f"p50 µs {a} | p50 µs {b} | p99 µs {a} | p99 µs {b} | "
           f"CPU s/1k ops {a} | CPU s/1k ops {b} |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    table = []
    r0 = rows[0]
    for client in ("dog", "fio"):
        for key, what in tables:
            pick = [r for r in rows if r.get("client") == client and
                    r.get("table") == key]
            if not pick:
                continue
            ra = next((r for r in pick if r.get(field, base) == base), None)
            rb = next((r for r in pick if r.get(field, base) != base), None)

            def val(r, k):
                return r.get(k) if r and r.get("ok") else None

            def lat(r, p):
                return (r.get("lat_us", {}).get(p)
                        if r and r.get("ok") else None)

            def cpu(r):
                return cpu_per_kop(r) if r and r.get("ok") else None

            ratio = None
            if val(ra, "iops") and val(rb, "iops"):
                ratio = rb["iops"] / ra["iops"]
            failed = [name for name, r in ((a, ra), (b, rb))
                      if r is not None and not r.get("ok")]
            label = what + (" **FAILED** (" + ", ".join(failed) + ")"
                            if failed else "")
            out.append("| " + " | ".join([
                CLIENT_NAME[client], label,
                fmt(val(ra, "iops")), fmt(val(rb, "iops")),
                "–" if ratio is None else f"{ratio:.2f}×",
                fmt(lat(ra, "p50")), fmt(lat(rb, "p50")),
                fmt(lat(ra, "p99")), fmt(lat(rb, "p99")),
                fmt(cpu(ra), 2), fmt(cpu(rb), 2)]) + " |")
            table.append({
                "client": client, "table": key, "workload": what,
                "nodes": r0["nodes"], "copies": r0["copies"],
                f"iops_{a}": val(ra, "iops"), f"iops_{b}": val(rb, "iops"),
                "ratio": ratio,
                f"lat_us_{a}": ra.get("lat_us") if ra else None,
                f"lat_us_{b}": rb.get("lat_us") if rb else None,
                f"cpu_s_per_1k_ops_{a}": cpu_per_kop(ra) if ra else None,
                f"cpu_s_per_1k_ops_{b}": cpu_per_kop(rb) if rb else None})
    out += ["", note, ""]
    return out, table


def render_journal(runs):
    """per write that syncs: the same cluster without and with sheep -j,
    one after the other in the same run"""
    rows = [r for r in runs if r.get("section") == "journal"]
    if not rows:
        return [], {}
    size = next((r["journal"] for r in rows
                 if r.get("journal", "none") != "none"), "?")
    r0 = rows[0]
    out, table = render_pair(
        rows, "journal", "none", ("without", "with"), JOURNAL_TABLES,
        f"### Write journal: kelpie {r0['nodes']}n/{r0['copies']}c "
        f"without and with -j size={size}",
        "With -j sheep journals every write: a durable one is "
        "acknowledged once the journal is synced, a cached one "
        "(NBD without FUA, the flush rows) is appended without a "
        "sync, and a flush is one sync of the journal instead of "
        "one of every object written.  The cached rows without a "
        "flush pay the append and gain nothing.")
    for t in table:
        t["journal"] = size
    return out, {"journal": table}


def render_transport(runs):
    """the same cluster with sheep-to-sheep traffic over TCP and over
    RDMA (sheep --rdma), one after the other in the same run"""
    rows = [r for r in runs if r.get("section") == "transport"]
    if not rows:
        return [], {}
    r0 = rows[0]
    where = r0.get("rdma", "?")
    note = ("Writes cross from the gateway to the other copies' nodes; "
            "with 3 copies on 3 nodes the gateway reads its own copy, so "
            "the read rows are the control.")
    if where == "emulation":
        note += (" **Measured on the emulation of the verbs (unix sockets "
                 "between processes), not on a device: these figures show "
                 "that the path works, not what RDMA costs.**")
    out, table = render_pair(
        rows, "transport", "tcp", ("tcp", "rdma"), TRANSPORT_TABLES,
        f"### Transport between sheep: kelpie {r0['nodes']}n/"
        f"{r0['copies']}c over TCP and over RDMA ({where})", note)
    return out, {"transport": table}


def render_direct(runs):
    """the same cluster with data objects through the page cache and
    through O_DIRECT (sheep -D), one after the other in the same run"""
    rows = [r for r in runs if r.get("section") == "direct"]
    if not rows:
        return [], {}
    r0 = rows[0]
    out, table = render_pair(
        rows, "direct", "off", ("page cache", "-D"), DIRECT_TABLES,
        f"### Data objects past the page cache: kelpie {r0['nodes']}n/"
        f"{r0['copies']}c without and with sheep -D",
        "With -D a data object's data is written and read with O_DIRECT: "
        "writes wait for the disk, reads come from it (no page cache to "
        "hit), and no byte is copied into the page cache.  Durability is "
        "the same either way (a flush or a write without the cache flag "
        "syncs).")
    return out, {"direct": table}


def render_scaling(runs):
    rows = [r for r in runs if r.get("section") == "scaling"]
    if not rows:
        return [], {}
    out = ["### Scaling: 4 KiB random I/O, one client per node "
           "(queue depth 16 each), copies 1\n",
           "| nodes | workload | IOPS | IOPS per node | linearity | "
           "CPU s/1k ops |",
           "|--:|---|--:|--:|--:|--:|"]
    table = []
    for wl in ("randwrite", "randread"):
        wrows = sorted((r for r in rows if r.get("workload") == wl),
                       key=lambda r: r["nodes"])
        one = next((r for r in wrows if r["nodes"] == 1 and r.get("ok")),
                   None)
        for r in wrows:
            per = r["iops"] / r["nodes"] if r.get("ok") else None
            lin = None
            if per is not None and one:
                lin = per / one["iops"] * 100.0
            out.append("| " + " | ".join([
                str(r["nodes"]), wl + ("" if r.get("ok") else " **FAILED**"),
                fmt(r.get("iops")), fmt(per),
                "–" if lin is None else f"{lin:.0f} %",
                fmt(cpu_per_kop(r), 2)]) + " |")
            table.append({"nodes": r["nodes"], "workload": wl,
                          "iops": r.get("iops"), "iops_per_node": per,
                          "linearity_pct": lin,
                          "cpu_s_per_1k_ops": cpu_per_kop(r)})
    out.append("")
    out.append("On one machine every node shares the same cores (and the "
               "clients run there too), so this curve measures how the "
               "daemons share the CPU, not how a cluster of real hosts "
               "scales.")
    out.append("")
    return out, {"scaling": table}


def render_space(runs):
    """per cluster, what its filled VDI takes on disk"""
    rows = [r for r in runs if r.get("section") == "space"]
    if not rows:
        return [], {}
    out = ["### Space on disk: one fully written VDI\n",
           "| cluster | policy | VDI | allocated in obj/ | × VDI size | "
           "ideal | apparent size |",
           "|---|---|--:|--:|--:|--:|--:|"]
    table = []
    for r in rows:
        code = r.get("code")
        if code:
            d, p = (int(x) for x in code.split(":"))
            policy, ideal = f"erasure code {code}", (d + p) / d
        else:
            n = r["copies"]
            policy, ideal = f"{n} cop{'y' if n == 1 else 'ies'}", float(n)
        label = target_label(r) + ("" if r.get("ok") else " **FAILED**")
        mib = 1 << 20
        out.append("| " + " | ".join([
            label, policy, f"{r['vdi_bytes'] / mib:,.0f} MiB",
            f"{r['allocated_bytes'] / mib:,.1f} MiB",
            "–" if r.get("ratio") is None else f"{r['ratio']:.3f}",
            f"{ideal:.3f}", f"{r['apparent_bytes'] / mib:,.1f} MiB"]) +
            " |")
        table.append({"target": label, "nodes": r["nodes"],
                      "copies": r["copies"], "code": code,
                      "vdi_bytes": r["vdi_bytes"],
                      "allocated_bytes": r["allocated_bytes"],
                      "apparent_bytes": r["apparent_bytes"],
                      "ratio": r.get("ratio"), "ideal": ideal})
    out += ["", "Measured right after the VDI was preallocated and "
            "written once with 4 MiB writes, before the timed runs: the "
            "bytes allocated (du) in the obj/ directories of all nodes, "
            "which hold only this VDI (its data objects or strips, their "
            "checksums, the inode and, for a code, the strips' undo "
            "files), over the VDI's size.  Ideal: copies, or (D+P)/D for "
            "a code.", ""]
    return out, {"space": table}


def cmd_render(a):
    runs = []
    with open(a.results) as f:
        for line in f:
            if line.strip():
                runs.append(json.loads(line))
    out = []
    if a.header:
        out += [a.header, ""]
    out += [LEGEND, ""]
    lines, targets = render_targets(runs)
    out += lines
    lines, tables = render_tables(runs)
    out += lines
    tables.update(targets)
    lines, space = render_space(runs)
    out += lines
    tables.update(space)
    lines, scaling = render_scaling(runs)
    out += lines
    tables.update(scaling)
    lines, journal = render_journal(runs)
    out += lines
    tables.update(journal)
    lines, transport = render_transport(runs)
    out += lines
    tables.update(transport)
    lines, direct = render_direct(runs)
    out += lines
    tables.update(direct)
    verifies = [r for r in runs if r.get("section") == "verify"]
    if verifies:
        out.append("Data verification: " + ", ".join(
            f"{r['what']} {'ok' if r['ok'] else '**FAILED**'}"
            for r in verifies) + ".")
        out.append("")
    text = "\n".join(out)
    print(text)
    with open(a.md, "w") as f:
        f.write(text + "\n")
    with open(a.json, "w") as f:
        json.dump({"header": a.header, "runs": runs, "tables": tables}, f,
                  indent=1, sort_keys=True)
        f.write("\n")
    if not a.check:
        return 0
    bad = [r for r in runs if not r.get("ok")]
    for r in bad:
        print(f"check: no numbers or bad data: {json.dumps(r)}",
              file=sys.stderr)
    if not any(r.get("section") in ("io", "scaling", "journal",
                                     "transport", "direct")
               for r in runs):
        print("check: no run at all", file=sys.stderr)
        return 1
    if not sum(r.get("verified_blocks", 0) for r in runs):
        print("check: no data was read back and verified", file=sys.stderr)
        return 1
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("add")
    s.add_argument("results")
    s.add_argument("--meta", nargs="*", default=[])
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--dog")
    g.add_argument("--fio")
    g.add_argument("--qimg")
    g.add_argument("--fail", action="store_true")
    s.add_argument("--cpu", type=float)
    s = sub.add_parser("scale")
    s.add_argument("results")
    s.add_argument("--meta", nargs="*", default=[])
    s.add_argument("--dog", nargs="+", required=True)
    s.add_argument("--cpu", type=float)
    s = sub.add_parser("space")
    s.add_argument("results")
    s.add_argument("--meta", nargs="*", default=[])
    s.add_argument("--vdi", type=int, required=True)
    s.add_argument("--allocated", type=int, required=True)
    s.add_argument("--apparent", type=int, required=True)
    s.add_argument("--ok", default="1")
    s = sub.add_parser("verify")
    s.add_argument("results")
    s.add_argument("--meta", nargs="*", default=[])
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--ok")
    g.add_argument("--dog")
    s.add_argument("--blocks", type=int)
    s = sub.add_parser("render")
    s.add_argument("results")
    s.add_argument("--md", required=True)
    s.add_argument("--json", required=True)
    s.add_argument("--check", action="store_true")
    s.add_argument("--header")
    a = p.parse_args()
    return {"add": cmd_add, "scale": cmd_scale, "space": cmd_space,
            "verify": cmd_verify, "render": cmd_render}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
