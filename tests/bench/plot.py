#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""PNG plots of Kelpie's benchmark results (tests/bench/run).

    plot.py RESULTS.json OUTDIR [--md FILE] [--dpi N]

Reads the results.json that report.py render wrote and writes, into
OUTDIR:
    latency-TABLE.png  one per workload table with latency percentiles:
                       p50, p99 and p99.9 of every row (Kelpie and the
                       baseline of each client), log scale, in µs
    iops-clusters.png  IOPS of every workload per cluster (nodes/copies,
                       or nodes/D:P for an erasure code), one bar per
                       client, the baselines as dashed lines (Ceph RBD,
                       fio's second baseline, too)
    scaling.png        total IOPS of the scaling series per cluster size,
                       the one-node IOPS as the reference
    journal.png        the journal section: IOPS of each write workload
                       without and with sheep -j, with their ratio
With --md, appends Markdown image links to the plots to FILE (the
results.md beside them).  Prints the files written, one per line.  Exits
3 with a note on stderr when matplotlib cannot be imported (the caller
decides whether to install it), 1 on any other error.
"""
import argparse
import json
import os
import sys

sys.dont_write_bytecode = True      # no __pycache__ in the source tree
from report import (TABLES, CLIENT_NAME, CLIENTS,  # noqa: E402
                    BASE_CLIENT, JOURNAL_TABLES, policy_label,
                    target_label)

# short titles for the small multiples of iops-clusters.png
SHORT = {
    "randwrite-4k-qd1": "4 KiB random write, QD1",
    "randread-4k-qd1": "4 KiB random read, QD1",
    "randwrite-4k-qd32": "4 KiB random write, QD32",
    "randread-4k-qd32": "4 KiB random read, QD32",
    "randwrite-4k-qd32-flush32": "4 KiB random write, QD32,\nflush every 32",
    "randwrite-4k-qd1-flush": "4 KiB random write + flush, QD1",
    "randwrite-4k-qd1-durable": "4 KiB durable random write, QD1",
    "seqwrite-1m-qd4": "1 MiB sequential write, QD4",
    "seqread-1m-qd4": "1 MiB sequential read, QD4",
    "seqwrite-4m-qd4": "4 MiB sequential write, QD4",
    "seqread-4m-qd4": "4 MiB sequential read, QD4",
}
CLIENT_COLOR = {"fio": "#1f77b4", "fio-rbd": "#ff7f0e", "qemu": "#2ca02c",
                "qemu-orig": "#9467bd", "dog": "#d62728"}
BASELINE_NAME = {"fio": "qemu-nbd",
                 "fio-rbd": "Ceph RBD, 3 OSDs, 3 copies, one host",
                 "qemu": "qemu-img on a raw file",
                 "qemu-orig": "QEMU 5.2 qemu-img on a raw file",
                 "dog": "kelpie 1n/1c"}
PCT = (("p50", "o", "#08306b"), ("p99", "s", "#4292c6"),
       ("p99.9", "^", "#9ecae1"))


def io_rows(runs, table):
    """the rows of one table that produced numbers, per client, the
    baseline first"""
    rows = [r for r in runs if r.get("section") == "io" and
            r.get("table") == table and r.get("ok") and r.get("iops")]
    out = []
    for c in CLIENTS:
        crows = [r for r in rows if r.get("client") == c]
        out += [r for r in crows if r.get("baseline")]
        out += [r for r in crows if not r.get("baseline")]
    return out


def cluster_label(r):
    s = f"{r['nodes']}n/{policy_label(r)}"
    if r.get("nosync"):
        s += " -n"
    return s


def cluster_key(r):
    # copies is D+P for a code: the code tells 3n/3c and 3n/2:1 apart
    return (bool(r.get("nosync")), r["nodes"], r["copies"],
            r.get("code") or "")


def fmt_us(v, _pos=None):
    if v >= 1000:
        return f"{v / 1000:g} ms"
    return f"{v:g} µs"


def plot_latency(plt, ticker, runs, table, title, path, dpi):
    rows = [r for r in io_rows(runs, table) if r.get("lat_us")]
    if not rows:
        return False
    # one line per row, top to bottom, a gap between clients
    ys, labels, y = [], [], 0.0
    prev = None
    for r in rows:
        if prev is not None and r["client"] != prev:
            y += 0.6
        prev = r["client"]
        ys.append(y)
        label = f"{CLIENT_NAME[r['client']]}: {target_label(r)}"
        if r.get("baseline"):
            label += " (baseline)"
        labels.append(label)
        y += 1.0
    fig, ax = plt.subplots(figsize=(9.0, 1.3 + 0.32 * len(rows)))
    for r, y in zip(rows, ys):
        lat = r["lat_us"]
        vals = [lat.get(p) for p, _, _ in PCT]
        if r.get("baseline"):
            ax.axhspan(y - 0.45, y + 0.45, color="#eeeeee", zorder=0)
            # the baseline's p50 across its client's rows (and those
            # of a client compared with it: fio's rbd engine on Ceph)
            cys = [yy for rr, yy in zip(rows, ys)
                   if BASE_CLIENT.get(rr["client"], rr["client"]) ==
                   r["client"]]
            if lat.get("p50"):
                ax.plot([lat["p50"]] * 2, [min(cys) - 0.45, max(cys) + 0.45],
                        color="#888888", linestyle=":", linewidth=1,
                        zorder=1)
        good = [v for v in vals if v]
        if len(good) > 1:
            ax.plot([min(good), max(good)], [y, y], color="#bbbbbb",
                    linewidth=2, zorder=1)
        for (p, m, col), v in zip(PCT, vals):
            if v:
                ax.plot([v], [y], marker=m, color=col, markersize=7,
                        linestyle="none", zorder=2)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=9)
    for t, r in zip(ax.get_yticklabels(), rows):
        if r.get("baseline"):
            t.set_fontweight("bold")
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(fmt_us))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.grid(axis="x", which="major", color="#dddddd")
    ax.grid(axis="x", which="minor", color="#f2f2f2")
    ax.set_axisbelow(True)
    ax.set_xlabel("latency from submission to completion (log scale); "
                  "dotted: the baseline's p50")
    ax.set_title(title, fontsize=11)
    handles = [plt.Line2D([], [], marker=m, color=col, linestyle="none",
                          markersize=7, label=p) for p, m, col in PCT]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0),
              fontsize=9, title="percentile", title_fontsize=9,
              frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return True


def plot_iops_clusters(plt, ticker, runs, path, dpi):
    tables = [(k, t) for k, t, _ in TABLES if io_rows(runs, k)]
    if not tables:
        return False
    ncols = 3
    nrows = (len(tables) + 1 + ncols - 1) // ncols   # + 1: the legend
    fig, axes = plt.subplots(nrows, ncols,
                             figsize=(3.9 * ncols, 2.75 * nrows),
                             squeeze=False)
    flat = [a for row in axes for a in row]
    seen = {}
    for ax, (key, _title) in zip(flat, tables):
        rows = io_rows(runs, key)
        kel = [r for r in rows if r.get("target") == "kelpie"]
        cl = sorted({cluster_key(r): cluster_label(r) for r in kel}.items())
        xs = {k: i for i, (k, _) in enumerate(cl)}
        clients = [c for c in CLIENTS if any(r["client"] == c for r in kel)]
        width = 0.8 / max(1, len(clients))
        for j, c in enumerate(clients):
            pts = [(xs[cluster_key(r)], r["iops"]) for r in kel
                   if r["client"] == c]
            off = (j - (len(clients) - 1) / 2) * width
            h = ax.bar([x + off for x, _ in pts], [v for _, v in pts],
                       width=width * 0.95, color=CLIENT_COLOR[c])
            seen.setdefault(c, h)
            base = next((r for r in rows if r["client"] == c and
                         r.get("baseline")), None)
            if base and base.get("target") != "kelpie":
                ln = ax.axhline(base["iops"], color=CLIENT_COLOR[c],
                                linestyle="--", linewidth=1.2)
                seen.setdefault(c + "-base", ln)
        # clients without Kelpie rows (fio's rbd engine on Ceph): their
        # rows as dashed lines, like the baselines
        for c in CLIENTS:
            if c in clients:
                continue
            other = next((r for r in rows if r["client"] == c and
                          r.get("target") != "kelpie"), None)
            if other:
                ln = ax.axhline(other["iops"], color=CLIENT_COLOR[c],
                                linestyle="--", linewidth=1.2)
                seen.setdefault(c + "-base", ln)
        ax.set_xticks(range(len(cl)))
        ax.set_xticklabels([lab for _, lab in cl], fontsize=8)
        ax.set_title(SHORT.get(key, key), fontsize=9.5)
        ax.set_ylabel("IOPS", fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(
            lambda v, _p: f"{v:,.0f}"))
        ax.grid(axis="y", color="#e5e5e5")
        ax.set_axisbelow(True)
        ax.set_ylim(bottom=0)
    for ax in flat[len(tables):]:
        ax.axis("off")
    handles, names = [], []
    for c in CLIENTS:
        if c in seen:
            handles.append(seen[c])
            names.append(CLIENT_NAME[c] + " on Kelpie" +
                         (" (baseline: 1n/1c)" if c == "dog" else ""))
        if c + "-base" in seen:
            handles.append(seen[c + "-base"])
            names.append(f"{CLIENT_NAME[c]} on {BASELINE_NAME[c]} "
                         "(baseline)")
    flat[len(tables)].legend(handles, names, loc="center", fontsize=9,
                             frameon=False,
                             title="x axis: nodes/copies or nodes/D:P "
                             "(erasure code)\n(-n: sheep without sync)",
                             title_fontsize=9)
    fig.suptitle("IOPS per workload and cluster: Kelpie beside the "
                 "baseline of each client", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return True


def plot_scaling(plt, ticker, runs, path, dpi):
    rows = [r for r in runs if r.get("section") == "scaling" and
            r.get("ok")]
    if not rows:
        return False
    nodes = sorted({r["nodes"] for r in rows})
    wls = [w for w in ("randwrite", "randread")
           if any(r["workload"] == w for r in rows)]
    color = {"randwrite": "#d62728", "randread": "#1f77b4"}
    width = 0.8 / len(wls)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    top = 0
    handles, names = [], []
    for j, w in enumerate(wls):
        wr = {r["nodes"]: r for r in rows if r["workload"] == w}
        xs = [i for i, n in enumerate(nodes) if n in wr]
        vals = [wr[nodes[i]]["iops"] for i in xs]
        off = (j - (len(wls) - 1) / 2) * width
        bars = ax.bar([x + off for x in xs], vals, width=width * 0.95,
                      color=color[w])
        handles.append(bars)
        names.append(f"4 KiB {w}, all clients")
        ax.bar_label(bars, labels=[f"{v:,.0f}" for v in vals], fontsize=8,
                     padding=2)
        top = max([top] + vals)
        if 1 in wr:
            handles.append(ax.axhline(wr[1]["iops"], color=color[w],
                                      linestyle="--", linewidth=1.2))
            names.append(f"{w} on 1 node (the reference)")
    ax.set_xticks(range(len(nodes)))
    ax.set_xticklabels([f"{n}n/1c\n({n} client{'s' if n > 1 else ''})"
                        for n in nodes], fontsize=9)
    ax.set_xlabel("cluster: nodes/copies, one client per node")
    ax.set_ylabel("IOPS (sum over the clients)")
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(
        lambda v, _p: f"{v:,.0f}"))
    ax.set_ylim(0, top * 1.3)
    ax.grid(axis="y", color="#e5e5e5")
    ax.set_axisbelow(True)
    ax.legend(handles, names, fontsize=8, loc="upper right", ncol=2,
              frameon=False)
    ax.set_title("Scaling: 4 KiB random I/O, queue depth 16 per client, "
                 "1 copy\n(every node and client on the same machine)",
                 fontsize=10.5)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return True


def plot_journal(plt, ticker, runs, path, dpi):
    rows = [r for r in runs if r.get("section") == "journal" and
            r.get("ok") and r.get("iops")]
    if not rows:
        return False
    size = next((r["journal"] for r in rows
                 if r.get("journal", "none") != "none"), "?")
    pairs = []      # (label, without, with)
    for client in ("dog", "fio"):
        for key, what in JOURNAL_TABLES:
            pick = [r for r in rows if r["client"] == client and
                    r.get("table") == key]
            wo = next((r["iops"] for r in pick
                       if r.get("journal", "none") == "none"), None)
            w = next((r["iops"] for r in pick
                      if r.get("journal", "none") != "none"), None)
            if wo or w:
                pairs.append((f"{CLIENT_NAME[client]}: {what}", wo, w))
    fig, ax = plt.subplots(figsize=(9.0, 1.4 + 0.6 * len(pairs)))
    h = 0.38
    for i, (_label, wo, w) in enumerate(pairs):
        if wo:
            ax.barh(i - h / 2, wo, height=h, color="#bbbbbb",
                    label="without -j" if i == 0 else None)
        if w:
            ax.barh(i + h / 2, w, height=h, color="#1f77b4",
                    label=f"with -j size={size}" if i == 0 else None)
        if wo and w:
            ax.text(max(wo, w) * 1.03, i, f"{w / wo:.2f}×",
                    va="center", fontsize=9)
    ax.set_yticks(range(len(pairs)))
    ax.set_yticklabels([p[0] for p in pairs], fontsize=9)
    ax.invert_yaxis()
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(
        lambda v, _p: f"{v:,.0f}"))
    ax.grid(axis="x", which="major", color="#dddddd")
    ax.set_axisbelow(True)
    ax.set_xlim(0, max(max(p[1] or 0, p[2] or 0) for p in pairs) * 1.3)
    ax.set_xlabel("IOPS; at the right of each pair: with / without")
    r0 = rows[0]
    ax.set_title(f"Write journal: kelpie {r0['nodes']}n/{r0['copies']}c "
                 f"without and with -j size={size}", fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9,
              frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results")
    p.add_argument("outdir")
    p.add_argument("--md")
    p.add_argument("--dpi", type=int, default=90)
    a = p.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker as ticker
    except ImportError as e:
        print(f"note: no plots: matplotlib cannot be imported by "
              f"{sys.executable} ({e}); on Debian: apt-get install "
              "python3-matplotlib", file=sys.stderr)
        return 3
    with open(a.results) as f:
        runs = json.load(f)["runs"]
    os.makedirs(a.outdir, exist_ok=True)
    written = []     # (title, path)
    for key, title, _lat in TABLES:
        path = os.path.join(a.outdir, f"latency-{key}.png")
        if plot_latency(plt, ticker, runs, key, f"Latency: {title}", path,
                        a.dpi):
            written.append((f"Latency: {title}", path))
    path = os.path.join(a.outdir, "iops-clusters.png")
    if plot_iops_clusters(plt, ticker, runs, path, a.dpi):
        written.append(("IOPS per workload and cluster", path))
    path = os.path.join(a.outdir, "scaling.png")
    if plot_scaling(plt, ticker, runs, path, a.dpi):
        written.append(("Scaling: IOPS per cluster size", path))
    path = os.path.join(a.outdir, "journal.png")
    if plot_journal(plt, ticker, runs, path, a.dpi):
        written.append(("Write journal: IOPS without and with -j", path))
    for _t, path in written:
        print(path)
    if a.md and written:
        base = os.path.dirname(os.path.abspath(a.md))
        with open(a.md, "a") as f:
            f.write("### Plots\n\n")
            for t, path in written:
                f.write(f"![{t}]({os.path.relpath(path, base)})\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
