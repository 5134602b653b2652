# SPDX-License-Identifier: MIT
"""uroce collectives from Python.

A thin binding (ctypes, no compiler needed) of liburoce_coll
(include/uroce/coll.h): a communicator whose collectives work on numpy
arrays and on any object with the buffer protocol (bytearray, array.array,
memoryview), in place or out of place. Errors raise UroceError with the
library's reason.

Ranks find each other as the C library does: RANK/WORLD_SIZE (uroce-launch,
torchrun), OMPI_COMM_WORLD_RANK/SIZE (mpirun), PMI_RANK/SIZE,
SLURM_PROCID/NTASKS; rank 0's address in MASTER_ADDR/MASTER_PORT. Run
under uroce-launch (or uroce-run), which puts uroce's libraries on the
library path:

    uroce-launch -n 4 /usr/bin/python3 train.py

    import numpy as np, uroce
    with uroce.Comm() as comm:
        x = np.full(1024, comm.rank, dtype=np.float32)
        comm.allreduce(x)            # in place: x is the sum
"""
import atexit
import ctypes
import ctypes.util
import os
import threading
import time

__all__ = ["Comm", "Request", "UroceError", "DTYPES", "OPS"]

# enum uroce_dtype and enum uroce_redop, in the header's order.
DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64",
          "uint8")
OPS = ("sum", "prod", "min", "max", "avg")
_SIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2,
         "int32": 4, "int64": 8, "uint8": 1}
# memoryview/struct formats of each type (bfloat16 has none: name it).
_FORMATS = {"f": "float32", "d": "float64", "e": "float16", "B": "uint8"}


class UroceError(RuntimeError):
    """A collective or the communicator failed (the library's reason)."""


class _Attr(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int), ("size", ctypes.c_int),
                ("master_addr", ctypes.c_char_p),
                ("master_port", ctypes.c_int),
                ("dev_name", ctypes.c_char_p), ("gid_index", ctypes.c_int),
                ("timeout_ms", ctypes.c_int)]


def _load():
    name = os.environ.get("UROCE_COLL_LIB")
    if not name:
        for cand in ("liburoce_coll.so.0", "liburoce_coll.so"):
            try:
                return ctypes.CDLL(cand)
            except OSError:
                pass
        name = ctypes.util.find_library("uroce_coll")
    if not name:
        raise UroceError("liburoce_coll not found: run under uroce-launch or "
                         "uroce-run, or set UROCE_COLL_LIB")
    return ctypes.CDLL(name)


_lib = None
# void fn(void *arg, int result), called by the library's progress thread:
# one thunk for every request (a thunk must outlive its calls), arg the
# key of the request's callback.
_NOTIFY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int)
_pending = {}  # key -> (request, fn): callbacks not yet made
_keys = iter(range(1, 1 << 62))


_running = [0]  # callbacks inside fn (counted before the pop)


def _notified(key, ret):
    _running[0] += 1
    try:
        req, fn = _pending.pop(key, (None, None))
        if fn is not None:
            fn(req)
    except BaseException as e:  # a callback has nobody to raise to
        import sys
        print("uroce: on_done callback failed: %r" % (e,), file=sys.stderr)
    finally:
        _running[0] -= 1


_THUNK = _NOTIFY(_notified)


@atexit.register
def _drain():
    """Before the interpreter finalizes, let callbacks in flight finish.
    A library thread that takes the GIL after finalization began is ended
    by Python with pthread_exit, and unwinding through a C++ caller (a
    torch future's set_result, which drops and retakes the GIL) aborts
    the process ("terminate called without an active exception")."""
    end = time.monotonic() + 10
    while (_pending or _running[0]) and time.monotonic() < end:
        time.sleep(0.001)  # drops the GIL: the callbacks run


def _libc():
    global _lib
    if _lib is None:
        lib = _load()
        vp, sz, i = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
        lib.uroce_comm_init.argtypes = [ctypes.POINTER(vp),
                                        ctypes.POINTER(_Attr)]
        lib.uroce_comm_destroy.argtypes = [vp]
        lib.uroce_comm_rank.argtypes = [vp]
        lib.uroce_comm_size.argtypes = [vp]
        lib.uroce_comm_strerror.argtypes = [vp]
        lib.uroce_comm_strerror.restype = ctypes.c_char_p
        lib.uroce_comm_last_algo.argtypes = [vp]
        lib.uroce_comm_last_algo.restype = ctypes.c_char_p
        lib.uroce_allreduce.argtypes = [vp, vp, vp, sz, i, i]
        lib.uroce_reduce.argtypes = [vp, vp, vp, sz, i, i, i]
        lib.uroce_broadcast.argtypes = [vp, vp, vp, sz, i, i]
        lib.uroce_allgather.argtypes = [vp, vp, vp, sz, i]
        lib.uroce_reduce_scatter.argtypes = [vp, vp, vp, sz, i, i]
        lib.uroce_alltoall.argtypes = [vp, vp, vp, sz, i]
        szp = ctypes.POINTER(sz)
        lib.uroce_alltoallv.argtypes = [vp, vp, szp, szp, vp, szp, szp, i]
        lib.uroce_barrier.argtypes = [vp]
        rq = ctypes.POINTER(vp)
        lib.uroce_test.argtypes = [rq, ctypes.POINTER(i)]
        lib.uroce_wait.argtypes = [rq]
        lib.uroce_request_notify.argtypes = [vp, _NOTIFY, vp]
        lib.uroce_iallreduce.argtypes = [vp, vp, vp, sz, i, i, rq]
        lib.uroce_ireduce.argtypes = [vp, vp, vp, sz, i, i, i, rq]
        lib.uroce_ibroadcast.argtypes = [vp, vp, vp, sz, i, i, rq]
        lib.uroce_iallgather.argtypes = [vp, vp, vp, sz, i, rq]
        lib.uroce_ireduce_scatter.argtypes = [vp, vp, vp, sz, i, i, rq]
        lib.uroce_ialltoall.argtypes = [vp, vp, vp, sz, i, rq]
        lib.uroce_ialltoallv.argtypes = [vp, vp, szp, szp, vp, szp, szp, i,
                                         rq]
        lib.uroce_ibarrier.argtypes = [vp, rq]
        lib.uroce_isend.argtypes = [vp, vp, sz, i, i, i, rq]
        lib.uroce_irecv.argtypes = [vp, vp, sz, i, i, i, rq]
        lib.uroce_group_start.argtypes = [vp]
        lib.uroce_group_end.argtypes = [vp]
        lib.uroce_comm_split.argtypes = [vp, i, i, ctypes.POINTER(vp)]
        lib.uroce_comm_split_ranks.argtypes = [vp, ctypes.POINTER(i), i,
                                               ctypes.POINTER(vp)]
        _lib = lib
    return _lib


class _Buf:
    """A buffer's address, element count and uroce type."""

    def __init__(self, obj, dtype, writable):
        self.keep = obj
        if hasattr(obj, "__array_interface__"):  # numpy and friends
            ai = obj.__array_interface__
            if ai.get("strides") is not None:
                raise ValueError("uroce: the array must be contiguous "
                                 "(np.ascontiguousarray)")
            if writable and ai["data"][1]:
                raise ValueError("uroce: the array is read-only")
            kind = ai["typestr"][1:]
            self.addr = ai["data"][0]
            self.dtype = dtype or {
                "f4": "float32", "f8": "float64", "f2": "float16",
                "i4": "int32", "i8": "int64", "u1": "uint8"}.get(kind)
            if self.dtype is None:
                raise TypeError("uroce: arrays of %s are not supported "
                                "(one of %s)" % (ai["typestr"],
                                                 ", ".join(DTYPES)))
            nbytes = int(obj.nbytes)
        else:
            mv = memoryview(obj)
            if not mv.contiguous:
                raise ValueError("uroce: the buffer must be contiguous")
            mv = mv.cast("B")
            nbytes = mv.nbytes
            fmt = memoryview(obj).format
            if dtype is None:
                dtype = _FORMATS.get(fmt)
                if dtype is None and fmt in ("i", "l", "q"):
                    dtype = {4: "int32", 8: "int64"}.get(
                        memoryview(obj).itemsize)
            if dtype is None:
                raise TypeError("uroce: buffer format %r: pass dtype= (one "
                                "of %s)" % (fmt, ", ".join(DTYPES)))
            self.dtype = dtype
            if mv.readonly:
                if writable:
                    raise ValueError("uroce: the buffer is read-only")
                self.keep = (ctypes.c_char * nbytes).from_buffer_copy(mv)
            else:
                self.keep = (ctypes.c_char * nbytes).from_buffer(mv)
            self.addr = ctypes.addressof(self.keep) if nbytes else None
        if self.dtype not in _SIZE:
            raise ValueError("uroce: dtype %r: one of %s" %
                             (self.dtype, ", ".join(DTYPES)))
        if nbytes % _SIZE[self.dtype]:
            raise ValueError("uroce: %d bytes is not a whole number of %s" %
                             (nbytes, self.dtype))
        self.count = nbytes // _SIZE[self.dtype]
        self.code = DTYPES.index(self.dtype)


class Request:
    """A non-blocking operation in flight (from Comm.i* calls).

    The library's progress thread completes it while Python computes or
    sleeps; wait() (which releases the GIL) returns the result array,
    test() says whether it is done without blocking. The buffers stay
    referenced until then. Failures raise UroceError from wait()/test().
    """

    def __init__(self, comm, what, result, keep):
        self._comm = comm
        self._h = ctypes.c_void_p()
        self._what = what
        self._result = result
        self._keep = keep
        self._done = False
        # One thread at a time frees the library's request (wait() in
        # one thread and in an on_done callback on the progress thread
        # both freed it). Safe to hold while blocked in uroce_wait: the
        # library marks a request done and wakes its waiters before it
        # makes the callbacks, with its lock dropped. Re-entrant: a wait
        # without a progress thread runs the operation, and its callback,
        # in this thread (_in_c: that callback's wait() returns at once,
        # the request being complete; the outer call frees it).
        self._lock = threading.RLock()
        self._in_c = False

    def _finish(self, ret):
        self._done = True
        self._keep = None
        self._comm._check(ret, self._what)
        return self._result

    def test(self):
        """True once the operation is complete (then wait() returns at once)."""
        with self._lock:
            if self._done or self._in_c:
                return True
            done = ctypes.c_int(0)
            self._in_c = True
            try:
                ret = _libc().uroce_test(ctypes.byref(self._h),
                                         ctypes.byref(done))
            finally:
                self._in_c = False
            if done.value or ret:
                self._finish(ret)
            return self._done

    def wait(self):
        """Block until complete; returns the output (array or buffer)."""
        with self._lock:
            if not self._done and not self._in_c:
                self._in_c = True
                try:
                    ret = _libc().uroce_wait(ctypes.byref(self._h))
                finally:
                    self._in_c = False
                self._finish(ret)
        return self._result

    @property
    def done(self):
        return self.test()

    def on_done(self, fn):
        """Call fn(request) once the operation completes, from the thread
        that completes it (the library's progress thread), not from this
        one: nothing needs to poll. The request is then done; in fn,
        wait() returns the output at once or raises the failure. At once
        in this thread if it is already complete."""
        if self._done:
            fn(self)
            return
        key = next(_keys)
        _pending[key] = (self, fn)
        ret = _libc().uroce_request_notify(self._h, _THUNK, key)
        if ret:
            _pending.pop(key, None)
            raise UroceError("uroce: on_done: %s" % os.strerror(-ret))

    def __del__(self):
        # A request dropped unwaited still owns its buffers in the library.
        try:
            if not self._done and self._h:
                _libc().uroce_wait(ctypes.byref(self._h))
        except Exception:  # interpreter shutdown
            pass


def _op(op):
    try:
        return OPS.index(op)
    except ValueError:
        raise ValueError("uroce: op %r: one of %s" % (op, ", ".join(OPS)))


class Comm:
    """A communicator over uroce (or any RDMA device the library finds).

    rank, size: None takes them from the environment (see the module's
    text). master_addr/master_port: rank 0's rendezvous (MASTER_ADDR,
    MASTER_PORT or 127.0.0.1:29500). device: an RDMA device name (the
    first one, or UROCE_COLL_DEV). timeout_ms: how long a collective
    waits for a peer (UROCE_COLL_TIMEOUT_MS or 30 s).
    """

    def __init__(self, rank=None, size=None, master_addr=None,
                 master_port=None, device=None, timeout_ms=None):
        lib = _libc()
        self._c = ctypes.c_void_p()
        if (rank is None) != (size is None):
            raise ValueError("uroce: give both rank and size, or neither")
        attr = _Attr(rank=rank or 0, size=size or 0,
                     master_addr=master_addr.encode() if master_addr else None,
                     master_port=master_port or 0,
                     dev_name=device.encode() if device else None,
                     gid_index=-1, timeout_ms=timeout_ms or 0)
        ret = lib.uroce_comm_init(ctypes.byref(self._c), ctypes.byref(attr))
        if ret:
            raise UroceError("uroce: communicator: %s" % os.strerror(-ret))
        self.rank = lib.uroce_comm_rank(self._c)
        self.size = lib.uroce_comm_size(self._c)

    def close(self):
        """Tear the communicator down (also on leaving a with-block)."""
        if self._c:
            if _libc().uroce_comm_destroy(self._c) == -16:  # -EBUSY
                raise UroceError("uroce: close its sub-communicators first")
            self._c = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def _check(self, ret, what):
        if not self._c:
            raise UroceError("uroce: the communicator is closed")
        if ret:
            why = _libc().uroce_comm_strerror(self._c)
            raise UroceError("uroce: %s: %s" % (what, why.decode() if why
                                                 else os.strerror(-ret)))

    def _live(self):
        if not self._c:
            raise UroceError("uroce: the communicator is closed")

    @property
    def last_algo(self):
        """The algorithm the last collective used (e.g. "ring")."""
        a = _libc().uroce_comm_last_algo(self._c)
        return a.decode() if a else None

    def allreduce(self, send, recv=None, op="sum", dtype=None):
        """recv = send reduced over the ranks; in place without recv."""
        self._live()
        s = _Buf(send, dtype, recv is None)
        r = _Buf(recv, s.dtype, True) if recv is not None else s
        if r.count != s.count:
            raise ValueError("uroce: allreduce: %d elements in, %d out" %
                             (s.count, r.count))
        self._check(_libc().uroce_allreduce(self._c, s.addr, r.addr, s.count,
                                            s.code, _op(op)), "allreduce")
        return recv if recv is not None else send

    def reduce(self, send, recv=None, op="sum", root=0, dtype=None):
        """recv on root = send reduced over the ranks."""
        self._live()
        s = _Buf(send, dtype, recv is None)
        r = _Buf(recv, s.dtype, True) if recv is not None else s
        self._check(_libc().uroce_reduce(self._c, s.addr, r.addr, s.count,
                                         s.code, _op(op), root), "reduce")
        return recv if recv is not None else send

    def broadcast(self, buf, root=0, dtype=None):
        """buf on every rank = buf on root (in place)."""
        self._live()
        b = _Buf(buf, dtype, True)
        self._check(_libc().uroce_broadcast(self._c, b.addr, b.addr, b.count,
                                            b.code, root), "broadcast")
        return buf

    def allgather(self, send, recv, dtype=None):
        """recv = every rank's send, in rank order (size x send)."""
        self._live()
        s = _Buf(send, dtype, False)
        r = _Buf(recv, s.dtype, True)
        if r.count != s.count * self.size:
            raise ValueError("uroce: allgather: recv holds %d elements, "
                             "needs %d" % (r.count, s.count * self.size))
        self._check(_libc().uroce_allgather(self._c, s.addr, r.addr, s.count,
                                            s.code), "allgather")
        return recv

    def reduce_scatter(self, send, recv, op="sum", dtype=None):
        """recv = this rank's block of send reduced over the ranks."""
        self._live()
        s = _Buf(send, dtype, False)
        r = _Buf(recv, s.dtype, True)
        if s.count != r.count * self.size:
            raise ValueError("uroce: reduce_scatter: send holds %d elements, "
                             "needs %d" % (s.count, r.count * self.size))
        self._check(_libc().uroce_reduce_scatter(
            self._c, s.addr, r.addr, r.count, s.code, _op(op)),
            "reduce_scatter")
        return recv

    def alltoall(self, send, recv=None, dtype=None):
        """Block j of send goes to rank j; in place without recv."""
        self._live()
        s = _Buf(send, dtype, recv is None)
        r = _Buf(recv, s.dtype, True) if recv is not None else s
        if s.count % self.size or r.count != s.count:
            raise ValueError("uroce: alltoall: %d elements in, %d out, "
                             "%d ranks" % (s.count, r.count, self.size))
        self._check(_libc().uroce_alltoall(self._c, s.addr, r.addr,
                                           s.count // self.size, s.code),
                    "alltoall")
        return recv if recv is not None else send

    def alltoallv(self, send, sendcounts, recv, recvcounts, sdispls=None,
                  rdispls=None, dtype=None):
        """sendcounts[j] elements at sdispls[j] go to rank j (displacements
        default to packed blocks)."""
        self._live()
        s = _Buf(send, dtype, False)
        r = _Buf(recv, s.dtype, True)
        n = self.size

        def arr(v, what):
            v = [int(x) for x in v]
            if len(v) != n or min(v) < 0:
                raise ValueError("uroce: alltoallv: %s needs %d counts "
                                 "(0 or more)" % (what, n))
            return (ctypes.c_size_t * n)(*v)

        def packed(c):
            out, at = [], 0
            for x in c:
                out.append(at)
                at += x
            return out
        sc, rc = arr(sendcounts, "sendcounts"), arr(recvcounts, "recvcounts")
        sd = arr(sdispls if sdispls is not None else packed(sc), "sdispls")
        rd = arr(rdispls if rdispls is not None else packed(rc), "rdispls")
        if max(sd[j] + sc[j] for j in range(n)) > s.count or \
           max(rd[j] + rc[j] for j in range(n)) > r.count:
            raise ValueError("uroce: alltoallv: counts and displacements "
                             "reach past the buffers")
        self._check(_libc().uroce_alltoallv(self._c, s.addr, sc, sd, r.addr,
                                            rc, rd, s.code), "alltoallv")
        return recv

    def barrier(self):
        """Wait until every rank has called it."""
        self._live()
        self._check(_libc().uroce_barrier(self._c), "barrier")

    # Non-blocking operations: same arguments as the blocking ones, return
    # a Request whose wait() returns what the blocking call returns.
    def _issue(self, what, fn, args, result, keep):
        self._live()
        q = Request(self, what, result, keep)
        self._check(fn(self._c, *args, ctypes.byref(q._h)), what)
        return q

    def iallreduce(self, send, recv=None, op="sum", dtype=None):
        s = _Buf(send, dtype, recv is None)
        r = _Buf(recv, s.dtype, True) if recv is not None else s
        if r.count != s.count:
            raise ValueError("uroce: iallreduce: %d elements in, %d out" %
                             (s.count, r.count))
        return self._issue("iallreduce", _libc().uroce_iallreduce,
                           (s.addr, r.addr, s.count, s.code, _op(op)),
                           recv if recv is not None else send, (s, r))

    def _iallreduce_at(self, addr, count, dtype, op, result, keep):
        """iallreduce in place of count elements of dtype at addr (memory
        that keep holds, e.g. a torch tensor's)."""
        return self._issue("iallreduce", _libc().uroce_iallreduce,
                           (addr, addr, count, DTYPES.index(dtype), _op(op)),
                           result, keep)

    def ibroadcast(self, buf, root=0, dtype=None):
        b = _Buf(buf, dtype, True)
        return self._issue("ibroadcast", _libc().uroce_ibroadcast,
                           (b.addr, b.addr, b.count, b.code, root), buf, (b,))

    def iallgather(self, send, recv, dtype=None):
        s = _Buf(send, dtype, False)
        r = _Buf(recv, s.dtype, True)
        if r.count != s.count * self.size:
            raise ValueError("uroce: iallgather: recv holds %d elements, "
                             "needs %d" % (r.count, s.count * self.size))
        return self._issue("iallgather", _libc().uroce_iallgather,
                           (s.addr, r.addr, s.count, s.code), recv, (s, r))

    def ireduce_scatter(self, send, recv, op="sum", dtype=None):
        s = _Buf(send, dtype, False)
        r = _Buf(recv, s.dtype, True)
        if s.count != r.count * self.size:
            raise ValueError("uroce: ireduce_scatter: send holds %d "
                             "elements, needs %d" % (s.count,
                                                    r.count * self.size))
        return self._issue("ireduce_scatter", _libc().uroce_ireduce_scatter,
                           (s.addr, r.addr, r.count, s.code, _op(op)), recv,
                           (s, r))

    def ialltoall(self, send, recv=None, dtype=None):
        s = _Buf(send, dtype, recv is None)
        r = _Buf(recv, s.dtype, True) if recv is not None else s
        if s.count % self.size or r.count != s.count:
            raise ValueError("uroce: ialltoall: %d elements in, %d out, "
                             "%d ranks" % (s.count, r.count, self.size))
        return self._issue("ialltoall", _libc().uroce_ialltoall,
                           (s.addr, r.addr, s.count // self.size, s.code),
                           recv if recv is not None else send, (s, r))

    def ibarrier(self):
        return self._issue("ibarrier", _libc().uroce_ibarrier, (), None, ())

    def isend(self, buf, peer, tag=0, dtype=None):
        """Send buf to peer; the receive must give the same count and tag."""
        b = _Buf(buf, dtype, False)
        return self._issue("isend", _libc().uroce_isend,
                           (b.addr, b.count, b.code, peer, tag), None, (b,))

    def irecv(self, buf, peer, tag=0, dtype=None):
        """Receive into buf from peer (messages match in issue order)."""
        b = _Buf(buf, dtype, True)
        return self._issue("irecv", _libc().uroce_irecv,
                           (b.addr, b.count, b.code, peer, tag), buf, (b,))

    def send(self, buf, peer, tag=0, dtype=None):
        self.isend(buf, peer, tag, dtype).wait()

    def recv(self, buf, peer, tag=0, dtype=None):
        return self.irecv(buf, peer, tag, dtype).wait()

    def group(self):
        """with comm.group(): i-calls inside are issued together at the end
        (sends and receives progress together, as NCCL's groups)."""
        comm = self

        class _Group:
            def __enter__(self):
                comm._live()
                comm._check(_libc().uroce_group_start(comm._c), "group_start")
                return comm

            def __exit__(self, *exc):
                comm._check(_libc().uroce_group_end(comm._c), "group_end")
        return _Group()

    def _child(self, h):
        if not h:
            return None
        c = Comm.__new__(Comm)
        c._c = h
        c._parent = self  # destroyed before the parent
        c.rank = _libc().uroce_comm_rank(h)
        c.size = _libc().uroce_comm_size(h)
        return c

    def split(self, color, key=0):
        """A sub-communicator of the ranks with the same color (ordered by
        key, then rank); color None: not in any (returns None). Collective
        over this communicator; close it before this one."""
        self._live()
        h = ctypes.c_void_p()
        self._check(_libc().uroce_comm_split(
            self._c, -1 if color is None else int(color), int(key),
            ctypes.byref(h)), "split")
        return self._child(h)

    def split_ranks(self, ranks):
        """A sub-communicator of these ranks (ranks[i] becomes rank i);
        None at ranks not listed. Collective over this communicator."""
        self._live()
        ranks = [int(x) for x in ranks]
        h = ctypes.c_void_p()
        arr = (ctypes.c_int * len(ranks))(*ranks)
        self._check(_libc().uroce_comm_split_ranks(self._c, arr, len(ranks),
                                                   ctypes.byref(h)),
                    "split_ranks")
        return self._child(h)
