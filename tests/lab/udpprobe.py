#!/usr/bin/env python3
"""udpprobe.py - UDP traffic for the fault lab (standard library only).

Modes (results are one JSON line on stdout):
  recv  --port P [--idle S] [--timeout S] [--ready FILE]
        count packets, duplicates, out-of-order arrivals, corrupted payloads,
        ECN codepoints (IP_RECVTOS) and the receive rate.
  send  --dst IP [--port P] [--count N] [--size B] [--rate-mbps R] [--tos T]
        numbered packets with a verifiable payload.
  echo  --port P [--timeout S] [--ready FILE] [--count N]
        echo every datagram back to its sender (N of them, if given).
  rtt   --dst IP [--port P] [--count N] [--interval-ms MS]
        ping-pong against `echo`; prints RTT statistics in microseconds.
"""
import argparse
import json
import os
import socket
import statistics
import struct
import sys
import time

IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
HDR = struct.Struct("!QQ")  # seq, ~seq: every payload byte is checkable
MASK = (1 << 64) - 1
PATTERN = bytes(range(256)) * 64


def payload(seq, size):
    body = HDR.pack(seq, ~seq & MASK)
    return body + PATTERN[: max(0, size - len(body))]


def check(data):
    """Return (seq, ok) for a received datagram; seq None if unreadable."""
    if len(data) < HDR.size:
        return None, False
    seq, inv = HDR.unpack_from(data)
    if seq != ~inv & MASK:
        return None, False
    return seq, data[HDR.size:] == PATTERN[: len(data) - HDR.size]


def touch(path):
    if path:
        with open(path, "w"):
            pass


def do_recv(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    s.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
    s.bind(("0.0.0.0", a.port))
    touch(a.ready)
    seen = set()
    r = dict(received=0, unique=0, dups=0, out_of_order=0, corrupted=0,
             ect0=0, ect1=0, ce=0, not_ect=0, bytes=0, ip_bytes=0)
    ecn_names = ("not_ect", "ect1", "ect0", "ce")
    max_seq = -1
    first = last = None
    deadline = time.monotonic() + a.timeout
    s.settimeout(a.timeout)
    while True:
        try:
            data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(4))
        except socket.timeout:
            break
        now = time.monotonic()
        first = first or now
        last = now
        r["received"] += 1
        r["bytes"] += len(data)
        r["ip_bytes"] += len(data) + 28
        for lvl, typ, cdata in anc:
            if lvl == socket.IPPROTO_IP and typ == socket.IP_TOS and cdata:
                r[ecn_names[cdata[0] & 3]] += 1
        seq, ok = check(data)
        if not ok:
            r["corrupted"] += 1
        if seq is not None:
            if seq in seen:
                r["dups"] += 1
            else:
                seen.add(seq)
                r["unique"] += 1
                if seq < max_seq:
                    r["out_of_order"] += 1
                max_seq = max(max_seq, seq)
        remaining = min(a.idle, deadline - now)
        if remaining <= 0:
            break
        s.settimeout(remaining)
    span = (last - first) if first and last and last > first else 0
    r["span_s"] = round(span, 4)
    r["rate_mbps"] = round(r["ip_bytes"] * 8 / span / 1e6, 2) if span else 0
    print(json.dumps(r), flush=True)


def do_send(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, a.tos)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.connect((a.dst, a.port))
    gap = (a.size + 28) * 8 / (a.rate_mbps * 1e6) if a.rate_mbps else 0
    start = time.perf_counter()
    sent = 0
    for seq in range(a.count):
        if gap:
            due = start + seq * gap
            while time.perf_counter() < due:
                pass
        try:
            s.send(payload(seq, a.size))
            sent += 1
        except (ConnectionRefusedError, BlockingIOError):
            pass
    elapsed = time.perf_counter() - start
    print(json.dumps(dict(sent=sent, elapsed_s=round(elapsed, 4),
                          rate_mbps=round(sent * (a.size + 28) * 8 / elapsed / 1e6, 2))),
          flush=True)


def do_echo(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", a.port))
    s.settimeout(a.timeout)
    touch(a.ready)
    n = 0
    try:
        while not a.count or n < a.count:
            data, peer = s.recvfrom(65536)
            s.sendto(data, peer)
            n += 1
    except socket.timeout:
        pass
    print(json.dumps(dict(echoed=n)), flush=True)


def do_rtt(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((a.dst, a.port))
    s.settimeout(1.0)
    rtts = []
    for seq in range(a.count):
        t0 = time.perf_counter()
        s.send(payload(seq, 64))
        try:
            while True:
                data = s.recv(65536)
                if check(data)[0] == seq:
                    break
            rtts.append((time.perf_counter() - t0) * 1e6)
        except socket.timeout:
            pass
        time.sleep(a.interval_ms / 1000)
    out = dict(count=a.count, replies=len(rtts))
    if rtts:
        out.update(min_us=round(min(rtts)), median_us=round(statistics.median(rtts)),
                   max_us=round(max(rtts)))
    print(json.dumps(out), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, default=4791)
    r.add_argument("--idle", type=float, default=1.0, help="stop after S idle seconds")
    r.add_argument("--timeout", type=float, default=20.0, help="overall limit")
    r.add_argument("--ready", help="create FILE once bound")
    r.set_defaults(fn=do_recv)
    t = sub.add_parser("send")
    t.add_argument("--dst", required=True)
    t.add_argument("--port", type=int, default=4791)
    t.add_argument("--count", type=int, default=1000)
    t.add_argument("--size", type=int, default=1000, help="UDP payload bytes")
    t.add_argument("--rate-mbps", type=float, default=0, help="0: as fast as possible")
    t.add_argument("--tos", type=lambda v: int(v, 0), default=0)
    t.set_defaults(fn=do_send)
    e = sub.add_parser("echo")
    e.add_argument("--port", type=int, default=4791)
    e.add_argument("--timeout", type=float, default=10.0)
    e.add_argument("--ready")
    e.add_argument("--count", type=int, default=0,
                   help="exit after echoing N datagrams (0: only on --timeout)")
    e.set_defaults(fn=do_echo)
    q = sub.add_parser("rtt")
    q.add_argument("--dst", required=True)
    q.add_argument("--port", type=int, default=4791)
    q.add_argument("--count", type=int, default=50)
    q.add_argument("--interval-ms", type=float, default=5)
    q.set_defaults(fn=do_rtt)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
