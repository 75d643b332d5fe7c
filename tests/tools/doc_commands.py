#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""doc_commands.py: the shell commands of Kelpie's documents, run as tests.

    doc_commands.py --root DIR --ports P0,...,P7 [--with qemu]
                    --script OUT FILE...
    doc_commands.py --list [--with qemu] FILE...

Reads each FILE (Markdown, or a roff man page), takes its shell command
blocks, puts the test's ports and directories in place of the
placeholders below and writes one bash script (OUT) that runs every block
of every file in order: a functional test (tests/functional/167, 168)
runs it against a real cluster, so that a documented command that stops
working, or an option that changes, fails the test.  Prints one line per
file, "FILE: N blocks to run, M skipped", and the reason of each skipped
block on standard error.  --list prints the blocks as they will run.
Exit status 0, or 1 with the reason when a document breaks the rules.

WHICH BLOCKS

Markdown (*.md): every fenced block (```) of the file.  Its info string
says what it holds:

    ```sh     shell commands: run
    ```text, ```xml, ```yaml, ... (any other word): not commands, left alone
    ```       (no word) refused: every block says what it is

An HTML comment on the line before a block (blank lines may come
between) changes that:

    <!-- doc-test: skip REASON -->   not run (make demo, other hosts,
                                     systemd, a VM...); REASON is printed
    <!-- doc-test: needs qemu -->    needs the patched QEMU of make qemu:
                                     run only with --with qemu

Man pages (*.1 to *.9): the blocks between .nf and .fi (or .EX and .EE)
of the EXAMPLES section, with the roff escapes undone (\\- is -, \\\\ is
\\, \\fB... go).  A comment line before the block marks it as above:

    .\\" doc-test: skip REASON
    .\\" doc-test: needs qemu

A file with nothing to run is an error: a document whose commands are all
skipped is not tested.

PLACEHOLDERS: what a documented command may assume

- programs by name: sheep, dog, sheepfs (the test puts wrappers first in
  PATH); the build tree's sheep/sheep, dog/dog and sheepfs/sheepfs become
  those names.  qemu-patches/bin/ (make qemu) holds the patched QEMU
  tools where the test provides them; qemu-img, qemu-io: Debian's.
- ports: 7000 to 7005 are nodes 0 to 5, 10809 the NBD port, 9100 the
  HTTP port; each becomes one of the test's ports.  dog, sheep and sheepfs
  without -p use 7000 (node 0), as without the test (the test sets
  SHEEPDOG_DOG_PORT and its wrappers add -p); a legacy QEMU name without a
  host, sheepdog:VDI, gets 127.0.0.1 and node 0's port.
- hosts: 127.0.0.1 only.  A block that names other hosts is skipped.
- paths: /var/lib/kelpie, /tmp, /mnt, /backup, /srv and /run become
  directories under the test's (--root); relative names are in its
  working directory ROOT/work, which holds image.raw (8 MiB of random
  data) and, with --with qemu, debian.qcow2 (a small qcow2 image).
  sheep without -c joins local:/tmp/kelpie-local (its default), which
  becomes one under the test's directory too.
- VDI names: concrete ones (disk0, vm0) are used as they are.  The
  capitalised placeholders of the runbooks stand for:
      VDI       disk0 (the test creates it, SIZE bytes, written)
      SIZE      64M
      SNAPSHOT  old (a snapshot of disk0 the test takes)
      RESTORED  restored
      VDI2      disk0-copy
      ID        the newest snapshot id of restored (looked up when run)
      NODE      1 (a node's index in dog node list)
- confirmation prompts: every command's standard input is a file holding
  "yes" unless the command redirects it, so dog's questions are answered
  yes.

HOW THEY RUN

One bash process runs all blocks in document order (files in the order
given), so a later block sees the cluster, variables and files of the
earlier ones.  Each command line (with its \\ continuations) runs under
set -e and pipefail; the first one that fails stops the script, which
names the document line, the command and its exit status.  Here
documents (<<) are refused: the line-by-line runner cannot feed them.
At the end the script prints "FILE: N blocks run" per file.
"""

import argparse
import os
import re
import sys

PATH_ROOTS = ('/var/lib/kelpie', '/tmp', '/mnt', '/backup', '/srv', '/run')

# capitalised placeholders (whole words) -> the text that replaces them
NAMES = {
    'VDI': 'disk0',
    'SIZE': '64M',
    'SNAPSHOT': 'old',
    'RESTORED': 'restored',
    'VDI2': 'disk0-copy',
    'NODE': '1',
    'ID': "$(dog vdi list -r restored | "
          "awk '$1 == \"s\" { id = $3 } END { print id }')",
}


class DocError(Exception):
    pass


class Block:
    def __init__(self, path, line, text, mark):
        self.path = path        # the document
        self.line = line        # line number of the block's first line
        self.text = text        # the commands, as written
        self.mark = mark        # None, ('skip', reason) or ('needs', what)


def parse_mark(s, path, lineno):
    s = s.strip()
    m = re.match(r'doc-test:\s*(skip|needs)\b\s*(.*)$', s)
    if not m:
        raise DocError('%s:%d: unknown doc-test comment "%s" (skip REASON '
                       'or needs qemu)' % (path, lineno, s))
    what, arg = m.group(1), m.group(2).strip()
    if what == 'skip' and not arg:
        raise DocError('%s:%d: doc-test: skip needs a reason'
                       % (path, lineno))
    if what == 'needs' and arg != 'qemu':
        raise DocError('%s:%d: doc-test: needs "%s": only qemu is known'
                       % (path, lineno, arg))
    return (what, arg)


def markdown_blocks(path, lines):
    blocks = []
    mark = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r'\s*<!--\s*(doc-test:.*?)\s*-->\s*$', line)
        if m:
            mark = parse_mark(m.group(1), path, i + 1)
            i += 1
            continue
        m = re.match(r'(\s*)(```+)(.*)$', line)
        if not m:
            if line.strip():
                mark = None     # a mark applies to the next block only
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        start = i + 1
        body = []
        i += 1
        while i < len(lines) and not re.match(
                r'\s*' + fence + r'\s*$', lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(
                indent) else lines[i])
            i += 1
        if i >= len(lines):
            raise DocError('%s:%d: block not closed' % (path, start))
        i += 1
        if not info:
            raise DocError('%s:%d: a block without a language: write ```sh '
                           'for commands, ```text (or the language) for '
                           'the rest' % (path, start))
        lang = info.split()[0]
        if lang == 'sh':
            blocks.append(Block(path, start + 1, body, mark))
        elif mark:
            raise DocError('%s:%d: a doc-test mark before a ```%s block, '
                           'which is not run anyway' % (path, start, lang))
        mark = None
    return blocks


ROFF_ESCAPES = {
    '&': '', '-': '-', 'e': '\\', '\\': '\\', ' ': ' ',
    '(aq': "'", '(dq': '"', '(ga': '`', '(ti': '~', '(ha': '^',
}


def unroff(s, path, lineno):
    """the text man shows for one line of a .nf block"""
    def esc(m):
        e = m.group(1)
        if e.startswith('f'):
            return ''           # a font change
        if e in ROFF_ESCAPES:
            return ROFF_ESCAPES[e]
        # anything else would show as something the harness cannot
        # know; a lone \ at the end of a line joins it to the next one
        raise DocError('%s:%d: roff escape \\%s the harness does not '
                       'know (write \\\\ for a backslash)'
                       % (path, lineno, e))
    return re.sub(r'\\(f\[[^]]*\]|f\(..|f.|\(..|.|$)', esc, s)


def roff_blocks(path, lines):
    blocks = []
    in_examples = False
    mark = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('.SH'):
            in_examples = line.split(None, 1)[1:] == ['EXAMPLES'] or \
                line.strip() == '.SH "EXAMPLES"'
            i += 1
            continue
        if not in_examples:
            i += 1
            continue
        m = re.match(r'\.\\"\s*(doc-test:.*)$', line)
        if m:
            mark = parse_mark(m.group(1), path, i + 1)
            i += 1
            continue
        if line.strip() in ('.nf', '.EX'):
            end = '.fi' if line.strip() == '.nf' else '.EE'
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != end:
                ln = lines[i]
                i += 1
                if ln.startswith('.\\"') or ln.startswith('\'\\"'):
                    continue
                if ln.startswith('.') or ln.startswith("'"):
                    if ln.strip() in ('.br', '.sp', '.PP'):
                        continue
                    raise DocError('%s:%d: roff request inside an example '
                                   'block: %s' % (path, i, ln))
                body.append(unroff(ln, path, i))
            if i >= len(lines):
                raise DocError('%s:%d: .nf without .fi' % (path, start))
            blocks.append(Block(path, start + 1, body, mark))
            mark = None
        elif line.strip() and not line.startswith('.\\"'):
            mark = None
        i += 1
    return blocks


def logical_lines(block):
    """(document line, command) pairs: continuation lines joined"""
    out = []
    cur = None
    for n, ln in enumerate(block.text):
        lineno = block.line + n
        if cur is None:
            if not ln.strip() or ln.lstrip().startswith('#'):
                continue
            cur = [lineno, ln]
        else:
            cur[1] += '\n' + ln
        if ln.endswith('\\'):
            continue
        out.append(tuple(cur))
        cur = None
    if cur is not None:
        raise DocError('%s:%d: the block ends with a continuation line'
                       % (block.path, cur[0]))
    for lineno, cmd in out:
        if re.search(r'<<', re.sub(r"'[^']*'", '', cmd)):
            raise DocError('%s:%d: here documents cannot run here: %s'
                           % (block.path, lineno, cmd))
    return out


def substitute(cmd, root, ports):
    # programs of the build tree
    cmd = re.sub(r'(?<![\w./-])(dog|sheepfs|sheep)/\1\b', r'\1', cmd)

    # ports
    def port(m):
        p = int(m.group(0))
        if 7000 <= p <= 7005:
            return str(ports[p - 7000])
        if p == 10809:
            return str(ports[6])
        if p == 9100:
            return str(ports[7])
        return m.group(0)
    cmd = re.sub(r'(?<![\w.])(700[0-5]|10809|9100)(?![\w.])', port, cmd)

    # a legacy QEMU name without a host: sheepdog:VDI
    cmd = re.sub(r'\bsheepdog:([A-Za-z_][\w.-]*)(?=[\s:\'"]|$)',
                 lambda m: 'sheepdog:127.0.0.1:%d:%s' % (ports[0],
                                                        m.group(1)), cmd)

    # absolute paths
    roots = '|'.join(re.escape(r) for r in PATH_ROOTS)
    cmd = re.sub(r'(^|[\s=:<>,\'"(])(' + roots + r')(?=/|[\s\'",;)]|$)',
                 lambda m: m.group(1) + root + m.group(2), cmd)

    # capitalised placeholders
    cmd = re.sub(r'\b(' + '|'.join(NAMES) + r')\b',
                 lambda m: NAMES[m.group(1)], cmd)
    return cmd


def shq(s):
    return "'" + s.replace("'", "'\\''") + "'"


def read_blocks(path):
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    if path.endswith('.md'):
        return markdown_blocks(path, lines)
    if re.search(r'\.[1-9]$', path):
        return roff_blocks(path, lines)
    raise DocError('%s: neither Markdown (.md) nor a man page (.1-.9)'
                   % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default='/ROOT')
    ap.add_argument('--ports', default='7000,7001,7002,7003,7004,7005,'
                    '10809,9100')
    ap.add_argument('--with', dest='with_', action='append', default=[],
                    choices=['qemu'])
    ap.add_argument('--script')
    ap.add_argument('--list', action='store_true')
    ap.add_argument('files', nargs='+')
    a = ap.parse_args()
    ports = [int(p) for p in a.ports.split(',')]
    if len(ports) != 8:
        ap.error('--ports takes 8 ports')
    root = a.root.rstrip('/')

    script = ['#!/bin/bash',
              '# generated by tests/tools/doc_commands.py: do not edit',
              'set -eE -o pipefail',
              'export SHEEPDOG_DOG_PORT=%d' % ports[0],
              'DOC_YES=%s/yes' % shq(root),
              'echo yes >"$DOC_YES"',
              'mkdir -p %s' % ' '.join(shq(root + r) for r in PATH_ROOTS),
              'cd %s/work' % shq(root),
              'doc_at=',
              'trap \'echo "FAIL: $doc_at: exit $?" >&2\' ERR']
    try:
        for path in a.files:
            blocks = read_blocks(path)
            name = os.path.relpath(path)
            run = skipped = 0
            for b in blocks:
                cmds = logical_lines(b)
                if not cmds:
                    raise DocError('%s:%d: a ```sh block without a command'
                                   % (path, b.line))
                if b.mark and b.mark[0] == 'skip':
                    print('%s:%d: skipped: %s' % (name, b.line, b.mark[1]),
                          file=sys.stderr)
                    skipped += 1
                    continue
                if b.mark and b.mark[0] == 'needs' and \
                        b.mark[1] not in a.with_:
                    print('%s:%d: skipped: needs %s' % (name, b.line,
                                                        b.mark[1]),
                          file=sys.stderr)
                    skipped += 1
                    continue
                run += 1
                if a.list:
                    print('== %s:%d' % (name, b.line))
                script.append('echo "== %s:%d" >&2' % (name, b.line))
                for lineno, cmd in cmds:
                    cmd = substitute(cmd, root, ports)
                    if a.list:
                        print(cmd)
                    script.append('doc_at=%s' % shq('%s:%d: %s' % (
                        name, lineno, cmd.replace('\n', ' '))))
                    script.append('echo "+ $doc_at" >&2')
                    script.append('{ %s\n} <"$DOC_YES"' % cmd)
            if run == 0:
                raise DocError('%s: no block to run' % path)
            print('%s: %d block%s to run, %d skipped' % (
                name, run, '' if run == 1 else 's', skipped))
            script.append('echo %s' % shq('%s: %d block%s run' % (
                name, run, '' if run == 1 else 's')))
    except (DocError, OSError) as e:
        print('doc_commands: %s' % e, file=sys.stderr)
        return 1
    if a.script:
        with open(a.script, 'w') as f:
            f.write('\n'.join(script) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
