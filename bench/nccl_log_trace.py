#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nccl_log_trace.py: turn NCCL_DEBUG=INFO logs into a uroce-sim trace.

Input: the logs of every rank of a job run with NCCL_DEBUG=INFO and
NCCL_DEBUG_SUBSYS=INIT,COLL (one file per rank or all in one; lines of
other programs are skipped). Two kinds of NCCL lines are read, each
after NCCL's prefix "HOST:PID:TID [DEV] NCCL INFO ":

  [FUNC ]comm PTR rank R nranks N cudaDev D [nvmlDev D] busId B [commId 0xH] - Init COMPLETE
  OP: opCount X sendbuff P recvbuff P count C datatype T op O root R comm PTR [nranks=N] stream P

(src/init.cc and src/enqueue.cc of NCCL 2.x). A process is (HOST, PID);
a communicator is its commId hash (or, in logs from before NCCL printed
it, the n-th Init COMPLETE of each process with the same nranks); the
communicator's pointer names it within the process. A collective call is
(communicator, opCount) across its ranks; Send and Recv (root = the peer)
of one group share an opCount. Hosts: a process's rank in the world
communicator (the one with every process), so host h is world rank h.

Each call becomes flows as NCCL's ring runs it over the communicator's
ranks in rank order, bytes = count x the datatype's size:
  AllReduce     2(N-1) steps of bytes/N, rank i to i+1 (reduce-scatter,
                then all-gather), each step waiting for the previous one
  ReduceScatter N-1 steps of count (recvcount) x size
  AllGather     N-1 steps of count (sendcount) x size
  Broadcast     a chain from root through the ring, in --chunks pieces,
                piece c of a hop waiting for piece c of the hop before
  Reduce        the same chain towards root
  Send          one flow to root (the peer); the group's Recv ends on it
A rank's call waits for what the rank received in its previous call
(program order; the logs carry no times, so --gap-us of compute is put
between a rank's calls). Unknown operations (e.g. AllToAll in a fork)
are an error naming FILE:LINE, as are lines that do not parse, a call on
a communicator no Init COMPLETE line named, and ranks that disagree on a
call's operation or size.
"""
import argparse
import heapq
import re
import sys

PREFIX = re.compile(r"^(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] NCCL INFO (?P<msg>.*)$")
INIT = re.compile(r"^(?:\S+ )?comm (?P<ptr>0x[0-9a-fA-F]+|\(nil\)) rank (?P<rank>\d+) nranks (?P<n>\d+) "
                  r"cudaDev \d+(?: nvmlDev \d+)? busId [0-9a-fA-F]+"
                  r"(?: commId (?P<id>0x[0-9a-fA-F]+))? - Init COMPLETE$")
COLL = re.compile(r"^(?P<op>[A-Za-z]+): opCount (?P<opc>[0-9a-fA-F]+) sendbuff \S+ recvbuff \S+ "
                  r"count (?P<count>\d+) datatype (?P<dt>\d+) op \d+ root (?P<root>-?\d+) "
                  r"comm (?P<ptr>0x[0-9a-fA-F]+) \[nranks=(?P<n>\d+)\] stream \S+$")
COLL_START = re.compile(r"^[A-Za-z]+: opCount ")
# ncclDataType_t (nccl.h): int8 uint8 int32 uint32 int64 uint64 half
# float double bfloat16, then the fp8 types of NCCL 2.19+
DT_SIZE = [1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1]
OPS = ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce", "Send", "Recv")


class ParseError(Exception):
    pass


def parse(paths):
    """Processes' communicators and calls, in each process's order."""
    comms = {}       # (proc, ptr) -> (comm key, rank, nranks)
    members = {}     # comm key -> {rank: proc}
    order = {}       # (proc, nranks) -> inits seen (logs without commId)
    calls = {}       # proc -> [(comm key, opCount, op, bytes, root, where)]
    procs = []
    for path in paths:
        with open(path) as f:
            for ln, line in enumerate(f, 1):
                m = PREFIX.match(line.rstrip("\n"))
                if not m:
                    continue
                where = "%s:%d" % (path, ln)
                proc = (m["host"], int(m["pid"]))
                if proc not in calls:
                    calls[proc] = []
                    procs.append(proc)
                msg = m["msg"]
                if msg.endswith("Init COMPLETE"):
                    i = INIT.match(msg)
                    if not i:
                        raise ParseError("%s: an Init COMPLETE line that does not parse" % where)
                    n = int(i["n"])
                    if i["id"]:
                        key = i["id"].lower()
                    else:
                        k = order.get((proc, n), 0)
                        order[proc, n] = k + 1
                        key = "n%d#%d" % (n, k)
                    rank = int(i["rank"])
                    if rank >= n:
                        raise ParseError("%s: rank %d of %d" % (where, rank, n))
                    comms[proc, i["ptr"].lower()] = (key, rank, n)
                    mem = members.setdefault(key, {})
                    if rank in mem and mem[rank] != proc:
                        raise ParseError("%s: rank %d of communicator %s twice" % (where, rank, key))
                    mem[rank] = proc
                    continue
                if not COLL_START.match(msg):
                    continue
                c = COLL.match(msg)
                if not c:
                    raise ParseError("%s: a collective line that does not parse" % where)
                if c["op"] not in OPS:
                    raise ParseError("%s: operation %s is not converted" % (where, c["op"]))
                cm = comms.get((proc, c["ptr"].lower()))
                if not cm:
                    raise ParseError("%s: communicator %s has no Init COMPLETE line before it"
                                     % (where, c["ptr"]))
                if int(c["n"]) != cm[2]:
                    raise ParseError("%s: nranks=%s, the communicator has %d" % (where, c["n"], cm[2]))
                dt = int(c["dt"])
                if dt >= len(DT_SIZE):
                    raise ParseError("%s: datatype %d unknown" % (where, dt))
                calls[proc].append((cm[0], int(c["opc"], 16), c["op"],
                                    int(c["count"]) * DT_SIZE[dt], int(c["root"]), where))
    return comms, members, calls, procs


def convert(paths, out, gap_us=0.0, chunks=4):
    comms, members, calls, procs = parse(paths)
    for key, mem in members.items():
        n = int(next(cm[2] for cm in comms.values() if cm[0] == key))
        if len(mem) != n:
            raise ParseError("communicator %s: %d of its %d ranks have an Init COMPLETE line"
                             % (key, len(mem), n))
    world = [k for k, mem in members.items() if len(mem) == len(procs)]
    if not world:
        raise ParseError("no communicator holds all %d processes (the world)" % len(procs))
    host = {p: r for r, p in members[world[0]].items()}
    # a call: (comm, opCount) -> {rank: [(op, bytes, root, where)]}
    inst = {}
    seq = {}   # proc -> [call keys in program order]
    for p in procs:
        seq[p] = []
        for key, opc, op, nb, root, where in calls[p]:
            rank = next(cm[1] for (pp, _), cm in comms.items() if pp == p and cm[0] == key)
            ck = (key, opc)
            d = inst.setdefault(ck, {})
            d.setdefault(rank, []).append((op, nb, root, where))
            if not seq[p] or seq[p][-1] != ck:
                seq[p].append(ck)
    # every call after those each of its ranks made before (Kahn's order,
    # ties by first appearance)
    first = {}
    for p in procs:
        for i, ck in enumerate(seq[p]):
            first[ck] = min(first.get(ck, (1 << 60, "")), (i, ck[0], ck[1]))
    before = {ck: set() for ck in inst}
    for p in procs:
        for a, b in zip(seq[p], seq[p][1:]):
            before[b].add(a)
    done, ordered = set(), []
    ready = sorted((first[ck], ck) for ck in inst if not before[ck])
    heapq.heapify(ready)
    after = {ck: [] for ck in inst}
    for ck, bs in before.items():
        for b in bs:
            after[b].append(ck)
    while ready:
        _, ck = heapq.heappop(ready)
        done.add(ck)
        ordered.append(ck)
        for nx in after[ck]:
            if nx not in done and before[nx] <= done and all(x != nx for _, x in ready):
                heapq.heappush(ready, (first[nx], nx))
    if len(ordered) != len(inst):
        raise ParseError("the ranks' calls are in orders that contradict each other")

    tags = [0]
    nflows = [0]
    nbytes = [0]
    dep = {}  # host -> tags its next call waits for
    gap = int(gap_us * 1000)

    def tag():
        tags[0] += 1
        return tags[0] - 1

    def flow(src, dst, nb, t, aft, start=None):
        a = " after=" + ",".join(str(x) for x in aft) if aft else ""
        out.write("%d %d %d %d tag=%d%s\n" % (gap if start is None else start, src, dst,
                                             max(1, nb), t, a))
        nflows[0] += 1
        nbytes[0] += max(1, nb)

    out.write("# uroce-sim trace from NCCL logs: %s (bench/nccl_log_trace.py)\n" % " ".join(paths))
    out.write("# %d processes (hosts 0..%d by world rank), %d calls\n"
              % (len(procs), len(procs) - 1, len(ordered)))
    for key, opc in ordered:
        d = inst[key, opc]
        mem = members[key]
        n = len(mem)
        hs = [host[mem[r]] for r in range(n)]
        ops = {e[0] for v in d.values() for e in v}
        first_where = min((e[3] for v in d.values() for e in v),
                          key=lambda w: (w.rsplit(":", 1)[0], int(w.rsplit(":", 1)[1])))
        if ops <= {"Send", "Recv"}:
            out.write("# SendRecv comm %s opCount %x (%s)\n" % (key, opc, first_where))
            into = {}
            t_of = {}
            for r in sorted(d):
                for op, nb, root, where in d[r]:
                    if op != "Send":
                        continue
                    if not 0 <= root < n or root == r:
                        raise ParseError("%s: Send to peer %d" % (where, root))
                    t = t_of.setdefault(root, tag())
                    flow(hs[r], hs[root], nb, t, dep.get(hs[r], []))
                    into[root] = t
            for r in sorted(d):
                for op, nb, root, where in d[r]:
                    if op == "Recv" and into.get(r) is None:
                        raise ParseError("%s: Recv from %d with no Send to it" % (where, root))
            for r, t in into.items():
                dep[hs[r]] = [t]
            continue
        if len(ops) != 1:
            raise ParseError("%s: ranks disagree on the operation of comm %s opCount %x: %s"
                             % (first_where, key, opc, ",".join(sorted(ops))))
        op = ops.pop()
        sizes = {(e[1], e[2]) for v in d.values() for e in v}
        if len(sizes) != 1:
            raise ParseError("%s: ranks disagree on the size or root of %s opCount %x"
                             % (first_where, op, opc))
        nb, root = sizes.pop()
        if len(d) != n:
            raise ParseError("%s: %s opCount %x on %d of the communicator's %d ranks"
                             % (first_where, op, opc, len(d), n))
        out.write("# %s comm %s opCount %x bytes %d nranks %d (%s)\n"
                  % (op, key, opc, nb, n, first_where))
        if n < 2:
            continue
        if op in ("AllReduce", "ReduceScatter", "AllGather"):
            steps, per = {"AllReduce": (2 * (n - 1), nb // n),
                          "ReduceScatter": (n - 1, nb),
                          "AllGather": (n - 1, nb)}[op]
            prev = [list(dep.get(h, [])) for h in hs]
            for st in range(steps):
                cur = []
                for r in range(n):
                    t = tag()
                    flow(hs[r], hs[(r + 1) % n], per, t, prev[r], None if st == 0 else 0)
                    cur.append(t)
                prev = [[cur[(r - 1) % n]] for r in range(n)]
            for r in range(n):
                dep[hs[r]] = prev[r]
        else:  # Broadcast / Reduce: a chunked chain along the ring
            if not 0 <= root < n:
                raise ParseError("%s: root %d of %d ranks" % (first_where, root, n))
            if op == "Broadcast":
                chain = [(root + i) % n for i in range(n)]
            else:
                chain = [(root + 1 + i) % n for i in range(n)]
            c = max(1, min(chunks, nb))
            prev = [list(dep.get(hs[chain[0]], [])) for _ in range(c)]
            for i in range(n - 1):
                a, b = chain[i], chain[i + 1]
                cur = []
                for j in range(c):
                    w = nb * (j + 1) // c - nb * j // c
                    aft = sorted(set(prev[j] + (dep.get(hs[a], []) if i else [])))
                    t = tag()
                    flow(hs[a], hs[b], w, t, aft, None if i == 0 else 0)
                    cur.append([t])
                prev = cur
                dep[hs[b]] = [x[0] for x in cur]
    out.write("# %d flows, %d bytes, %d tags\n" % (nflows[0], nbytes[0], tags[0]))
    return nflows[0], nbytes[0], len(procs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+", help="NCCL_DEBUG=INFO logs (every rank's)")
    ap.add_argument("-o", "--out", default="-", help="trace file (default stdout)")
    ap.add_argument("--gap-us", type=float, default=0.0,
                    help="compute between a rank's consecutive calls (the logs have no times)")
    ap.add_argument("--chunks", type=int, default=4,
                    help="pieces of a Broadcast/Reduce, pipelined along the chain")
    a = ap.parse_args()
    if a.gap_us < 0 or a.chunks < 1:
        ap.error("--gap-us >= 0, --chunks >= 1")
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    try:
        fl, nb, np_ = convert(a.logs, out, a.gap_us, a.chunks)
    except (ParseError, OSError) as e:
        print("nccl_log_trace: %s" % e, file=sys.stderr)
        sys.exit(1)
    if out is not sys.stdout:
        out.close()
    print("nccl_log_trace: %d processes, %d flows, %d bytes" % (np_, fl, nb), file=sys.stderr)


if __name__ == "__main__":
    main()
