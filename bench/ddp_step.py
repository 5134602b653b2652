# SPDX-License-Identifier: MIT
"""One DDP training-step timing run (bench/ddp.sh), under uroce-launch.

    ddp_step.py gloo|uroce STEPS LAYERS WIDTH BATCH BUCKET_MB

An MLP of LAYERS square layers of WIDTH, on CPU, one thread per rank;
DDP's own set-up over gloo (a file store in DDP_STORE). gloo: DDP's
built-in allreduce over gloo (TCP); uroce: uroce's comm hook
(python/uroce/ddp.py). After 3 warm-up steps, STEPS timed steps
(forward, backward with the bucket reductions, SGD step); rank 0 prints
the median and the minimum step time in ms, the gradient bytes and the
hook calls per step.
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

mode = sys.argv[1]
steps, layers, width, batch = (int(x) for x in sys.argv[2:6])
bucket_mb = float(sys.argv[6])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", init_method="file://" + os.environ["DDP_STORE"],
                        rank=rank, world_size=world)
torch.set_num_threads(1)
torch.manual_seed(7)
mods = []
for _ in range(layers):
    mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
net = torch.nn.Sequential(*mods, torch.nn.Linear(width, 10))
model = DDP(net, bucket_cap_mb=bucket_mb)
state = None
if mode == "uroce":
    import uroce
    import uroce.ddp
    state = uroce.ddp.register(model, uroce.Comm())
opt = torch.optim.SGD(model.parameters(), lr=0.01)
g = torch.Generator().manual_seed(rank)
x = torch.randn(batch, width, generator=g)
y = torch.randint(0, 10, (batch,), generator=g)
times = []
for i in range(3 + steps):
    t0 = time.perf_counter()
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    if i >= 3:
        times.append((time.perf_counter() - t0) * 1e3)
# The slowest rank's step is the job's.
t = torch.tensor([statistics.median(times), min(times)], dtype=torch.float64)
dist.all_reduce(t, op=dist.ReduceOp.MAX)
nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
if rank == 0:
    calls = state.calls / (3 + steps) if state else float("nan")
    print("result %s median_ms %.2f min_ms %.2f grad_bytes %d hook_calls_per_step %.1f"
          % (mode, t[0].item(), t[1].item(), nbytes, calls))
if state:
    state.comm.close()
dist.destroy_process_group()
