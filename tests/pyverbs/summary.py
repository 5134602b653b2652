# SPDX-License-Identifier: MIT
"""Summarise a `run_tests.py -v` log of rdma-core's test suite.

usage: summary.py LOG FLOOR RUNNER_RC
Prints pass/fail/error/skip per module (with Linux rxe's pass count for
reference), every test that did not pass with its reason, then the totals.
Exit 1 on a failure or error (test_rdmacm ones only with
UROCE_PYVERBS_STRICT_RDMACM=1), on fewer passes than FLOOR, or when the
runner died without a summary.
"""
import collections
import os
import re
import sys

# Linux rxe, kernel 6.1, rdma-core 44, same suite: passes per module.
RXE = {'test_addr': 3, 'test_atomic': 7, 'test_cq': 4, 'test_cq_events': 2,
       'test_cqex': 4, 'test_device': 13, 'test_fork': 1, 'test_mr': 8,
       'test_pd': 4, 'test_qp': 21, 'test_qpex': 17,
       'test_relaxed_ordering': 2}
RDMACM = ('test_rdmacm', 'test_mlx5_rdmacm')
HEAD = re.compile(r'^(test\w*) \((?:tests\.)?(\w+)\.(\w+)\.\w+\)')
RES = re.compile(r'(?:\.\.\. |^)(ok|FAIL|ERROR|skipped|expected failure|'
                 r'unexpected success)\b(.*)$')


def main():
    log, floor, runner_rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    text = open(log, errors='replace').read()
    res, cur = {}, None
    for line in text.splitlines():
        m = HEAD.match(line)
        if m:
            cur = (m.group(2), m.group(3) + '.' + m.group(1))
        m = RES.search(line.rstrip())
        if m and cur:
            res[cur] = (m.group(1), m.group(2).strip())
            cur = None
    per = collections.defaultdict(collections.Counter)
    for (mod, _), (r, _) in res.items():
        per[mod][r] += 1
    print(f"{'module':24s} {'pass':>5s} {'fail':>5s} {'err':>5s} "
          f"{'skip':>5s} {'total':>5s}  rxe pass")
    for mod in sorted(per):
        c = per[mod]
        print(f"{mod:24s} {c['ok']:5d} {c['FAIL']:5d} {c['ERROR']:5d} "
              f"{c['skipped']:5d} {sum(c.values()):5d}  {RXE.get(mod, 0)}")
    bad = 0
    strict = os.environ.get('UROCE_PYVERBS_STRICT_RDMACM') == '1'
    for (mod, name), (r, why) in sorted(res.items()):
        if r in ('FAIL', 'ERROR', 'unexpected success'):
            counted = strict or mod not in RDMACM
            bad += counted
            print(f"{r}: {mod}.{name}" + ('' if counted else
                  ' (rdma_cm: not counted, see src/rdmacm)'))
    # Tracebacks of failures and errors.
    for block in re.findall(r'^={20,}\n(?:FAIL|ERROR): .*?(?=^={20,}|^-{20,}\nRan )',
                            text, re.S | re.M):
        print(block.rstrip())
    tot = collections.Counter()
    for c in per.values():
        tot += c
    m = re.search(r'^Ran (\d+) tests? in', text, re.M)
    print(f"rdma-core test suite on uroce: {tot['ok']} pass, {tot['FAIL']} fail, "
          f"{tot['ERROR']} error, {tot['skipped']} skip "
          f"(ran {m.group(1) if m else '?'}; rxe: 86 pass, 0 fail, 1 error, 186 skip)")
    if not m:
        print('FAIL: the runner did not finish (rc %d); log tail:' % runner_rc)
        print('\n'.join(text.splitlines()[-30:]))
        return 1
    if sum(tot.values()) != int(m.group(1)):
        print(f"FAIL: parsed {sum(tot.values())} results, runner ran {m.group(1)}")
        return 1
    if bad:
        print(f"FAIL: {bad} test(s) failed or errored")
        return 1
    if tot['ok'] < floor:
        print(f"FAIL: {tot['ok']} pass, README.md documents {floor}")
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
