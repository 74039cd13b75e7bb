#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Put the output of admin-examples.sh into the admin guide and the man page.

    selftests/vm/run-vm.sh --kernel 6.12 --module build/6.12/kmod/rdmashare.ko \\
        -- selftests/vm/admin-examples.sh > out.txt
    selftests/vm/update-examples.py out.txt

Each example block of Documentation/admin-guide.rst and the EXAMPLES section
of userlib/tools/rdmashare.8 is replaced by what the commands printed.
"""
import os
import sys

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
GUIDE = os.path.join(TOP, 'Documentation', 'admin-guide.rst')
MAN = os.path.join(TOP, 'userlib', 'tools', 'rdmashare.8')

TOOL = ['# rdmashare status', '# rdmashare stats -w 2 -c 1',
        '# rdmashare set sched_mode flat', '# rdmashare set qps_per_peer 99']
# (first line of the block, the text right after it, the commands)
GUIDE_BLOCKS = [
    ('    # rdma resource show qp\n', '\nEach CQ has ',
     ['# rdma resource show qp', '# rdma resource show cq']),
    ('    # rdmashare status\n', '\n``rdmashare get`` lists the tunables', TOOL),
    ('    # cat /sys/kernel/debug/rdmashare/peers/', '\nThe format is for people',
     None),
]


def sections(path):
    """{'# command': [output lines]} from the guest's output."""
    secs, cur, started = {}, None, False
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if '----- guest' in line and 'output -----' in line:
                started = True
                continue
            if not started or line.startswith('[rdmashare] vm'):
                continue
            if line.startswith('# '):
                cur = line
                secs[cur] = []
            elif cur and line != 'exit status 1':
                secs[cur].append(line.rstrip())
    return secs


def lines_of(secs, cmds):
    out = []
    for cmd in cmds:
        if cmd not in secs:
            sys.exit('update-examples: no output of "%s"' % cmd)
        out.append(cmd)
        out += secs[cmd]
    while out and not out[-1].strip():
        out.pop()
    return out


def replace(text, start, end, new):
    a = text.index(start)
    b = text.index(end, a)
    return text[:a] + new + text[b:]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    secs = sections(sys.argv[1])
    with open(GUIDE) as f:
        guide = f.read()
    for start, end, cmds in GUIDE_BLOCKS:
        if cmds is None:
            cmds = [c for c in secs if c.startswith('# cat /sys/kernel/debug/')]
        block = lines_of(secs, cmds)
        guide = replace(guide, start, end,
                        '\n'.join('    ' + l if l else '' for l in block) + '\n')
    with open(GUIDE, 'w') as f:
        f.write(guide)

    block = lines_of(secs, TOOL)
    block = [l.replace('-', '\\-') if l.startswith('# rdmashare stats') else l for l in block]
    with open(MAN) as f:
        man = f.read()
    man = replace(man, '.SH EXAMPLES\n.EX\n', '.EE\n.SH FILES',
                  '.SH EXAMPLES\n.EX\n' + '\n'.join(block) + '\n')
    with open(MAN, 'w') as f:
        f.write(man)


if __name__ == '__main__':
    main()
