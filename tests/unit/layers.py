#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Check that sheep's object files call one way through the layers of
sheep/layers.txt.  Prints one line per check and 'N passed, N failed'."""
import glob
import os
import subprocess
import sys


def load_ranks(path):
    ranks = {}
    for line in open(path):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        rank, name = line.split()
        ranks[name] = int(rank)
    return ranks


def rank_of(ranks, unit):
    """unit: a path under sheep/ without .o, e.g. 'gw/gateway'"""
    best = None
    for name, rank in ranks.items():
        stem = name[:-2] if name.endswith('.c') else name
        if unit == stem or unit.startswith(stem + '/'):
            if best is None or len(stem) > len(best[0]):
                best = (stem, rank)
    return None if best is None else best[1]


def folder(unit):
    return unit.rsplit('/', 1)[0] if '/' in unit else ''


def symbols(obj):
    out = subprocess.run(['nm', obj], capture_output=True, text=True,
                         check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in 'TDBRCG':
            defined.add(f[2])
        elif len(f) == 2 and f[0] == 'U':
            undefined.add(f[1])
    return defined, undefined


def graph(build):
    objs = sorted(glob.glob(os.path.join(build, 'sheep', '**', '*.o'),
                            recursive=True))
    defs, uses = {}, {}
    for o in objs:
        unit = os.path.relpath(o, os.path.join(build, 'sheep'))[:-2]
        defs[unit], uses[unit] = symbols(o)
    owner = {s: u for u, d in defs.items() for s in d}
    edges = {}
    for u, names in uses.items():
        for s in names:
            if s in owner and owner[s] != u:
                edges.setdefault((u, owner[s]), set()).add(s)
    return list(defs), edges


def violations(units, edges, ranks):
    bad = []
    for u in units:
        if rank_of(ranks, u) is None:
            bad.append('%s: not in layers.txt' % u)
    for (a, b), names in sorted(edges.items()):
        ra, rb = rank_of(ranks, a), rank_of(ranks, b)
        if ra is None or rb is None:
            continue
        same = folder(a) == folder(b)
        if rb > ra or (rb == ra and not same):
            bad.append('%s (rank %d) calls up into %s (rank %d): %s' %
                       (a, ra, b, rb, ' '.join(sorted(names))))
        if a < b and (b, a) in edges:
            bad.append('%s and %s call each other' % (a, b))
    return bad


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else 'build'
    ranks = load_ranks('sheep/layers.txt')
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print('%s %s' % ('ok  ' if ok else 'FAIL', what))
        if ok:
            passed += 1
        else:
            failed += 1

    # the checker itself: an upward call and a pair must be caught
    fake = {('store/plain', 'core/request'): {'x'},
            ('ops/ops', 'gw/gateway'): {'y'},
            ('gw/gateway', 'ops/ops'): {'z'}}
    found = violations(['store/plain', 'core/request', 'ops/ops',
                        'gw/gateway'], fake, ranks)
    check(len(found) == 3, 'self-test: finds 2 upward calls and 1 pair')

    units, edges = graph(build)
    check(len(units) > 10, 'found %d sheep object files' % len(units))
    for v in violations(units, edges, ranks):
        check(False, v)
    check(True, '%d calls between files checked' % len(edges))
    for d in sorted(set(folder(u) for u in units) - {''}):
        check(os.path.isfile(os.path.join('sheep', d, 'README.md')),
              'sheep/%s/README.md says what the folder owns' % d)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
