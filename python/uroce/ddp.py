# SPDX-License-Identifier: MIT
"""PyTorch DistributedDataParallel communication hook over uroce.

DDP hands each gradient bucket to the hook as soon as the backward pass has
filled it; the hook issues uroce's non-blocking allreduce (average) on the
bucket in place and returns a torch.futures.Future at once. The library's
progress thread runs the allreduce while backward goes on with the next
buckets, and its completion callback sets the future's result: the
training thread never polls. DDP waits for the futures at the end of
backward and copies the averaged buckets into the gradients.

    import torch.distributed as dist, uroce, uroce.ddp
    dist.init_process_group("gloo", ...)   # DDP's own set-up only
    model = torch.nn.parallel.DistributedDataParallel(net)
    state = uroce.ddp.register(model)       # or pass comm=uroce.Comm(...)

Buckets must be CPU tensors (uroce reduces host memory) of float32,
float64, float16 or bfloat16. The hook needs the progress thread
(UROCE_COLL_PROGRESS=1, the default). Every rank calls the hook for the
same buckets in the same order (DDP does), which is the order rule of
uroce's collectives.
"""
import os
import threading

import torch

from . import Comm, UroceError

__all__ = ["HookState", "allreduce_hook", "register"]

_TYPES = {torch.float32: "float32", torch.float64: "float64",
          torch.float16: "float16", torch.bfloat16: "bfloat16"}


class HookState:
    """The hook's state: the uroce communicator and counters.

    comm: a uroce.Comm over the same ranks as DDP's process group (None:
    one made from the environment, on MASTER_PORT + 1, since torch's own
    rendezvous may hold MASTER_PORT). calls: buckets reduced;
    by_library: futures completed by the library's thread (all of them,
    unless a failure was raised at issue).
    """

    def __init__(self, comm=None):
        if os.environ.get("UROCE_COLL_PROGRESS") == "0":
            raise UroceError("uroce.ddp: the hook needs the progress thread "
                             "(UROCE_COLL_PROGRESS=0 is set)")
        if comm is None:
            port = int(os.environ.get("MASTER_PORT", "29500")) + 1
            comm = Comm(master_port=port)
        self.comm = comm
        self.calls = 0
        self.bytes = 0
        self.by_library = 0
        self._lock = threading.Lock()
        self._caller = None


def allreduce_hook(state, bucket):
    """DDP comm hook: average the bucket over the ranks with uroce.

    Returns a Future that uroce's progress thread completes with the
    bucket (averaged in place), as DDP's default allreduce does.
    """
    t = bucket.buffer()
    dt = _TYPES.get(t.dtype)
    if dt is None or t.device.type != "cpu" or not t.is_contiguous():
        raise TypeError("uroce.ddp: buckets of contiguous CPU float tensors "
                        "only, not %s on %s" % (t.dtype, t.device))
    n = state.comm.size
    if dt in ("float16", "bfloat16"):
        # Divide first, as DDP's default does: a sum of halves overflows.
        t.div_(n)
        op = "sum"
    else:
        op = "avg"
    fut = torch.futures.Future()
    caller = threading.get_ident()

    def done(req):
        try:
            req.wait()  # complete already: frees the request, or raises
            if threading.get_ident() != caller:
                with state._lock:
                    state.by_library += 1
            fut.set_result(t)
        except Exception as e:  # noqa: BLE001 -- handed to DDP's wait
            fut.set_exception(e)

    comm = state.comm
    # Held in a group until the callback is set: the library's thread,
    # not this one, completes every bucket.
    with comm.group():
        req = comm._iallreduce_at(t.data_ptr(), t.numel(), dt, op, t, (t,))
        req.on_done(done)
    state.calls += 1
    state.bytes += t.numel() * t.element_size()
    return fut


def register(model, comm=None):
    """Register uroce's hook on a DistributedDataParallel model; returns
    its HookState (calls, by_library)."""
    state = HookState(comm)
    model.register_comm_hook(state, allreduce_hook)
    return state
