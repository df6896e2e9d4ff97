"""Worker script of the fault tests: workers push and pull in a loop; with
FAULT_KILL_WORKER=k, worker k kills itself (SIGKILL) after a few steps and writes the
time to $DIST_TEST_DIR/killed. The job must end soon after, not hang."""
import os
import signal
import time

import oxnet as mx

kv = mx.kv.create("dist_sync")
kv.init(0, mx.nd.zeros((1000,)))
victim = int(os.environ.get("FAULT_KILL_WORKER", "-1"))
out = mx.nd.zeros((1000,))
t0 = time.time()
step = 0
while time.time() - t0 < 60:
    kv.push(0, mx.nd.ones((1000,)))
    kv.pull(0, out=out)
    out.wait_to_read()
    step += 1
    if kv.rank == victim and step == 5:
        with open(os.path.join(os.environ["DIST_TEST_DIR"], "killed"), "w") as f:
            f.write(str(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)
