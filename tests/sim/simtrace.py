# SPDX-License-Identifier: MIT
"""One line of a uroce-sim trace (docs/sim.md "Trace files"), for the
tests that read what a generator wrote."""


def flow(line):
    """(src, dst, bytes, start_ns, tag or None, [after tags]) of a flow line."""
    f = line.split()
    tag, after = None, []
    for x in f[4:]:
        if x.startswith("tag="):
            tag = int(x[4:])
        elif x.startswith("after="):
            after = [int(t) for t in x[6:].split(",")]
    return (int(f[1]), int(f[2]), int(f[3]), int(f[0]), tag, after)
