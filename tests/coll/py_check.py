# SPDX-License-Identifier: MIT
"""Every collective of the Python binding (python/uroce) on numpy arrays
and on plain buffers, in place and out of place, each element checked
against numpy's result computed from every rank's inputs (each rank
makes all ranks' inputs from the printed seed). Errors must raise
UroceError or ValueError/TypeError with a reason.

Run by tests/coll/python.sh under uroce-launch:
    uroce-launch -n N /usr/bin/python3 py_check.py
"""
import array
import os
import sys

import numpy as np

sys.path.insert(0, os.environ["UROCE_PYTHON_DIR"])
import uroce  # noqa: E402

seed = int(os.environ.get("UROCE_PY_SEED", "1"))
comm = uroce.Comm()
r, n = comm.rank, comm.size
if r == 0:
    print("py_check: %d ranks, seed %d" % (n, seed), flush=True)
checks = 0


def inputs(rank, count, dtype):
    g = np.random.default_rng(seed * 1000 + rank)
    if np.dtype(dtype).kind == "f":
        return g.integers(-50, 50, count).astype(dtype)  # exact sums
    return g.integers(-20, 20, count).astype(dtype)


def same(got, want, what):
    global checks
    if not np.array_equal(got, want):
        bad = np.flatnonzero(got != want)[0]
        raise SystemExit("py_check: rank %d: %s: element %d is %r, want %r"
                         % (r, what, bad, got[bad], want[bad]))
    checks += 1


for dt in (np.float32, np.float64, np.int32, np.int64, np.float16):
    for count in (0, 1, 1000, 70000):
        allin = [inputs(k, count, dt) for k in range(n)]
        x = allin[r].copy()
        out = np.empty_like(x)
        comm.allreduce(x, out)
        same(out, np.sum(allin, axis=0).astype(dt), "allreduce %s %d" %
             (np.dtype(dt).name, count))
        comm.allreduce(x, op="max")  # in place
        same(x, np.max(allin, axis=0), "allreduce max in place")
        x = allin[r].copy()
        comm.allreduce(x, op="min")
        same(x, np.min(allin, axis=0), "allreduce min in place")

        b = allin[0].copy() if r == 0 else np.zeros(count, dt)
        comm.broadcast(b, root=0)
        same(b, allin[0], "broadcast")

        out = np.empty(count * n, dt)
        comm.allgather(allin[r], out)
        same(out, np.concatenate(allin), "allgather")

        full = [inputs(k, count * n, dt) for k in range(n)]
        blk = np.empty(count, dt)
        comm.reduce_scatter(full[r], blk)
        same(blk, np.sum(full, axis=0).astype(dt)[r * count:(r + 1) * count],
             "reduce_scatter")

        a2a = full[r].copy()
        got = np.empty_like(a2a)
        comm.alltoall(a2a, got)
        want = np.concatenate([full[k][r * count:(r + 1) * count]
                               for k in range(n)])
        same(got, want, "alltoall")
        comm.alltoall(a2a)  # in place
        same(a2a, want, "alltoall in place")

        red = np.zeros(count, dt)
        comm.reduce(allin[r], red, root=n - 1)
        if r == n - 1:
            same(red, np.sum(allin, axis=0).astype(dt), "reduce")

# alltoallv: rank k sends (j + k) % 3 + 1 elements to rank j.
sc = [(j + r) % 3 + 1 for j in range(n)]
rc = [(r + k) % 3 + 1 for k in range(n)]
send = np.arange(sum(sc), dtype=np.int64) + 100 * r
recv = np.zeros(sum(rc), np.int64)
comm.alltoallv(send, sc, recv, rc)
want, at = [], 0
for k in range(n):
    skc = [(j + k) % 3 + 1 for j in range(n)]
    off = sum(skc[:r])
    want.extend(range(100 * k + off, 100 * k + off + skc[r]))
same(recv, np.array(want, np.int64), "alltoallv")

# Plain buffers: bytearray, array.array, memoryview.
buf = array.array("f", [float(r + 1)] * 10)
comm.allreduce(buf)
same(np.array(buf), np.full(10, n * (n + 1) / 2, np.float32), "array.array")
ba = bytearray([r + 1] * 16)
comm.allreduce(ba, op="max", dtype="uint8")
same(np.frombuffer(ba, np.uint8), np.full(16, n, np.uint8), "bytearray")
src = bytes([r] * 8)
dst = bytearray(8 * n)
comm.allgather(src, dst, dtype="uint8")
same(np.frombuffer(dst, np.uint8), np.repeat(np.arange(n, dtype=np.uint8), 8),
     "bytes -> bytearray")

# Bad input: named, and nothing sent (every rank raises before the wire).
for call, err in (
        (lambda: comm.allreduce(np.zeros(4, np.complex64)), TypeError),
        (lambda: comm.allreduce(np.zeros((4, 4), np.float32)[:, 1]),
         ValueError),
        (lambda: comm.allreduce(np.zeros(4, np.float32), op="median"),
         ValueError),
        (lambda: comm.allgather(np.zeros(4, np.float32),
                                np.zeros(3, np.float32)), ValueError),
        (lambda: comm.allreduce(bytes(8), dtype="uint8"), ValueError)):
    try:
        call()
    except err as e:
        assert "uroce" in str(e), e
        checks += 1
    else:
        raise SystemExit("py_check: rank %d: no %s" % (r, err.__name__))

# Non-blocking calls: issued together, waited for in reverse order; the
# progress thread completes them while Python sleeps.
import time  # noqa: E402
allin = [inputs(k, 5000, np.float32) for k in range(n)]
a = allin[r].copy()
ag = np.empty(5000 * n, np.float32)
q1 = comm.iallreduce(a)
q2 = comm.iallgather(allin[r], ag)
q3 = comm.ibarrier()
time.sleep(0.2)
for q in (q3, q2, q1):
    q.wait()
    checks += q.test()
same(a, np.sum(allin, axis=0), "iallreduce")
same(ag, np.concatenate(allin), "iallgather")
# Point-to-point around a ring, both in one group; then a split by parity
# and two communicators in flight at once.
if n > 1:
    got = np.empty(3000, np.float32)
    with comm.group():
        qs = comm.isend(allin[r][:3000], (r + 1) % n, tag=9)
        qr = comm.irecv(got, (r - 1) % n, tag=9)
    qs.wait()
    same(qr.wait(), allin[(r - 1) % n][:3000], "irecv in a group")
sub = comm.split(r % 2, key=r)
x = allin[r].copy()
y = allin[r].copy()
qa = sub.iallreduce(x)
qb = comm.iallreduce(y)
qa.wait()
qb.wait()
same(x, np.sum(allin[r % 2::2], axis=0), "iallreduce on split(r % 2)")
same(y, np.sum(allin, axis=0), "iallreduce beside it")
# wait() here and in the on_done callback (the progress thread) at once,
# many times: the request is freed once (both used to free it: glibc
# aborted with "free(): corrupted unsorted chunks").
import threading  # noqa: E402
for i in range(200):
    z = allin[r][:256].copy()
    q = comm.iallreduce(z)
    seen = []
    q.on_done(lambda req: seen.append(req.wait() is z))
    q.wait()
    for _ in range(10000):
        if seen:
            break
        time.sleep(0.0005)
    if seen != [True]:
        raise SystemExit("py_check: rank %d: on_done saw %r" % (r, seen))
    same(z, np.sum([a[:256] for a in allin], axis=0), "iallreduce waited twice")
checks += 1
try:
    comm.close()  # a sub-communicator is still open
except uroce.UroceError:
    checks += 1
else:
    raise SystemExit("py_check: rank %d: closed a parent with a child" % r)
sub.close()

comm.barrier()
comm.close()
try:
    comm.barrier()
except uroce.UroceError:
    checks += 1
print("py_check: rank %d: %d checks passed" % (r, checks), flush=True)
