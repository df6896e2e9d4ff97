"""Distributed kvstore benchmark: oxnet's dist_sync (MPI) against a raw MPI allreduce
and MXNet 1.9.1's dist_sync (ps-lite), 4 processes on this machine, in one run.

    python benches/bench_dist.py            # driver: runs every case, prints ratios
    python benches/bench_dist.py --record   # ... and appends the table to RESULTS.md
    python benches/bench_dist.py --rounds 5 # every case 5 times, in turn (a noisy machine)

Each step moves 100 MB of float32 gradients per worker: 10 keys of 2.5M elements are
pushed, then pulled (``mx.nd.waitall()`` ends the step). Cases:
  allreduce  mpirun -np 4: mpi4py ``Allreduce`` of the same 100 MB (in place), the floor
  oxnet      3 workers + 1 server, and 2 workers + 2 servers (arrays split over both),
             started by ``python -m oxnet.tools.launch``
  mxnet      MXNet 1.9.1's dist_sync with ps-lite: a scheduler, 1 server and 3 workers
             started here with the DMLC_* variables (5 processes: ps-lite needs its
             scheduler); skipped with the reason when its wheel cannot run it
Reported: median seconds per step (the slowest worker's) and the bandwidth
100 MB / step time; ratios against the allreduce and against MXNet. With ``--rounds N``
every case runs N times, one round after another; each round's ratios compare runs of
that round only (the load of a shared machine changes), the table gives the medians
over the rounds (of the step times, and of the rounds' ratios), and one line per round
follows with its load average.
"""

import argparse
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
from _driver import mxnet_python  # noqa: E402

NKEYS = 10
ELEMS = 2_500_000          # 10 MB per key, 100 MB per step
MB = NKEYS * ELEMS * 4 / 1e6
STEPS = 7


def _result(times):
    return {"median": statistics.median(times), "min": min(times)}


def worker_allreduce():
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    bufs = [np.ones(ELEMS, dtype=np.float32) for _ in range(NKEYS)]
    times = []
    for i in range(STEPS + 2):
        comm.Barrier()
        t0 = time.perf_counter()
        for b in bufs:
            comm.Allreduce(MPI.IN_PLACE, b, op=MPI.SUM)
        t = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
        if i >= 2:
            times.append(t)
    if comm.rank == 0:
        print("RESULT 0 " + json.dumps(_result(times)))


def worker_kv(mod_name):
    """oxnet or mxnet dist_sync: the same code."""
    mx = __import__(mod_name)
    kv = mx.kv.create("dist_sync")
    grads = [mx.nd.ones((ELEMS,)) for _ in range(NKEYS)]
    outs = [mx.nd.zeros((ELEMS,)) for _ in range(NKEYS)]
    kv.init(list(range(NKEYS)), [mx.nd.zeros((ELEMS,)) for _ in range(NKEYS)])
    mx.nd.waitall()
    times = []
    for i in range(STEPS + 2):
        kv._barrier()
        t0 = time.perf_counter()
        for k in range(NKEYS):
            kv.push(k, grads[k])
        for k in range(NKEYS):
            kv.pull(k, out=outs[k])
        mx.nd.waitall()
        t = time.perf_counter() - t0
        if i >= 2:
            times.append(t)
    if mod_name == "oxnet":
        assert abs(float(outs[0][0].asscalar()) - kv.num_workers) < 1e-3
    kv._barrier()
    print("RESULT %d %s" % (kv.rank, json.dumps(_result(times))))


def _collect(out):
    res = [json.loads(l.split(" ", 2)[2]) for l in out.splitlines() if l.startswith("RESULT ")]
    if not res:
        return None
    # the step ends when the slowest worker has its values
    return {"median": max(r["median"] for r in res), "min": max(r["min"] for r in res)}


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def run_allreduce():
    from oxnet.tools.launch import mpirun_path
    argv = [mpirun_path(), "--oversubscribe", "-np", "4"]
    if os.geteuid() == 0:
        argv.insert(1, "--allow-run-as-root")
    r = subprocess.run(argv + [sys.executable, __file__, "--worker", "allreduce"],
                       env=_env(), capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print("[allreduce failed]\n" + r.stdout[-2000:] + r.stderr[-2000:], file=sys.stderr)
    return _collect(r.stdout)


def run_oxnet(w, s):
    r = subprocess.run([sys.executable, "-m", "oxnet.tools.launch", "-n", str(w), "-s", str(s),
                        sys.executable, __file__, "--worker", "oxnet"],
                       env=_env(), capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print("[oxnet %d+%d failed]\n" % (w, s) + r.stdout[-3000:] + r.stderr[-2000:],
              file=sys.stderr)
    return _collect(r.stdout)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_mxnet(w=3, s=1):
    """MXNet's ps-lite job, started by hand; (result, None) or (None, reason)."""
    py = mxnet_python()
    if py is None:
        return None, "no MXNet 1.9.1 Python (benches/.mxnet-venv)"
    base = dict(os.environ, DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=str(_free_port()),
                DMLC_NUM_SERVER=str(s), DMLC_NUM_WORKER=str(w), PS_VERBOSE="0",
                DMLC_INTERFACE="lo", OMP_NUM_THREADS="1")
    procs = []
    try:
        for role, n in (("scheduler", 1), ("server", s), ("worker", w)):
            for _ in range(n):
                env = dict(base, DMLC_ROLE=role)
                cmd = [py, "-c", "import mxnet"] if role != "worker" else \
                    [py, __file__, "--worker", "mxnet"]
                procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True))
        outs = []
        deadline = time.time() + 300
        for p in procs:
            try:
                o, e = p.communicate(timeout=max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                return None, "MXNet's dist_sync job did not finish in 300 s"
            if p.returncode != 0:
                return None, "MXNet's dist_sync job failed: %s" % (e.strip().splitlines()[-1:] or
                                                                     ["exit %d" % p.returncode])
            outs.append(o)
        res = _collect("\n".join(outs))
        return (res, None) if res else (None, "MXNet's workers reported nothing")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every case this many times, in turn")
    a = ap.parse_args()
    if a.worker == "allreduce":
        return worker_allreduce()
    if a.worker in ("oxnet", "mxnet"):
        return worker_kv(a.worker)
    names = ["mpi4py Allreduce, 4 ranks", "oxnet dist_sync, 3 workers + 1 server",
             "oxnet dist_sync, 2 workers + 2 servers",
             "MXNet 1.9.1 dist_sync (ps-lite), 3 workers + 1 server + scheduler"]
    rounds, why = [], None
    for _ in range(max(1, a.rounds)):
        load = os.getloadavg()[0]
        ar = run_allreduce()
        ox31 = run_oxnet(3, 1)
        ox22 = run_oxnet(2, 2)
        mxr, why = run_mxnet(3, 1)
        rounds.append((load, [ar, ox31, ox22, mxr]))

    def ratio(num, den):
        return num["median"] / den["median"] if num and den else None

    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None
    lines = ["| case | step (s, median) | GB/s per worker | vs allreduce | vs MXNet |",
             "|---|---|---|---|---|"]
    for i, name in enumerate(names):
        step = med([rs[i]["median"] if rs[i] else None for _, rs in rounds])
        if step is None:
            lines.append("| %s | - | - | - | - |" % name)
            continue
        vs_ar = med([ratio(rs[0], rs[i]) for _, rs in rounds])
        vs_mx = med([ratio(rs[3], rs[i]) for _, rs in rounds])
        lines.append("| %s | %.3f | %.2f | %s | %s |" % (
            name, step, MB / 1e3 / step, "%.2fx" % vs_ar if vs_ar else "nan",
            "%.2fx" % vs_mx if vs_mx else "-"))
    loads = [ld for ld, _ in rounds]
    head = "## bench_dist — %s — %s, %d cores, load average %s" % (
        datetime.date.today().isoformat(), platform.machine(), os.cpu_count(),
        "%.1f" % loads[0] if len(loads) == 1 else "%.1f–%.1f" % (min(loads), max(loads)))
    text = "\n".join([head, "", "%d MB of float32 per step (%d keys); ratios > 1: faster "
                      "than the other." % (MB, NKEYS), ""] + lines)
    if len(rounds) > 1:
        per = ["", "", "Rounds (step s, and vs allreduce / vs MXNet of the round):", ""]
        for j, (ld, rs) in enumerate(rounds):
            cells = []
            for i, short in enumerate(["allreduce", "3+1", "2+2", "MXNet"]):
                if rs[i] is None:
                    cells.append("%s -" % short)
                elif i in (1, 2):
                    va, vm = ratio(rs[0], rs[i]), ratio(rs[3], rs[i])
                    cells.append("%s %.3f (%s, %s)" % (
                        short, rs[i]["median"], "%.2fx" % va if va else "-",
                        "%.2fx" % vm if vm else "-"))
                else:
                    cells.append("%s %.3f" % (short, rs[i]["median"]))
            per.append("- round %d (load %.1f): %s" % (j + 1, ld, "; ".join(cells)))
        text += "\n".join(per)
    if why:
        text += "\n\nMXNet 1.9.1: %s." % why
    print(text)
    if a.record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write("\n" + text + "\n")


if __name__ == "__main__":
    main()
