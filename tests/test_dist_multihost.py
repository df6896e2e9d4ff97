"""Multi-machine dist_sync, simulated on one machine: two network namespaces joined by a
veth link stand for two hosts, each with its own hostname (a UTS namespace) and its
own address. ``python -m oxnet.tools.launch --launcher mpi -H hostfile`` starts the job
from the first "host"; Open MPI reaches the second one through an rsh agent that runs
the command with ``ip netns exec`` (where a real cluster would use ssh), and the ranks
talk TCP only (``--mca btl tcp,self``) over the veth link. Workers run on one host and
the servers on the other, so every push and pull crosses the link.

Needs root, ``ip`` and ``unshare``; skipped (not failed) where network namespaces
cannot be made. CI runs as root."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from test_dist_kvstore import _env, need_mpi  # noqa: E402

SUBNET = "10.77.%d" % (os.getpid() % 200 + 20)
HOSTS = {"%s.1" % SUBNET: "oxh%d-0" % os.getpid(), "%s.2" % SUBNET: "oxh%d-1" % os.getpid()}


def _sh(*argv):
    return subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=30)


@pytest.fixture
def two_hosts():
    """Two namespaces named in HOSTS with one veth link between them; removed after."""
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"):
        pytest.skip("network namespaces need root, ip(8) and unshare(1)")
    (a, na), (b, nb) = HOSTS.items()
    va, vb = "oxv%da" % (os.getpid() % 100000), "oxv%db" % (os.getpid() % 100000)
    made = []
    try:
        for ns in (na, nb):
            p = _sh("ip", "netns", "add", ns)
            if p.returncode != 0:
                pytest.skip("cannot make a network namespace here: %s" % p.stdout.strip())
            made.append(ns)
        steps = [("ip", "link", "add", va, "type", "veth", "peer", "name", vb),
                 ("ip", "link", "set", va, "netns", na), ("ip", "link", "set", vb, "netns", nb),
                 ("ip", "-n", na, "addr", "add", a + "/24", "dev", va),
                 ("ip", "-n", nb, "addr", "add", b + "/24", "dev", vb)]
        for ns, dev in ((na, va), (nb, vb)):
            steps += [("ip", "-n", ns, "link", "set", dev, "up"),
                      ("ip", "-n", ns, "link", "set", "lo", "up")]
        for s in steps:
            p = _sh(*s)
            if p.returncode != 0:
                pytest.skip("cannot link the namespaces: %s: %s" % (" ".join(s), p.stdout))
        yield
    finally:
        for ns in made:
            _sh("ip", "netns", "del", ns)


@need_mpi
def test_dist_sync_across_two_hosts(tmp_path, two_hosts):
    (a, na), (b, nb) = HOSTS.items()
    log = tmp_path / "agent.log"
    agent = tmp_path / "netns-rsh"
    cases = "\n".join("  %s) ns=%s;;" % (ip, ns) for ip, ns in HOSTS.items())
    agent.write_text(
        "#!/bin/sh\n"
        "# Open MPI's rsh agent: run the command on 'host' $1, a network namespace\n"
        "echo \"$1\" >> %s\n"
        "host=$1; shift\n"
        "case \"$host\" in\n%s\n  *) echo \"netns-rsh: unknown host $host\" >&2; exit 1;;\n"
        "esac\n"
        "exec ip netns exec \"$ns\" unshare --uts sh -c \"hostname $ns; $*\"\n" % (log, cases))
    agent.chmod(0o755)
    hosts = tmp_path / "hosts"
    hosts.write_text("%s slots=2\n%s slots=2\n" % (a, b))
    net = SUBNET + ".0/24"
    mpi_args = ("--mca plm_rsh_agent %s --mca btl tcp,self --mca btl_tcp_if_include %s "
                "--mca oob_tcp_if_include %s" % (agent, net, net))
    launch = " ".join([sys.executable, "-m", "oxnet.tools.launch", "-n", "2", "-s", "2",
                       "-H", str(hosts), "--launcher", "mpi", "--mpi-args", "'%s'" % mpi_args,
                       sys.executable, os.path.join(HERE, "dist", "kv_worker.py")])
    argv = ["ip", "netns", "exec", na, "unshare", "--uts", "sh", "-c",
            "hostname %s; exec %s" % (na, launch)]
    p = subprocess.run(argv, env=_env(tmp_path, MXNET_KVSTORE_BIGARRAY_BOUND=1000),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=240, text=True)
    assert p.returncode == 0, p.stdout[-6000:]
    for r in range(2):
        assert "WORKER_OK %d" % r in p.stdout, p.stdout[-6000:]
    # the second host's ranks were started through the agent, in the other namespace
    assert log.exists() and b in log.read_text(), p.stdout[-3000:]
