#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""obj_sums.py: for each line "KEY PATH" on stdin, print "KEY SHA1" of the
data of the stored object file PATH: the bytes before the per-block
checksums and footer (sheep/store/csum.c), whose last 8 bytes are the data
size and the number of blocks, little-endian; as `obj_data PATH | sha1sum`
in tests/functional/common.sh, in one process for every file (the tests
check hundreds of replicas at a time, and a process costs 5-15 ms of CPU
on the test machines).  A file that cannot be read prints "KEY
unreadable:REASON"."""
import hashlib
import sys


def data_sha1(path):
    with open(path, 'rb') as f:
        f.seek(-8, 2)
        size = int.from_bytes(f.read(4), 'little')
        f.seek(0)
        h = hashlib.sha1()
        while size > 0:
            b = f.read(min(size, 1 << 20))
            if not b:
                break
            h.update(b)
            size -= len(b)
    return h.hexdigest()


def main():
    for line in sys.stdin:
        key, _, path = line.rstrip('\n').partition(' ')
        if not path:
            continue
        try:
            print(key, data_sha1(path))
        except OSError as e:
            print(key, 'unreadable:' + (e.strerror or 'error').replace(' ', '_'))


main()
