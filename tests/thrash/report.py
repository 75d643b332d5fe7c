#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The thrash suite's report: tests/thrash/report.py WORKDIR [options].

Reads what tests/thrash/run left in WORKDIR (faults.tsv, lc.tsv, fio.tsv,
monitor.tsv, corruptions.tsv, checks.tsv, ...), adds the checks of the
mid-run observations to checks.tsv (stale reads, read errors, abandoned
writes, failed fio rounds), prints the table and the end checks, and ends
with "N passed, N failed".  Exit status 1 if a check failed.
"""
import argparse
import glob
import json
import os
import re
import sys

DOWN_KINDS = ("kill", "wipe", "cluster", "crash")


def read_tsv(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                rows.append(line.split("\t"))
    return rows


def read_int(path, default=0):
    try:
        with open(path) as f:
            return int(f.read().strip() or default)
    except (OSError, ValueError):
        return default


def pct(vals, p):
    if not vals:
        return None
    v = sorted(vals)
    k = (len(v) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def fmt_s(ms):
    return "-" if ms is None else "%.1f s" % (ms / 1000.0)


class Faults:
    def __init__(self, rows, nodes):
        self.rows = []
        for r in rows:
            if len(r) < 5:
                continue
            fid, kind, node, start, heal = r[:5]
            detail = r[5] if len(r) > 5 else ""
            self.rows.append(dict(id=fid, kind=kind, node=node,
                                  start=int(start), heal=int(heal),
                                  detail=detail))
        self.nodes = nodes

    def hit(self, node, t0, t1, kinds):
        """faults of @kinds on @node (or the whole cluster) overlapping
        [t0, t1]"""
        out = []
        for f in self.rows:
            if f["kind"] not in kinds:
                continue
            if f["node"] not in (str(node), "-"):
                continue
            if f["start"] <= t1 and f["heal"] >= t0:
                out.append(f)
        return out

    def any_kind(self, t0, t1, kind):
        return [f for f in self.rows if f["kind"] == kind and
                f["start"] <= t1 and f["heal"] >= t0]


def classify_verify_err(path):
    """(content problems, connection errors, other read errors, lines)"""
    content = conn = other = 0
    lines = []
    try:
        with open(path, errors="replace") as f:
            text = f.read().splitlines()
    except OSError:
        text = []
    for ln in text:
        if "unreadable" in ln or "problems in all" in ln:
            continue
        if re.search(r"holds (seq|zeros)|corrupt|no block header|"
                     r"header of another|index entry .* holds vid", ln):
            content += 1
            lines.append(ln)
        elif ("connection error" in ln or "cannot connect" in ln or
              "System is shutting down" in ln):
            # the last: a node of a whole-cluster stop (clean) going
            # down; explained only if such a fault overlaps the verify
            conn += 1
            lines.append(ln)
        elif ln.startswith("loadclient"):
            other += 1
            lines.append(ln)
    return content, conn, other, lines


def fio_info(path):
    """(error number, writes issued, verify error text) of a fio json"""
    err, ios = None, 0
    try:
        with open(path) as f:
            txt = f.read()
        # fio may print notes before the json
        txt = txt[txt.index("{"):]
        j = json.loads(txt)
        for job in j.get("jobs", []):
            err = job.get("error", 0) or err
            ios += job.get("write", {}).get("total_ios", 0)
    except (OSError, ValueError, KeyError):
        pass
    return err, ios


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--seed", default="?")
    ap.add_argument("--minutes", default="?")
    ap.add_argument("--corrupt", type=int, default=0)
    ap.add_argument("--phase-ms", type=int, default=0)
    a = ap.parse_args()
    d = a.dir
    N = a.nodes
    faults = Faults(read_tsv(os.path.join(d, "faults.tsv")), N)
    checks_path = os.path.join(d, "checks.tsv")
    new_checks = []

    def check(ok, name, detail):
        new_checks.append(("PASS" if ok else "FAIL", name, detail))

    # ---- load client: writes and mid-run verifies
    acked = abandoned = retries = errors = 0
    fatal_cycles = []
    stale = 0
    read_err = 0
    interrupted = 0
    verifies = 0
    stale_lines, readerr_lines = [], []
    for r in read_tsv(os.path.join(d, "lc.tsv")):
        if r[0] == "W":
            m = dict(kv.split("=") for kv in r[6].split() if "=" in kv) \
                if len(r) > 6 else {}
            acked += int(m.get("acked", 0))
            abandoned += int(m.get("abandoned", 0))
            retries += int(m.get("retries", 0))
            errors += int(m.get("errors", 0))
            if r[5] == "2":
                fatal_cycles.append(r[1])
        elif r[0] == "V":
            verifies += 1
            cycle, node, t0, t1, rc = r[1], r[2], int(r[3]), int(r[4]), r[5]
            if rc == "0":
                continue
            c, cn, o, lines = classify_verify_err(
                os.path.join(d, "lc", "v.%s.err" % cycle))
            tag = "cycle %s via node %s" % (cycle, node)
            if c:
                stale += c
                stale_lines += ["%s: %s" % (tag, x) for x in lines
                                if "connection" not in x][:5]
            explained = faults.hit(node, t0, t1, DOWN_KINDS + ("stop",))
            if (cn or rc == "2") and explained and not o and not c:
                interrupted += 1
            elif cn or o or (rc == "2" and not c):
                read_err += 1
                readerr_lines += ["%s: %s" % (tag, x) for x in lines][:5] or \
                    ["%s: exit %s" % (tag, rc)]
    check(stale == 0, "no stale reads (mid-run load client verifies)",
          "%d verifies, %d interrupted by a fault on their node, %d bad "
          "blocks%s" % (verifies, interrupted, stale,
                        ": " + "; ".join(stale_lines[:5]) if stale else ""))
    check(read_err == 0, "no read errors while copies were live",
          "%d verify runs with unexplained errors%s" %
          (read_err, ": " + "; ".join(readerr_lines[:5]) if read_err else ""))
    check(abandoned == 0 and not fatal_cycles,
          "no write abandoned (load client)",
          "%d acknowledged, %d abandoned after %d s of retries, %d retries%s"
          % (acked, abandoned, 120, retries,
             ", fatal in cycles " + ",".join(fatal_cycles)
             if fatal_cycles else ""))

    # ---- fio rounds
    fio_ok = fio_cut = fio_full = 0
    fio_bad = []
    fio_writes = 0
    fio_stale = 0
    for r in read_tsv(os.path.join(d, "fio.tsv")):
        rnd, node, t0, t1, rc = r[0], r[1], int(r[2]), int(r[3]), r[4]
        err, ios = fio_info(os.path.join(d, "fio", "r%s.json" % rnd))
        fio_writes += ios
        if rc == "0":
            fio_ok += 1
            continue
        try:
            with open(os.path.join(d, "fio", "r%s.err" % rnd),
                      errors="replace") as f:
                etxt = f.read()
        except OSError:
            etxt = ""
        first = next((ln for ln in etxt.splitlines()
                      if "err" in ln.lower() or "verify" in ln.lower()),
                     etxt.strip().splitlines()[0] if etxt.strip() else "")
        is_verify = err == 84 or re.search(r"verify.*(bad|fail)|"
                                           r"bad magic|crc32c", etxt, re.I)
        down = faults.hit(node, t0, t1, DOWN_KINDS)
        full = faults.any_kind(t0, t1, "full")
        desc = "round %s via node %s (err %s): %s" % (rnd, node, err, first)
        if is_verify:
            fio_stale += 1
            fio_bad.append(desc + " [verify failure]")
        elif down:
            fio_cut += 1
        elif full and (err == 28 or "space" in etxt.lower()):
            fio_full += 1
        else:
            fio_bad.append(desc)
    check(not fio_bad, "fio rounds: no unexplained error",
          "%d rounds passed, %d cut by a fault on their export node, "
          "%d refused a write for a full disk%s" %
          (fio_ok, fio_cut, fio_full,
           "; failed: " + "; ".join(fio_bad[:5]) if fio_bad else ""))

    # ---- recovery times: from each heal to the first of two samples in a
    # row (same epoch) in which every node is listed and none recovers
    mon = []
    max_stale = 0
    for r in read_tsv(os.path.join(d, "monitor.tsv")):
        try:
            mon.append((int(r[0]), r[2], r[3], r[4]))
            max_stale = max(max_stale, int(r[5]))
        except (ValueError, IndexError):
            pass
    rec_done = read_int(os.path.join(d, "recovery_done"), 0)
    idle = [m[1] == str(N) and m[2] == "0" for m in mon]
    rt = {}
    censored = 0
    for f in faults.rows:
        if f["kind"] in ("corrupt",):
            continue
        h = f["heal"]
        got = None
        for i in range(len(mon) - 1):
            if mon[i][0] < h:
                continue
            if idle[i] and idle[i + 1] and mon[i][3] == mon[i + 1][3]:
                got = mon[i][0] - h
                break
        if got is None:
            censored += 1
            if rec_done > h:
                got = rec_done - h
        if got is not None:
            rt.setdefault(f["kind"], []).append(got)
    all_rt = [x for v in rt.values() for x in v]

    # ---- corruptions
    corr = read_tsv(os.path.join(d, "corruptions.tsv"))
    try:
        with open(os.path.join(d, "replicas.differ")) as f:
            differ = set(x.strip() for x in f if x.strip())
    except OSError:
        differ = set()
    detected = 0
    for path in glob.glob(os.path.join(d, "logs", "*.sheep.log*")):
        with open(path, errors="replace") as f:
            for ln in f:
                if re.search(r"checksum mismatch|corrupt", ln, re.I):
                    detected += 1
    rotten = set()
    for c in read_tsv(os.path.join(d, "corruptions.end")):
        if len(c) > 4 and c[4] == "rotten":
            rotten.add(c[2])
    repaired = sum(1 for c in corr if c[2] not in differ and
                   c[2] not in rotten)

    lost_lc = read_int(os.path.join(d, "lc_lost"))
    lost_fio = read_int(os.path.join(d, "fio_lost"))

    with open(checks_path, "a") as f:
        for c in new_checks:
            f.write("\t".join(c) + "\n")
    checks = read_tsv(checks_path)

    # ---- the table
    kinds = ["kill", "stop", "full", "cluster", "wipe", "corrupt", "crash"]
    names = {"kill": "SIGKILL + restart", "stop": "SIGSTOP + SIGCONT",
             "full": "disk full + drained", "cluster": "whole-cluster restart",
             "wipe": "replaced by an empty node", "corrupt": "flipped byte",
             "crash": "crash (not injected)"}
    count = {k: 0 for k in kinds}
    for f in faults.rows:
        count[f["kind"]] = count.get(f["kind"], 0) + 1
    print()
    print("thrash: seed %s, %d nodes, copies 3, %s min of faults "
          "(%.0f s with stretching)" % (a.seed, N, a.minutes,
                                         a.phase_ms / 1000.0))
    print("replay: tests/thrash/run --minutes %s --seed %s --nodes %d%s" %
          (a.minutes, a.seed, N, " --corrupt" if a.corrupt else ""))
    print()
    w = 44
    print("%-*s %s" % (w, "fault", "count   recovery p50   p99"))
    for k in kinds:
        if k == "corrupt" and not a.corrupt:
            continue
        v = rt.get(k, [])
        print("%-*s %5d   %12s %7s" % (w, "  " + names[k], count.get(k, 0),
                                        fmt_s(pct(v, 50)), fmt_s(pct(v, 99))))
    print("%-*s %5d   %12s %7s" % (w, "  all", sum(count.values()),
                                    fmt_s(pct(all_rt, 50)),
                                    fmt_s(pct(all_rt, 99))))
    if censored:
        print("  (%d faults never saw a fully recovered cluster before the "
              "next fault: timed to the final recovery)" % censored)
    print()
    rows = [
        ("operations acknowledged (load client)", str(acked)),
        ("operations acknowledged (fio writes)", str(fio_writes)),
        ("operations lost (must be 0)",
         "%d (load client bad blocks %d, fio verify failures %d)" %
         (lost_lc + lost_fio, lost_lc, lost_fio)),
        ("stale reads (must be 0)",
         "%d (load client %d, fio %d)" % (stale + fio_stale, stale,
                                          fio_stale)),
        ("writes abandoned / retried (load client)",
         "%d / %d" % (abandoned, retries)),
        ("fio rounds passed / cut by a fault / disk full / failed",
         "%d / %d / %d / %d" % (fio_ok, fio_cut, fio_full, len(fio_bad))),
        ("stale copies (obj/.stale entries), most at once", str(max_stale)),
        ("corruptions injected / detected / repaired",
         "%d / %s / %s" % (len(corr), detected if a.corrupt else "-",
                           repaired if a.corrupt else "-")),
    ]
    for k, v in rows:
        print("%-*s %s" % (w, k, v))
    print()
    npass = nfail = 0
    for c in checks:
        st, name = c[0], c[1]
        detail = c[2] if len(c) > 2 else ""
        print("%-4s %s%s" % (st, name, ": " + detail if detail else ""))
        if st == "PASS":
            npass += 1
        else:
            nfail += 1
    findings = os.path.join(d, "findings.log")
    if os.path.exists(findings) and os.path.getsize(findings):
        print()
        print("findings during the run (%s):" % findings)
        with open(findings) as f:
            for ln in f.read().splitlines()[:20]:
                print("  " + ln)
    print()
    print("%d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
