"""``mx.io.ResizeIter`` and ``mx.io.PrefetchingIter``: iterators over iterators, as
MXNet 1.9.1's (``PrefetchingIter`` runs each wrapped iterator on its own thread)."""

import threading

from .io import DataBatch, DataDesc, DataIter

__all__ = ["ResizeIter", "PrefetchingIter"]


class ResizeIter(DataIter):
    """Resizes an iterator to ``size`` batches per epoch (restarting the inner
    iterator when it runs out; with ``reset_internal`` also at every ``reset``)."""

    def __init__(self, data_iter, size, reset_internal=True):
        super(ResizeIter, self).__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class PrefetchingIter(DataIter):
    """Prefetches one batch ahead from each of ``iters`` on background threads and
    combines their batches; ``rename_data``/``rename_label`` rename the outputs."""

    def __init__(self, iters, rename_data=None, rename_label=None):
        super(PrefetchingIter, self).__init__()
        if not isinstance(iters, list):
            iters = [iters]
        self.n_iter = len(iters)
        assert self.n_iter > 0
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.data_ready = [threading.Event() for _ in range(self.n_iter)]
        self.data_taken = [threading.Event() for _ in range(self.n_iter)]
        for e in self.data_taken:
            e.set()
        self.started = True
        self.current_batch = [None for _ in range(self.n_iter)]
        self.next_batch = [None for _ in range(self.n_iter)]
        self.errors = [None for _ in range(self.n_iter)]

        def prefetch_func(self, i):
            while True:
                self.data_taken[i].wait()
                if not self.started:
                    break
                try:
                    self.next_batch[i] = self.iters[i].next()
                except StopIteration:
                    self.next_batch[i] = None
                except BaseException as e:  # noqa: BLE001 - re-raised in next()
                    self.next_batch[i] = None
                    self.errors[i] = e
                self.data_taken[i].clear()
                self.data_ready[i].set()
        self.prefetch_threads = [threading.Thread(target=prefetch_func, args=[self, i], daemon=True)
                                 for i in range(self.n_iter)]
        for thread in self.prefetch_threads:
            thread.start()

    def __del__(self):
        self.started = False
        for e in getattr(self, "data_taken", []):
            e.set()
        for thread in getattr(self, "prefetch_threads", []):
            thread.join(timeout=1.0)

    @staticmethod
    def _rename(descs, renames):
        out = []
        for r, it_descs in zip(renames, descs):
            for x in it_descs:
                if isinstance(x, DataDesc):
                    out.append(DataDesc(r[x.name], x.shape, x.dtype, x.layout))
                else:
                    out.append(DataDesc(r[x[0]], x[1]))
        return out

    @property
    def provide_data(self):
        if self.rename_data is None:
            return sum([list(i.provide_data) for i in self.iters], [])
        return self._rename([i.provide_data for i in self.iters], self.rename_data)

    @property
    def provide_label(self):
        if self.rename_label is None:
            return sum([list(i.provide_label) for i in self.iters], [])
        return self._rename([i.provide_label for i in self.iters], self.rename_label)

    def reset(self):
        for e in self.data_ready:
            e.wait()
        for i in self.iters:
            i.reset()
        for e in self.data_ready:
            e.clear()
        for e in self.data_taken:
            e.set()

    def iter_next(self):
        for e in self.data_ready:
            e.wait()
        for err in self.errors:
            if err is not None:
                self.errors = [None] * self.n_iter
                raise err
        if self.next_batch[0] is None:
            for i in self.next_batch:
                assert i is None, "Number of entry mismatches between iterators"
            return False
        for batch in self.next_batch:
            assert batch.pad == self.next_batch[0].pad, \
                "Number of entry mismatches between iterators"
        self.current_batch = DataBatch(sum([list(batch.data) for batch in self.next_batch], []),
                                       sum([list(batch.label or []) for batch in self.next_batch], []),
                                       self.next_batch[0].pad,
                                       self.next_batch[0].index,
                                       provide_data=self.provide_data,
                                       provide_label=self.provide_label)
        for e in self.data_ready:
            e.clear()
        for e in self.data_taken:
            e.set()
        return True

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad
