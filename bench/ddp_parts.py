# SPDX-License-Identifier: MIT
"""Where a DDP step's time goes (bench/ddp.sh parts), under uroce-launch.

    ddp_parts.py STEPS LAYERS WIDTH BATCH BUCKET_MB

One process per rank holds two copies of the same MLP (ddp_step.py's):
one under DDP's built-in allreduce over gloo, one with uroce's comm hook
(python/uroce/ddp.py). Steps interleave, so a machine drifting between
loaded and quiet minutes weighs on both alike:
  gloo     a training step, DDP's gloo allreduce
  uroce    a training step, uroce's hook
  nosync   a training step of the gloo model inside DDP's no_sync(): no
           gradient reduction at all, the floor any hook can reach
  ar_gloo  the step's buckets alone (same sizes), dist.all_reduce(async)
           on each, then wait for all: gloo's communication time
  ar_uroce the same with uroce's iallreduce (average), then wait
  hook_py  the hook's Python, issue to return, per step (uroce's model)
Rank 0 prints, per part, the median over steps of the slowest rank's
time (ms), and the bucket sizes.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.environ["UROCE_PYTHON_DIR"])

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import uroce  # noqa: E402
import uroce.ddp  # noqa: E402

steps, layers, width, batch = (int(x) for x in sys.argv[1:5])
bucket_mb = float(sys.argv[5])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", init_method="file://" + os.environ["DDP_STORE"],
                        rank=rank, world_size=world)
torch.set_num_threads(1)


def net():
    torch.manual_seed(7)
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods, torch.nn.Linear(width, 10))


mg = DDP(net(), bucket_cap_mb=bucket_mb)
mu = DDP(net(), bucket_cap_mb=bucket_mb)
comm = uroce.Comm()
state = uroce.ddp.HookState(comm)
hook_s = [0.0]
sizes = []


def timed_hook(st, bucket):
    """uroce.ddp.allreduce_hook, plus the clock around it."""
    t0 = time.perf_counter()
    fut = uroce.ddp.allreduce_hook(st, bucket)
    hook_s[0] += time.perf_counter() - t0
    sizes.append(bucket.buffer().numel())
    return fut


mu.register_comm_hook(state, timed_hook)
og = torch.optim.SGD(mg.parameters(), lr=0.01)
ou = torch.optim.SGD(mu.parameters(), lr=0.01)
g = torch.Generator().manual_seed(rank)
x = torch.randn(batch, width, generator=g)
y = torch.randint(0, 10, (batch,), generator=g)


def step(model, opt, nosync=False):
    t0 = time.perf_counter()
    opt.zero_grad()
    if nosync:
        with model.no_sync():
            F.cross_entropy(model(x), y).backward()
    else:
        F.cross_entropy(model(x), y).backward()
    opt.step()
    return (time.perf_counter() - t0) * 1e3


parts = {k: [] for k in ("gloo", "uroce", "nosync", "ar_gloo", "ar_uroce", "hook_py")}
bufs = None
for i in range(3 + steps):
    tg = step(mg, og)
    hook_s[0] = 0.0
    del sizes[:]
    tu = step(mu, ou)
    th = hook_s[0] * 1e3
    tn = step(mg, og, nosync=True)
    if bufs is None:
        bufs = [torch.ones(n) for n in sizes]
    dist.barrier()
    t0 = time.perf_counter()
    for w in [dist.all_reduce(b, async_op=True) for b in bufs]:
        w.wait()
    tag = (time.perf_counter() - t0) * 1e3
    dist.barrier()
    t0 = time.perf_counter()
    reqs = [comm.iallreduce(b.numpy(), op="avg") for b in bufs]
    for q in reqs:
        q.wait()
    tau = (time.perf_counter() - t0) * 1e3
    if i >= 3:
        for k, v in zip(parts, (tg, tu, tn, tag, tau, th)):
            parts[k].append(v)
t = torch.tensor([statistics.median(v) for v in parts.values()], dtype=torch.float64)
dist.all_reduce(t, op=dist.ReduceOp.MAX)
if rank == 0:
    print("parts " + " ".join("%s %.2f" % (k, v) for k, v in zip(parts, t.tolist()))
          + " buckets " + ",".join("%.1fMB" % (n * 4 / 1e6) for n in sizes))
comm.close()
dist.destroy_process_group()
