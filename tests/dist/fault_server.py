"""Server script of the fault tests: a server rank that kills itself (SIGKILL) a few
seconds into serving, after writing the time to $DIST_TEST_DIR/killed."""
import os
import signal
import threading
import time


def die():
    with open(os.path.join(os.environ["DIST_TEST_DIR"], "killed"), "w") as f:
        f.write(str(time.time()))
    os.kill(os.getpid(), signal.SIGKILL)


threading.Timer(float(os.environ.get("FAULT_SERVER_AFTER", "3")), die).start()
import oxnet  # noqa: E402,F401  (serves here)
