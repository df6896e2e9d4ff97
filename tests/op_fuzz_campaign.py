"""The long run of tests/test_op_fuzz.py: seed after seed until the time is up.

    python tests/op_fuzz_campaign.py --minutes 120 --cases 2000 [--first-seed 1] [--log F]

Each seed runs every registered op OXNET_OP_FUZZ_CASES times in a pytest-xdist worker
(so a crash is reported as that op's failure and the campaign goes on) with glibc's
heap checks on (MALLOC_CHECK_=3). Prints, and appends to the log, one line per seed
and every failing test with its output; the exit status is 1 if any seed failed.
"""

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=120)
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--log", default="op_fuzz_campaign.log")
    args = ap.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    seed, failed, calls = args.first_seed, [], 0
    start = time.monotonic()
    with open(args.log, "a") as log:
        def say(line):
            print(line, flush=True)
            log.write(line + "\n")
            log.flush()

        say("campaign: %d cases per op and seed, for %.0f minutes, from seed %d"
            % (args.cases, args.minutes, seed))
        while time.monotonic() < deadline:
            env = dict(os.environ, OXNET_OP_FUZZ_CASES=str(args.cases),
                       OXNET_OP_FUZZ_SEED=str(seed), MALLOC_CHECK_="3")
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, "-m", "pytest", os.path.join(HERE, "test_op_fuzz.py"),
                                "-n", "1", "-q", "-p", "no:cacheprovider", "-rf", "--tb=short"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            ops = sum(1 for line in p.stdout.splitlines() if line.startswith("FAILED"))
            calls += args.cases * _op_count()
            say("seed %d: exit %d, %d failing ops, %.0f s" % (seed, p.returncode, ops,
                                                              time.monotonic() - t0))
            if p.returncode != 0:
                failed.append(seed)
                say(p.stdout[-20000:])
            seed += 1
        say("campaign done: seeds %d..%d, about %d op calls in %.1f h; failing seeds: %s"
            % (args.first_seed, seed - 1, calls, (time.monotonic() - start) / 3600,
               failed or "none"))
    sys.exit(1 if failed else 0)


def _op_count():
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
    from oxnet import _core  # pylint: disable=import-outside-toplevel
    return len({canonical for _name, canonical in _core.list_ops()})


if __name__ == "__main__":
    main()
