# SPDX-License-Identifier: MIT
"""A torch.distributed backend named "uroce" (PyTorch 1.13, CPU tensors).

    import torch.distributed as dist, uroce.dist
    dist.init_process_group("uroce", init_method=..., rank=r, world_size=n)
    dist.all_reduce(t)                       # uroce_iallreduce, then wait
    w = dist.all_to_all_single(out, inp, async_op=True)   # overlaps
    sub = dist.new_group([0, 1], backend="uroce")

Every collective is one of uroce's non-blocking calls; its request's
completion (by the library's progress thread) completes the Work's
future, so async_op=True overlaps computation and wait() blocks only for
what is left. The ranks meet through torch's own store: rank 0 of each
group publishes a free TCP port on its address (the one that reaches
MASTER_ADDR, or 127.0.0.1), and the group's uroce communicator
rendezvouses there. A new_group gets a communicator of its own.

Supported: all_reduce (sum, product, min, max; avg too), reduce,
broadcast, all_gather, all_gather_into_tensor (_all_gather_base),
reduce_scatter, _reduce_scatter_base, all_to_all, all_to_all_single
(even and uneven splits), gather, scatter, barrier, send and recv (with
tags >= 0). Tensors: contiguous CPU tensors of float32, float64,
float16, bfloat16, int32, int64 or uint8; one tensor per call (the
multi-device list forms are refused). Anything else raises with what is
allowed: recv from any source (uroce's receives name their peer),
ReduceOp.BAND/BOR/BXOR/PREMUL_SUM.

Not possible on 1.13: C++ callers. DistributedDataParallel's constructor
and reducer call the process group from C++, and 1.13 does not route
those calls to a Python subclass, so DDP over this backend fails ("does
not support allgather"). For DDP, initialise gloo and register uroce's
communication hook (uroce.ddp), which reduces every gradient bucket.
"""
import os
import socket
import threading

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _create_work_from_future

from . import DTYPES, Comm, UroceError, _libc

__all__ = ["ProcessGroupUroce", "BACKEND"]

BACKEND = "uroce"

_TYPES = {torch.float32: "float32", torch.float64: "float64",
          torch.float16: "float16", torch.bfloat16: "bfloat16",
          torch.int32: "int32", torch.int64: "int64", torch.uint8: "uint8"}
# enum uroce_redop's order (uroce.OPS).
_OPS = {dist.ReduceOp.SUM: 0, dist.ReduceOp.PRODUCT: 1,
        dist.ReduceOp.MIN: 2, dist.ReduceOp.MAX: 3}
if hasattr(dist.ReduceOp, "AVG"):
    _OPS[dist.ReduceOp.AVG] = 4


def _code(t, what):
    """uroce's type code of a tensor the library may read and write."""
    dt = _TYPES.get(t.dtype)
    if dt is None:
        raise TypeError("uroce: %s: tensors of %s are not supported (one of "
                        "%s)" % (what, t.dtype, ", ".join(
                            str(k).replace("torch.", "") for k in _TYPES)))
    if t.device.type != "cpu":
        raise TypeError("uroce: %s: CPU tensors only, not %s" %
                        (what, t.device))
    if not t.is_contiguous():
        raise ValueError("uroce: %s: the tensor must be contiguous "
                         "(.contiguous())" % what)
    return DTYPES.index(dt)


def _one(tensors, what):
    if len(tensors) != 1:
        raise ValueError("uroce: %s: one tensor per call, not %d (no "
                         "multi-device lists)" % (what, len(tensors)))
    return tensors[0]


def _redop(opts, what):
    op = _OPS.get(opts.reduceOp)
    if op is None:
        raise ValueError("uroce: %s: %s is not supported (SUM, PRODUCT, MIN, "
                         "MAX%s)" % (what, opts.reduceOp,
                                     ", AVG" if len(_OPS) > 4 else ""))
    return op


def _my_addr():
    """This host's address towards the world's master (MASTER_ADDR): the
    one a group's rank 0 publishes, wherever it runs."""
    master = os.environ.get("MASTER_ADDR") or "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((socket.gethostbyname(master), 9))
            return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def _free_port(addr):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


class ProcessGroupUroce(dist.ProcessGroup):
    """torch.distributed's process group over a uroce communicator."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        key = "uroce/master"
        if rank == 0:
            addr = _my_addr()
            store.set(key, "%s:%d" % (addr, _free_port(addr)))
        host, port = store.get(key).decode().rsplit(":", 1)
        ms = int(timeout.total_seconds() * 1000) if timeout else 0
        self.comm = Comm(rank=rank, size=size, master_addr=host,
                         master_port=int(port),
                         timeout_ms=min(ms, 1 << 30) or None)
        self._lock = threading.Lock()

    def getBackendName(self):  # noqa: N802 -- torch's name
        return BACKEND

    # One request -> one Work: the library's thread completes the future
    # (then, from that thread, `after` copies results out).
    def _work(self, what, fn, args, result, keep, after=None):
        fut = torch.futures.Future()
        req = self.comm._issue(what, fn, args, result, keep)

        def done(r):
            try:
                r.wait()  # complete: frees the request, or raises
                if after:
                    after()
                fut.set_result(result)
            except Exception as e:  # noqa: BLE001 -- raised by wait()
                fut.set_exception(e)
        req.on_done(done)
        return _create_work_from_future(fut)

    def allreduce(self, tensors, opts=None):
        opts = opts or dist.AllreduceOptions()
        t = _one(tensors, "all_reduce")
        c = _code(t, "all_reduce")
        return self._work("all_reduce", _libc().uroce_iallreduce,
                          (t.data_ptr(), t.data_ptr(), t.numel(), c,
                           _redop(opts, "all_reduce")), tensors, (t,))

    def allreduce_coalesced(self, tensors, opts=None):
        flat = torch.cat([t.reshape(-1) for t in tensors])
        work = self.allreduce([flat], opts)
        work.wait()
        at = 0
        for t in tensors:
            t.copy_(flat[at:at + t.numel()].view_as(t))
            at += t.numel()
        fut = torch.futures.Future()
        fut.set_result(tensors)
        return _create_work_from_future(fut)

    def reduce(self, tensors, opts=None):
        opts = opts or dist.ReduceOptions()
        t = _one(tensors, "reduce")
        c = _code(t, "reduce")
        return self._work("reduce", _libc().uroce_ireduce,
                          (t.data_ptr(), t.data_ptr(), t.numel(), c,
                           _redop(opts, "reduce"), opts.rootRank), tensors,
                          (t,))

    def broadcast(self, tensors, opts=None):
        opts = opts or dist.BroadcastOptions()
        t = _one(tensors, "broadcast")
        c = _code(t, "broadcast")
        return self._work("broadcast", _libc().uroce_ibroadcast,
                          (t.data_ptr(), t.data_ptr(), t.numel(), c,
                           opts.rootRank), tensors, (t,))

    def _allgather_base(self, out, inp, opts=None, result=None, after=None):
        c = _code(inp, "all_gather")
        if _code(out, "all_gather") != c or \
                out.numel() != inp.numel() * self.size():
            raise ValueError("uroce: all_gather: the output must hold %d x "
                             "%d elements of %s" % (self.size(), inp.numel(),
                                                    inp.dtype))
        return self._work("all_gather", _libc().uroce_iallgather,
                          (inp.data_ptr(), out.data_ptr(), inp.numel(), c),
                          result or [out], (inp, out), after)

    def allgather(self, output_lists, tensors, opts=None):
        inp = _one(tensors, "all_gather")
        outs = _one(output_lists, "all_gather")
        if len(outs) != self.size():
            raise ValueError("uroce: all_gather: %d output tensors for %d "
                             "ranks" % (len(outs), self.size()))
        flat = torch.empty((self.size(),) + tuple(inp.shape), dtype=inp.dtype)

        def split():
            for i, o in enumerate(outs):
                o.copy_(flat[i])
        return self._allgather_base(flat, inp.contiguous(), None,
                                    output_lists, split)

    def _reduce_scatter_base(self, out, inp, opts=None):
        opts = opts or dist.ReduceScatterOptions()
        c = _code(inp, "reduce_scatter")
        if _code(out, "reduce_scatter") != c or \
                inp.numel() != out.numel() * self.size():
            raise ValueError("uroce: reduce_scatter: the input must hold %d "
                             "x %d elements of %s" % (self.size(),
                                                      out.numel(), out.dtype))
        return self._work("reduce_scatter", _libc().uroce_ireduce_scatter,
                          (inp.data_ptr(), out.data_ptr(), out.numel(), c,
                           _redop(opts, "reduce_scatter")), [out], (inp, out))

    def reduce_scatter(self, outputs, input_lists, opts=None):
        out = _one(outputs, "reduce_scatter")
        ins = _one(input_lists, "reduce_scatter")
        if len(ins) != self.size():
            raise ValueError("uroce: reduce_scatter: %d input tensors for %d "
                             "ranks" % (len(ins), self.size()))
        flat = torch.cat([t.reshape(-1) for t in ins])
        return self._reduce_scatter_base(out, flat, opts)

    def _alltoallv(self, out, inp, scounts, rcounts, result=None,
                   after=None):
        """Element counts per rank, packed blocks (all_to_all_single)."""
        import ctypes
        n = self.size()
        c = _code(inp, "all_to_all")
        if _code(out, "all_to_all") != c:
            raise TypeError("uroce: all_to_all: input %s, output %s" %
                            (inp.dtype, out.dtype))
        if sum(scounts) != inp.numel() or sum(rcounts) != out.numel():
            raise ValueError("uroce: all_to_all: the splits cover %d and %d "
                             "elements, the tensors hold %d and %d" %
                             (sum(scounts), sum(rcounts), inp.numel(),
                              out.numel()))
        arr = ctypes.c_size_t * n

        def packed(v):
            at, o = 0, []
            for x in v:
                o.append(at)
                at += x
            return arr(*o)
        sc, rc = arr(*scounts), arr(*rcounts)
        sd, rd = packed(scounts), packed(rcounts)
        # The library copies the arrays at issue (docs/collectives.md).
        return self._work("all_to_all", _libc().uroce_ialltoallv,
                          (inp.data_ptr(), sc, sd, out.data_ptr(), rc, rd, c),
                          result, (inp, out), after)

    def alltoall_base(self, out, inp, output_split_sizes, input_split_sizes,
                      opts=None):
        n = self.size()
        if not output_split_sizes and not input_split_sizes:
            c = _code(inp, "all_to_all")
            if inp.numel() % n or out.numel() != inp.numel() or \
                    _code(out, "all_to_all") != c:
                raise ValueError("uroce: all_to_all: %d elements in, %d "
                                 "out, %d ranks" % (inp.numel(), out.numel(),
                                                    n))
            return self._work("all_to_all", _libc().uroce_ialltoall,
                              (inp.data_ptr(), out.data_ptr(),
                               inp.numel() // n, c), [out], (inp, out))

        def counts(t, splits):
            row = t[0].numel() if t.dim() and t.shape[0] else 0
            if not splits:
                if t.shape[0] % n:
                    raise ValueError("uroce: all_to_all: %d rows for %d "
                                     "ranks" % (t.shape[0], n))
                splits = [t.shape[0] // n] * n
            if len(splits) != n:
                raise ValueError("uroce: all_to_all: %d split sizes for %d "
                                 "ranks" % (len(splits), n))
            return [int(s) * row for s in splits]
        return self._alltoallv(out, inp, counts(inp, input_split_sizes),
                               counts(out, output_split_sizes), [out])

    def alltoall(self, outputs, inputs, opts=None):
        n = self.size()
        if len(outputs) != n or len(inputs) != n:
            raise ValueError("uroce: all_to_all: %d inputs and %d outputs for "
                             "%d ranks" % (len(inputs), len(outputs), n))
        inp = torch.cat([t.reshape(-1) for t in inputs])
        out = torch.empty(sum(t.numel() for t in outputs),
                          dtype=outputs[0].dtype)

        def split():
            at = 0
            for t in outputs:
                t.copy_(out[at:at + t.numel()].view_as(t))
                at += t.numel()
        return self._alltoallv(out, inp, [t.numel() for t in inputs],
                               [t.numel() for t in outputs], outputs, split)

    def gather(self, output_lists, tensors, opts=None):
        opts = opts or dist.GatherOptions()
        inp = _one(tensors, "gather")
        root, me, n = opts.rootRank, self.rank(), self.size()
        outs = output_lists[0] if me == root else []
        if me == root and len(outs) != n:
            raise ValueError("uroce: gather: %d output tensors for %d ranks"
                             % (len(outs), n))
        reqs = []
        with self.comm.group():
            for j in range(n):
                if j == me:
                    continue
                if me == root:
                    reqs.append(self._p2p(False, outs[j], j, 0, "gather"))
                else:
                    if j == root:
                        reqs.append(self._p2p(True, inp, j, 0, "gather"))
        for r in reqs:
            r.wait()
        if me == root:
            outs[me].copy_(inp)
        return _done(output_lists)

    def scatter(self, outputs, input_lists, opts=None):
        opts = opts or dist.ScatterOptions()
        out = _one(outputs, "scatter")
        root, me, n = opts.rootRank, self.rank(), self.size()
        ins = input_lists[0] if me == root else []
        if me == root and len(ins) != n:
            raise ValueError("uroce: scatter: %d input tensors for %d ranks" %
                             (len(ins), n))
        reqs = []
        with self.comm.group():
            if me == root:
                for j in range(n):
                    if j != me:
                        reqs.append(self._p2p(True, ins[j].contiguous(), j, 0,
                                              "scatter"))
            else:
                reqs.append(self._p2p(False, out, root, 0, "scatter"))
        for r in reqs:
            r.wait()
        if me == root:
            out.copy_(ins[me])
        return _done(outputs)

    def barrier(self, opts=None):
        return self._work("barrier", _libc().uroce_ibarrier, (), [], ())

    def _p2p(self, send, t, peer, tag, what):
        c = _code(t, what)
        if tag < 0:
            raise ValueError("uroce: %s: tag %d: tags are 0 or more" %
                             (what, tag))
        fn = _libc().uroce_isend if send else _libc().uroce_irecv
        return self.comm._issue(what, fn, (t.data_ptr(), t.numel(), c, peer,
                                           tag), t, (t,))

    def send(self, tensors, dst, tag=0):
        t = _one(tensors, "send")
        c = _code(t, "send")
        return self._work("send", _libc().uroce_isend,
                          (t.data_ptr(), t.numel(), c, dst, tag), tensors,
                          (t,))

    def recv(self, tensors, src, tag=0):
        t = _one(tensors, "recv")
        c = _code(t, "recv")
        return self._work("recv", _libc().uroce_irecv,
                          (t.data_ptr(), t.numel(), c, src, tag), tensors,
                          (t,))

    def recv_anysource(self, tensors, tag=0):
        raise UroceError("uroce: recv without a source is not supported "
                         "(uroce's receives name their peer)")


def _done(result):
    fut = torch.futures.Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


def _create(store, rank, size, timeout):
    return ProcessGroupUroce(store, rank, size, timeout)


if not hasattr(dist.Backend, BACKEND.upper()):
    dist.Backend.register_backend(BACKEND, _create)
