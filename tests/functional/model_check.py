#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Model-based checker for snapshots, clones, rollback and deletion.

A seeded random sequence of operations runs against a live cluster through
dog, while an in-memory model records what every VDI and snapshot must
contain.  Every read is compared with the model.  The seed is printed first
so that a failure can be replayed with --seed.

Usage: model_check.py --dog DOG --ports P0,P1,P2 [--ops N] [--seed S]
                      [--until FILE] [--copies C] [--policy C]

--until FILE runs on after N operations until FILE exists (at most 10 N).
--copies C creates every VDI with `-c C` (a number of copies or a code D:P;
by default the cluster's policy); --policy C checks that every VDI created
or cloned lists C as its redundancy policy (`dog vdi list -r`, column 9).
"""
import argparse
import os
import random
import subprocess
import sys

SIZE = 12 << 20          # three 4 MiB objects per VDI
MAX_IO = 1 << 20


class Failure(Exception):
    pass


class Cluster:
    def __init__(self, dog, ports, rng, log, copies=None, policy=None):
        self.dog = dog
        self.ports = ports
        self.rng = rng
        self.log = log
        self.copies = copies
        self.policy = policy

    def run(self, args, data=None, port=None, check=True):
        port = port or self.rng.choice(self.ports)
        cmd = [self.dog] + args + ['-p', str(port)]
        self.log.write(' '.join(cmd) + '\n')
        p = subprocess.run(cmd, input=data, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300)
        if check and p.returncode != 0:
            raise Failure('%s: exit %d: %s' % (' '.join(cmd), p.returncode,
                                               p.stderr.decode(errors='replace')))
        return p

    def check_policy(self, name):
        if self.policy is None:
            return
        out = self.run(['vdi', 'list', '-r', name]).stdout.decode()
        got = [f[8] for f in (l.split() for l in out.splitlines())
               if len(f) > 8 and f[0] in ('=', 'c') and f[1] == name]
        if got != [self.policy]:
            raise Failure('%s: policy %s, want %s'
                          % (name, ','.join(got) or 'none', self.policy))


class Model:
    """name -> bytearray for current VDIs; (name, tag) -> bytes for snapshots"""

    def __init__(self):
        self.vdis = {}
        self.snaps = {}
        self.counter = 0

    def new_name(self, prefix):
        self.counter += 1
        return '%s%d' % (prefix, self.counter)


def op_create(c, m, rng):
    if len(m.vdis) >= 6:
        return False
    name = m.new_name('v')
    copies = ['-c', c.copies] if c.copies else []
    c.run(['vdi', 'create'] + copies + [name, str(SIZE)])
    c.check_policy(name)
    m.vdis[name] = bytearray(SIZE)
    return True


def io_range(rng):
    # object boundaries and unaligned extents both matter
    if rng.random() < 0.3:
        obj = rng.randrange(SIZE >> 22)
        off = max(0, (obj << 22) - rng.randrange(0, 8192))
    else:
        off = rng.randrange(SIZE)
    length = rng.randrange(1, MAX_IO)
    return off, min(length, SIZE - off)


def op_write(c, m, rng):
    if not m.vdis:
        return False
    name = rng.choice(sorted(m.vdis))
    off, length = io_range(rng)
    data = rng.randbytes(length)
    c.run(['vdi', 'write', name, str(off), str(length)], data=data)
    m.vdis[name][off:off + length] = data
    return True


def check(c, what, args, want, off, length):
    got = c.run(args + [str(off), str(length)]).stdout
    if got != bytes(want[off:off + length]):
        first = next((i for i in range(min(len(got), length))
                      if got[i] != want[off + i]), min(len(got), length))
        raise Failure('%s: mismatch at byte %d of [%d, +%d) (got %d bytes)'
                      % (what, off + first, off, length, len(got)))


def op_read(c, m, rng):
    if not m.vdis:
        return False
    name = rng.choice(sorted(m.vdis))
    off, length = io_range(rng)
    check(c, 'read %s' % name, ['vdi', 'read', name], m.vdis[name], off,
          length)
    return True


def op_read_snap(c, m, rng):
    if not m.snaps:
        return False
    name, tag = rng.choice(sorted(m.snaps))
    off, length = io_range(rng)
    check(c, 'read %s@%s' % (name, tag), ['vdi', 'read', name, '-s', tag],
          m.snaps[(name, tag)], off, length)
    return True


def op_snapshot(c, m, rng):
    if not m.vdis or len(m.snaps) >= 24:
        return False
    name = rng.choice(sorted(m.vdis))
    tag = m.new_name('t')
    c.run(['vdi', 'snapshot', name, '-s', tag])
    m.snaps[(name, tag)] = bytes(m.vdis[name])
    return True


def op_clone(c, m, rng):
    if not m.snaps or len(m.vdis) >= 6:
        return False
    name, tag = rng.choice(sorted(m.snaps))
    new = m.new_name('c')
    c.run(['vdi', 'clone', name, new, '-s', tag])
    c.check_policy(new)
    m.vdis[new] = bytearray(m.snaps[(name, tag)])
    return True


def op_rollback(c, m, rng):
    cands = [k for k in sorted(m.snaps) if k[0] in m.vdis]
    if not cands:
        return False
    name, tag = rng.choice(cands)
    c.run(['vdi', 'rollback', name, '-s', tag, '-f'])
    m.vdis[name] = bytearray(m.snaps[(name, tag)])
    return True


def op_delete_snap(c, m, rng):
    if not m.snaps:
        return False
    name, tag = rng.choice(sorted(m.snaps))
    c.run(['vdi', 'delete', name, '-s', tag])
    del m.snaps[(name, tag)]
    return True


def op_delete_vdi(c, m, rng):
    if not m.vdis:
        return False
    name = rng.choice(sorted(m.vdis))
    c.run(['vdi', 'delete', name])
    del m.vdis[name]
    return True


OPS = [
    (op_create, 6), (op_write, 30), (op_read, 25), (op_read_snap, 12),
    (op_snapshot, 8), (op_clone, 5), (op_rollback, 4), (op_delete_snap, 5),
    (op_delete_vdi, 3),
]


def verify_all(c, m):
    for name in sorted(m.vdis):
        for port in c.ports:
            got = c.run(['vdi', 'read', name], port=port).stdout
            if got != bytes(m.vdis[name]):
                raise Failure('final read of %s via port %d differs'
                              % (name, port))
    for (name, tag) in sorted(m.snaps):
        got = c.run(['vdi', 'read', name, '-s', tag]).stdout
        if got != m.snaps[(name, tag)]:
            raise Failure('final read of %s@%s differs' % (name, tag))


def delete_all(c, m):
    for (name, tag) in sorted(m.snaps):
        c.run(['vdi', 'delete', name, '-s', tag])
    for name in sorted(m.vdis):
        c.run(['vdi', 'delete', name])
    m.snaps.clear()
    m.vdis.clear()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--dog', required=True)
    ap.add_argument('--ports', required=True)
    ap.add_argument('--ops', type=int, default=2000)
    ap.add_argument('--seed', type=int)
    ap.add_argument('--log', default=os.devnull)
    ap.add_argument('--copies')
    ap.add_argument('--policy')
    ap.add_argument('--until')
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    print('seed %d' % seed, file=sys.stderr, flush=True)
    rng = random.Random(seed)
    funcs = [f for f, w in OPS for _ in range(w)]
    with open(a.log, 'w') as log:
        c = Cluster(a.dog, [int(p) for p in a.ports.split(',')], rng, log,
                    a.copies, a.policy)
        m = Model()
        done = 0
        counts = {}
        try:
            # --until FILE: go on after --ops until FILE exists (a test's
            # fault schedule has run its course), at most ten times as long
            while done < a.ops or (a.until and done < 10 * a.ops and
                                   not os.path.exists(a.until)):
                f = rng.choice(funcs)
                if f(c, m, rng):
                    done += 1
                    counts[f.__name__] = counts.get(f.__name__, 0) + 1
            verify_all(c, m)
            delete_all(c, m)
        except (Failure, subprocess.TimeoutExpired) as e:
            print('FAILED after %d operations (seed %d): %s'
                  % (done, seed, e), file=sys.stderr)
            return 1
    print('%d operations checked' % done)
    print(' '.join('%s=%d' % (k[3:], v) for k, v in sorted(counts.items())),
          file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
