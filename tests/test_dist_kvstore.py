"""Distributed kvstores on MPI: each scenario is a real ``mpirun`` job (at most 4
processes) started as a subprocess; the worker scripts in tests/dist/ check MXNet's
semantics with NumPy as the oracle and exit non-zero on a failure. Skipped when no
``mpirun`` is installed (``pip install -r requirements-dev.txt`` brings Open MPI and
mpi4py)."""
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

from oxnet.tools import launch  # noqa: E402

MPIRUN = launch.mpirun_path()


def _have_mpi4py():
    try:
        import mpi4py  # noqa: F401
        return True
    except ImportError:
        return False


need_mpi = pytest.mark.skipif(MPIRUN is None or not _have_mpi4py(),
                              reason="mpirun/mpi4py not installed")


def _env(tmp_path, **extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    env["DIST_TEST_DIR"] = str(tmp_path)
    # two cores in CI: keep each rank's compute pool small
    env.setdefault("OXNET_NUM_THREADS", "1")
    env.update(launch._root_env())
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_launch(tmp_path, script, n, s, timeout=120, extra_args=(), **env):
    """Runs ``python -m oxnet.tools.launch -n N -s S python script``."""
    cmd = [sys.executable, "-m", "oxnet.tools.launch", "-n", str(n), "-s", str(s)] + \
        list(extra_args) + [sys.executable, os.path.join(HERE, "dist", script)]
    return subprocess.run(cmd, env=_env(tmp_path, **env), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout, text=True)


def _ok(p, n):
    assert p.returncode == 0, p.stdout[-6000:]
    for r in range(n):
        assert "WORKER_OK %d" % r in p.stdout, p.stdout[-6000:]


@need_mpi
@pytest.mark.parametrize("servers", [1, 2])
def test_kvstore_semantics(tmp_path, servers):
    # sync and async stores, int and str keys, lists, float16, big arrays (split over
    # the servers), bad input, barrier, optimizer on the servers, save/load of its
    # states, _send_command_to_servers, 2-bit compression, overlap with compute
    p = run_launch(tmp_path, "kv_worker.py", 2, servers, MXNET_KVSTORE_BIGARRAY_BOUND=1000)
    _ok(p, 2)


@need_mpi
def test_trainer_and_module_match_one_process(tmp_path):
    p = run_launch(tmp_path, "train_worker.py", 2, 1)
    _ok(p, 2)


def _run_fault(tmp_path, argv, env):
    # a rank killed by SIGKILL leaves Open MPI's shared-memory segments behind: keep
    # them in the test's own directory rather than /dev/shm
    env = dict(env, OMPI_MCA_btl_sm_backing_directory=str(tmp_path))
    t0 = time.time()
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=90, text=True)
    end = time.time()
    killed = tmp_path / "killed"
    assert killed.exists(), p.stdout[-4000:]
    t_kill = float(killed.read_text())
    return p, end - t_kill, end - t0


@need_mpi
def test_killed_worker_ends_the_job(tmp_path):
    argv = [sys.executable, "-m", "oxnet.tools.launch", "-n", "2", "-s", "1",
            sys.executable, os.path.join(HERE, "dist", "fault_worker.py")]
    p, after, _ = _run_fault(tmp_path, argv, _env(tmp_path, FAULT_KILL_WORKER=1))
    assert p.returncode != 0
    assert after < 10, "the job took %.1fs to end after the kill" % after
    assert "rank 1" in p.stdout, p.stdout[-4000:]


@need_mpi
def test_killed_server_ends_the_job(tmp_path):
    argv, extra = launch.build_command(2, 1, [sys.executable,
                                              os.path.join(HERE, "dist", "fault_worker.py")])
    # the servers run a script that dies after a few seconds of serving
    i = len(argv) - 1 - argv[::-1].index(sys.executable)
    argv[i + 1] = os.path.join(HERE, "dist", "fault_server.py")
    env = _env(tmp_path, FAULT_SERVER_AFTER=4)
    env.update(extra)
    p, after, _ = _run_fault(tmp_path, argv, env)
    assert p.returncode != 0
    assert after < 10, "the job took %.1fs to end after the kill" % after
    assert "rank 2" in p.stdout, p.stdout[-4000:]


def test_launch_builds_the_mpirun_line(tmp_path, monkeypatch):
    for k in ("PYTHONPATH", "MXNET_KVSTORE_BIGARRAY_BOUND", "OMP_NUM_THREADS",
              "OXNET_NUM_THREADS", "MXNET_ENGINE_TYPE"):
        monkeypatch.delenv(k, raising=False)
    hosts = tmp_path / "hosts"
    hosts.write_text("node1\nnode2:22  # comment\n\n")
    argv, _ = launch.build_command(3, 2, ["python", "train.py", "--lr", "0.1"],
                                   launcher="mpi", hostfile=str(hosts), mpirun="mpirun",
                                   env=["FOO=1"])
    line = " ".join(argv)
    assert argv[0] == "mpirun" and "--hostfile %s" % hosts in line
    assert "-np 3 -x DMLC_ROLE=worker -x DMLC_NUM_WORKER=3 -x DMLC_NUM_SERVER=2 -x FOO=1" in line
    assert line.endswith("-np 2 -x DMLC_ROLE=server -x DMLC_NUM_WORKER=3 -x DMLC_NUM_SERVER=2 "
                         "-x FOO=1 python train.py --lr 0.1")
    assert launch._read_hostfile(str(hosts)) == ["node1", "node2"]
    with pytest.raises(SystemExit):
        launch.build_command(0, 1, ["python"], mpirun="mpirun")
    with pytest.raises(SystemExit):
        launch.build_command(1, 0, ["python"], mpirun="mpirun")


def test_dist_store_outside_an_mpi_job_is_a_clear_error(tmp_path):
    # a plain process (an MPI singleton) has no servers
    code = ("import oxnet as mx\n"
            "try:\n"
            "    mx.kv.create('dist_sync')\n"
            "except mx.base.MXNetError as e:\n"
            "    print('ERR', e)\n")
    env = _env(tmp_path)
    for k in ("DMLC_NUM_SERVER", "DMLC_ROLE", "OMPI_COMM_WORLD_RANK"):
        env.pop(k, None)
    if not _have_mpi4py():
        pytest.skip("mpi4py not installed")
    p = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60, text=True)
    assert "ERR" in p.stdout and "server" in p.stdout, p.stdout


def test_unknown_dist_types_are_errors():
    import oxnet as mx
    with pytest.raises(mx.base.MXNetError, match="dist_syncc"):
        mx.kv.create("dist_syncc")
    with pytest.raises(mx.base.MXNetError, match="horovod"):
        mx.kv.create("horovod")


def _final_accuracy(out):
    lines = [l for l in out.splitlines() if l.startswith("final test accuracy")]
    assert lines, out[-4000:]
    return float(lines[-1].split()[3])


@need_mpi
def test_seed_cnn_trains_on_two_workers_as_on_one_process(tmp_path):
    # examples/train_mnist.py (the seed CNN) through the launcher: 2 workers + 1 server,
    # each worker on its half of the digits with half the batch, against one process
    script = os.path.join(ROOT, "examples", "train_mnist.py")
    one = subprocess.run([sys.executable, script, "--epochs", "3"], env=_env(tmp_path),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300, text=True)
    assert one.returncode == 0, one.stdout[-4000:]
    cmd = [sys.executable, "-m", "oxnet.tools.launch", "-n", "2", "-s", "1",
           sys.executable, script, "--epochs", "3", "--kvstore", "dist_sync"]
    dist = subprocess.run(cmd, env=_env(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=300, text=True)
    assert dist.returncode == 0, dist.stdout[-4000:]
    a1, a2 = _final_accuracy(one.stdout), _final_accuracy(dist.stdout)
    # (the example shuffles with NumPy's unseeded generator: one process alone lands
    # anywhere in about 0.93-0.96 after 3 epochs)
    assert a1 > 0.9 and a2 > 0.9, (a1, a2)
    assert abs(a1 - a2) < 0.05, (a1, a2)


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 1000, 4097])
def test_two_bit_wire_format_round_trips(n):
    # the packed form of 2-bit compressed gradients: 4 values a byte, exact round trip
    import numpy as np
    from oxnet.kvstore import dist
    rng = np.random.RandomState(n)
    t = np.float32(0.37)
    vals = rng.choice(np.array([t, -t, 0.0], dtype=np.float32), size=n)
    packed = dist._pack_2bit(vals)
    assert packed.dtype == np.uint8 and packed.size == -(-n // 4)
    out = np.full(n, np.nan, dtype=np.float32)
    dist._unpack_2bit(packed, n, t, out)
    np.testing.assert_array_equal(out, vals)


@need_mpi
@pytest.mark.parametrize("servers", [1, 2])
def test_row_sparse_keys(tmp_path, servers):
    # row_sparse init/push/row_sparse_pull (MXNet's nightly dist_sync checks, values as
    # there), pull refused, bad input, lazy updates on the servers, only the requested
    # rows on the wire, async, Trainer with Embedding(sparse_grad=True) and a row_sparse
    # weight; with 2 servers big keys are split by rows
    p = run_launch(tmp_path, "sparse_worker.py", 2, servers, timeout=240,
                   MXNET_KVSTORE_BIGARRAY_BOUND=1000)
    _ok(p, 2)
