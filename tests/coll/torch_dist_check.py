# SPDX-License-Identifier: MIT
"""torch.distributed over uroce's backend (python/uroce/dist.py), under
uroce-launch (tests/coll/torch.sh), 3 ranks.

Every call the backend supports, through torch.distributed's own
functions, against values each rank computes alone: all_reduce (each
reduction, several types, async with computation between issue and
wait), broadcast, all_gather (list and into one tensor), reduce_scatter
(list and from one tensor), all_to_all_single (even and uneven splits),
all_to_all, reduce, gather, scatter, send/recv round the ring with tags,
barrier, a new_group of ranks 0 and 1 beside the world; then the refusals
(non-contiguous tensor, an unsupported reduction, recv from any source).
"""
import os
import sys
import time

sys.path.insert(0, os.environ["UROCE_PYTHON_DIR"])

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import uroce.dist  # noqa: E402,F401 -- registers the "uroce" backend

checks = 0


def same(got, want, what):
    global checks
    if not torch.equal(got, want):
        raise AssertionError("rank %d: %s: got %s, want %s" %
                             (dist.get_rank(), what, got[:8], want[:8]))
    checks += 1


def refused(exc, fn, what, needle):
    global checks
    try:
        fn()
    except exc as e:
        if needle not in str(e):
            raise AssertionError("%s: refused with %r, no %r" % (what, e,
                                                                  needle))
        checks += 1
        return
    raise AssertionError("%s: not refused" % what)


def main():
    r, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("uroce", init_method="file://" +
                            os.environ["TORCH_STORE"], rank=r, world_size=n)
    torch.set_num_threads(1)
    assert dist.get_backend() == "uroce", dist.get_backend()
    ranks = torch.arange(n)

    # all_reduce: each reduction, several types.
    for dt in (torch.float32, torch.float64, torch.int32, torch.int64,
               torch.bfloat16, torch.float16):
        t = torch.full((1000,), r + 1, dtype=dt)
        dist.all_reduce(t)
        same(t, torch.full((1000,), n * (n + 1) // 2, dtype=dt), "sum %s" % dt)
    x = torch.arange(5, dtype=torch.int64) * (r + 1)
    for op, want in ((dist.ReduceOp.MAX, torch.arange(5) * n),
                     (dist.ReduceOp.MIN, torch.arange(5)),
                     (dist.ReduceOp.PRODUCT,
                      torch.arange(5) ** n * int(torch.prod(ranks + 1)))):
        t = x.clone()
        dist.all_reduce(t, op=op)
        same(t, want, "all_reduce %s" % op)
    if hasattr(dist.ReduceOp, "AVG"):
        t = torch.full((64,), float(2 * r), dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        same(t, torch.full((64,), float(n - 1), dtype=torch.float64), "avg")

    # Async: 4 MiB issued, the thread sleeps, the library completes it.
    big = torch.full((1 << 20,), float(r), dtype=torch.float32)
    w = dist.all_reduce(big, async_op=True)
    time.sleep(0.05)
    w.wait()
    same(big, torch.full((1 << 20,), float(sum(range(n)))), "async all_reduce")

    # broadcast from rank 1.
    t = torch.full((333,), r, dtype=torch.int32)
    dist.broadcast(t, src=1)
    same(t, torch.full((333,), 1, dtype=torch.int32), "broadcast")

    # all_gather: a list, and one tensor.
    mine = torch.arange(7, dtype=torch.float32) + 100 * r
    outs = [torch.empty(7) for _ in range(n)]
    dist.all_gather(outs, mine)
    for j in range(n):
        same(outs[j], torch.arange(7, dtype=torch.float32) + 100 * j,
             "all_gather[%d]" % j)
    whole = torch.empty(n * 7)
    dist.all_gather_into_tensor(whole, mine)
    same(whole, torch.cat([torch.arange(7, dtype=torch.float32) + 100 * j
                           for j in range(n)]), "all_gather into a tensor")

    # reduce_scatter: block j of every rank's input, summed, lands on j.
    ins = [torch.full((9,), float(r * 10 + j)) for j in range(n)]
    out = torch.empty(9)
    dist.reduce_scatter(out, ins)
    same(out, torch.full((9,), float(sum(k * 10 + r for k in range(n)))),
         "reduce_scatter")
    flat = torch.cat(ins)
    out = torch.empty(9)
    dist.reduce_scatter_tensor(out, flat)
    same(out, torch.full((9,), float(sum(k * 10 + r for k in range(n)))),
         "reduce_scatter from a tensor")

    # all_to_all_single, even: row block j goes to rank j.
    inp = torch.arange(n * 4, dtype=torch.int64) + 1000 * r
    out = torch.empty(n * 4, dtype=torch.int64)
    dist.all_to_all_single(out, inp)
    same(out, torch.cat([torch.arange(4 * r, 4 * r + 4) + 1000 * j
                         for j in range(n)]), "all_to_all_single")
    # Uneven: rank r sends j + 1 rows of 3 to rank j, each row r.
    isz = [j + 1 for j in range(n)]
    osz = [r + 1] * n
    inp = torch.full((sum(isz), 3), float(r))
    out = torch.empty(sum(osz), 3)
    dist.all_to_all_single(out, inp, osz, isz)
    same(out, torch.cat([torch.full((r + 1, 3), float(j)) for j in range(n)]),
         "all_to_all_single uneven")
    # all_to_all of lists, sizes per pair.
    ins = [torch.full((r + j + 1,), float(r * n + j)) for j in range(n)]
    outs = [torch.empty(j + r + 1) for j in range(n)]
    dist.all_to_all(outs, ins)
    for j in range(n):
        same(outs[j], torch.full((j + r + 1,), float(j * n + r)),
             "all_to_all[%d]" % j)

    # reduce to rank 2, gather to 0, scatter from 1.
    t = torch.full((50,), float(r + 1))
    dist.reduce(t, dst=2)
    if r == 2:
        same(t, torch.full((50,), float(n * (n + 1) // 2)), "reduce")
    t = torch.full((5,), float(r))
    g = [torch.empty(5) for _ in range(n)] if r == 0 else None
    dist.gather(t, g, dst=0)
    if r == 0:
        for j in range(n):
            same(g[j], torch.full((5,), float(j)), "gather[%d]" % j)
    out = torch.empty(6)
    s = [torch.full((6,), float(10 + j)) for j in range(n)] if r == 1 \
        else None
    dist.scatter(out, s, src=1)
    same(out, torch.full((6,), float(10 + r)), "scatter")

    # send/recv round the ring, two tags, the receive first on odd ranks.
    nxt, prv = (r + 1) % n, (r - 1) % n
    a, b = torch.full((100,), float(r)), torch.full((100,), float(-r))
    ga, gb = torch.empty(100), torch.empty(100)
    ws = [dist.isend(a, nxt, tag=1), dist.isend(b, nxt, tag=2)]
    ws += [dist.irecv(ga, prv, tag=1), dist.irecv(gb, prv, tag=2)]
    for w in ws:
        w.wait()
    same(ga, torch.full((100,), float(prv)), "recv tag 1")
    same(gb, torch.full((100,), float(-prv)), "recv tag 2")
    dist.barrier()

    # A group of ranks 0 and 1 (every rank calls new_group).
    sub = dist.new_group([0, 1], backend="uroce")
    if r < 2:
        t = torch.full((10,), float(r + 5))
        dist.all_reduce(t, group=sub)
        same(t, torch.full((10,), 11.0), "all_reduce in new_group([0, 1])")
        t = torch.full((10,), 1.0)
        dist.all_reduce(t)
        same(t, torch.full((10,), float(n)), "world after the group")
    else:
        t = torch.full((10,), 1.0)
        dist.all_reduce(t)
        same(t, torch.full((10,), float(n)), "world beside the group")

    # Refusals, named.
    nc = torch.zeros(8, 8).t()
    refused(ValueError, lambda: dist.all_reduce(nc), "non-contiguous",
            "contiguous")
    refused(ValueError, lambda: dist.all_reduce(torch.zeros(4, dtype=torch.int32),
                                                op=dist.ReduceOp.BAND),
            "BAND", "not supported")
    refused(Exception, lambda: dist.recv(torch.zeros(4)), "recv any source",
            "name their peer")
    dist.barrier()
    print("rank %d: %d torch.distributed checks passed" % (r, checks))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
