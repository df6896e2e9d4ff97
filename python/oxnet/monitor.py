"""``mx.monitor.Monitor``: statistics of the arrays of executors every ``interval``
batches (MXNet 1.9.1's interface: ``install``, ``tic``, ``toc``, ``toc_print``).

The executor's monitor callback hands every node output (every input too with
``monitor_all``) to the monitor while a monitored batch runs forward; ``toc`` adds the
arguments and auxiliary states, turns each statistic into text and returns
``(step, name, text)`` triples."""

import logging
import math
import re

from . import ndarray as nd
from .base import MXNetError
from .ndarray import NDArray

__all__ = ["Monitor"]


def _default_stat(x):
    """MXNet's default statistic: the root mean square, ``norm(x) / sqrt(size)``."""
    return nd.norm(x) / math.sqrt(x.size)


class Monitor:
    """Monitors the arrays of installed executors.

    Parameters
    ----------
    interval : int
        Number of batches between two monitored ones.
    stat_func : function
        The statistic of an array (an NDArray or a list of them); the root mean
        square by default.
    pattern : str
        A regular expression: only arrays whose name matches are monitored.
    sort : bool
        Sort the results by name.
    monitor_all : bool
        Monitor the inputs of every node as well as its outputs.
    """

    def __init__(self, interval, stat_func=None, pattern=".*", sort=False, monitor_all=False):
        if int(interval) <= 0:
            raise MXNetError("Monitor: interval must be a positive number of batches, got %r" % (interval,))
        self.interval = int(interval)
        self.stat_func = _default_stat if stat_func is None else stat_func
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name, array):
        """The executor callback: queues the statistic of a matching array while a
        monitored batch runs."""
        if isinstance(name, bytes):
            name = name.decode()
        if not self.activated or not self.re_prog.match(name):
            return
        self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe):
        """Installs the monitor on an executor (any number of them)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def _wait(self):
        for exe in self.exes:
            for a in exe.arg_arrays + exe.aux_arrays:
                a.wait_to_read()

    def tic(self):
        """Starts a batch: monitored when the step is a multiple of ``interval``."""
        if self.step % self.interval == 0:
            self._wait()
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """Ends a batch: ``[(step, name, text of the statistic), ...]`` for a
        monitored batch (also the arguments and auxiliary states), else ``[]``."""
        if not self.activated:
            return []
        self._wait()
        for exe in self.exes:
            named = list(zip(exe._symbol.list_arguments(), exe.arg_arrays))
            named += list(zip(exe._symbol.list_auxiliary_states(), exe.aux_arrays))
            for name, array in named:
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda item: item[1])
        res = []
        for step, name, value in self.queue:
            values = [value] if isinstance(value, NDArray) else value
            if not isinstance(values, list) or not all(isinstance(v, NDArray) for v in values):
                raise MXNetError("Monitor: stat_func must return an NDArray or a list of NDArrays, got %s for '%s'"
                                 % (type(value).__name__, name))
            text = ""
            for v in values:
                text += (str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + "\t"
            res.append((step, name, text))
        self.queue = []
        return res

    def toc_print(self):
        """Ends a batch and logs the results (``Batch: step name value``)."""
        for step, name, text in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(step, name, text))
