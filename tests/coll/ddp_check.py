# SPDX-License-Identifier: MIT
"""uroce's PyTorch DDP hook (python/uroce/ddp.py) against gloo's own
allreduce, under uroce-launch (tests/coll/torch.sh).

Two DDP copies of one small MLP (same initial weights), one with DDP's
built-in allreduce over gloo, one with uroce's hook; torch.distributed is
initialised with gloo (a file store) for DDP's own set-up. A few SGD steps
on CPU, every rank with its own random batch: after every backward pass
the two copies' gradients must agree to float tolerance (both average
over the ranks), and differ from this rank's own local gradients (so
something was reduced); the hook must have run for every bucket (several
per step once DDP has rebuilt its buckets after the first), and every
future must have been completed by uroce's progress thread, not the
training thread.
"""
import os
import sys

sys.path.insert(0, os.environ["UROCE_PYTHON_DIR"])

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import uroce  # noqa: E402
import uroce.ddp  # noqa: E402

STEPS = 3


def net():
    torch.manual_seed(1234)
    return torch.nn.Sequential(
        torch.nn.Linear(64, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10))


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="file://" +
                            os.environ["TORCH_STORE"], rank=rank,
                            world_size=world)
    torch.set_num_threads(1)
    comm = uroce.Comm()
    # Small buckets (2.3 MB of gradients; DDP's first bucket holds 1 MiB
    # whatever the cap): several per step, several allreduces in flight.
    ref = DDP(net(), bucket_cap_mb=0.25)
    mine = DDP(net(), bucket_cap_mb=0.25)
    local = net()
    state = uroce.ddp.register(mine, comm)
    opts = [torch.optim.SGD(m.parameters(), lr=0.05) for m in (ref, mine, local)]
    fails = 0
    worst = 0.0
    calls = []
    for step in range(STEPS):
        g = torch.Generator().manual_seed(1000 * step + rank)
        x = torch.randn(32, 64, generator=g)
        y = torch.randint(0, 10, (32,), generator=g)
        before = state.calls
        for m, o in zip((ref, mine, local), opts):
            o.zero_grad()
            F.cross_entropy(m(x), y).backward()
        calls.append(state.calls - before)
        for (name, a), b, c in zip(ref.named_parameters(), mine.parameters(),
                                   local.parameters()):
            d = (a.grad - b.grad).abs().max().item()
            worst = max(worst, d)
            if not torch.allclose(a.grad, b.grad, rtol=1e-5, atol=1e-7):
                print("rank %d: FAIL step %d %s: uroce's gradient differs "
                      "from gloo's by %g" % (rank, step, name, d))
                fails += 1
            if world > 1 and torch.allclose(b.grad, c.grad):
                print("rank %d: FAIL step %d %s: the gradient is the local "
                      "one (not reduced)" % (rank, step, name))
                fails += 1
        for o in opts[:2]:
            o.step()
        local.load_state_dict(mine.module.state_dict())
    # Step 0 has one bucket; DDP then rebuilds them by the cap.
    if calls[0] < 1 or min(calls[1:]) < 2:
        print("rank %d: FAIL hook calls per step %s, want 1, then 2 or more" %
              (rank, calls))
        fails += 1
    if state.by_library != state.calls:
        print("rank %d: FAIL %d of %d futures completed by uroce's thread" %
              (rank, state.by_library, state.calls))
        fails += 1
    # The copies stayed in step: same weights after the optimiser steps.
    for a, b in zip(ref.parameters(), mine.parameters()):
        if not torch.allclose(a, b, rtol=1e-5, atol=1e-6):
            print("rank %d: FAIL weights drifted apart" % rank)
            fails += 1
            break
    print("rank %d: hook calls per step %s, %d futures completed by uroce's "
          "progress thread, largest gradient difference to gloo %.3g" %
          (rank, calls, state.by_library, worst))
    comm.close()
    dist.destroy_process_group()
    if fails:
        sys.exit(1)
    print("rank %d: ddp checks passed" % rank)


main()
