"""``mx.io.LibSVMIter``: LibSVM files as CSR batches, as MXNet 1.9.1 gives them.

The format (zero-based, ascending column indices per row)::

    label[:weight] index:value index:value ...

- ``data`` comes out as a ``CSRNDArray`` of shape ``(batch_size,) + data_shape``;
  without ``label_libsvm`` the label is the dense first column, shape ``(batch_size,)``;
  with ``label_libsvm`` (and ``label_shape`` wider than 1, as MXNet requires) the label
  is the CSR rows of that file (its own first column is ignored).
- Only ``round_batch=True`` works for the last, incomplete batch: it is completed with
  the first examples, ``pad`` counts them and the next epoch starts after them (MXNet's
  sparse batch loader); ``round_batch=False`` raises when a batch would be incomplete.
- ``num_parts``/``part_index`` split the file(s) by bytes as dmlc's line splitter does
  (``ceil(total_bytes / num_parts)`` per part, each part starting at the first line
  that begins after its byte offset), so a part holds the same examples as in MXNet.
- ``data_libsvm`` may be a directory: all its files, in name order, form one input.
- An index without ``:value`` counts as 1 (dmlc's rule); blank lines are skipped.

The whole file is tokenised with NumPy (no Python loop over numbers); a line that does
not parse, a negative or too large index, or unsorted/duplicated indices raise
``MXNetError`` naming the file and the line.
"""

import os
import warnings

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from .io import DataBatch, DataDesc, _BatchIter

__all__ = ["LibSVMIter"]

_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True      # what bytes.split() splits on
_SEP = _WS.copy()
_SEP[ord(":")] = True
_NL = np.zeros(256, dtype=bool)
_NL[[10, 13]] = True


class _Parsed:
    """Rows of one LibSVM input: CSR parts, the label column and each row's part."""

    def __init__(self, labels, data, indices, indptr, part, nbytes):
        self.labels, self.data, self.indices, self.indptr = labels, data, indices, indptr
        self.part, self.nbytes = part, nbytes


def _files(path, what):
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        files = [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
        if not files:
            raise MXNetError("LibSVMIter: %s directory %s holds no files" % (what, path))
        return files
    if not os.path.isfile(path):
        raise MXNetError("LibSVMIter: %s %s: no such file" % (what, path))
    return [path]


def _fail(what, path, raw, pos, msg):
    line = raw.count(b"\n", 0, int(pos)) + 1
    a = raw.rfind(b"\n", 0, int(pos)) + 1
    b = raw.find(b"\n", int(pos))
    text = raw[a:b if b >= 0 else len(raw)].decode("utf-8", "replace").rstrip("\r")
    raise MXNetError("LibSVMIter: %s %s line %d: %s: %r" % (what, path, line, msg, text))


def _parse_file(path, raw, offset, width, what):
    """Parse one file's bytes. Returns (labels, values, indices, row_nnz, q) where q is
    the global byte position dmlc's splitter assigns each row by."""
    b = np.frombuffer(raw, dtype=np.uint8)
    n = b.size
    if n == 0:
        e = np.zeros(0)
        return e, e.astype(np.float32), e.astype(np.int64), e.astype(np.int64), e.astype(np.int64)
    sep = _SEP[b]
    prev_sep = np.empty(n, dtype=bool)
    prev_sep[0] = True
    prev_sep[1:] = sep[:-1]
    starts = np.flatnonzero(~sep & prev_sep)          # sub-token starts ("1:2" -> 2)
    next_sep = np.empty(n, dtype=bool)
    next_sep[-1] = True
    next_sep[:-1] = sep[1:]
    # a colon must sit between two non-separators ("3:0.5"), never "3:", ":5" or "3::5"
    colons = np.flatnonzero(b == ord(":"))
    if colons.size:
        bad = prev_sep[colons] | next_sep[colons]
        if bad.any():
            _fail(what, path, raw, colons[np.argmax(bad)], "misplaced ':'")
    after_colon = np.zeros(starts.size, dtype=bool)
    nz = starts > 0
    after_colon[nz] = b[starts[nz] - 1] == ord(":")
    head = ~after_colon                                 # first piece of a token
    newlines = np.flatnonzero(b == ord("\n"))
    line_of = np.searchsorted(newlines, starts)         # 0-based line of each piece
    heads = np.flatnonzero(head)
    group = np.cumsum(head) - 1                         # token of each piece
    pieces = np.bincount(group, minlength=heads.size)   # 1: "idx", 2: "idx:val"
    hline = line_of[heads]
    is_label = np.ones(heads.size, dtype=bool)
    is_label[1:] = hline[1:] != hline[:-1]
    if (pieces > 2).any():
        _fail(what, path, raw, starts[heads[np.argmax(pieces > 2)]], "more than one ':' in a token")
    vals = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:   # one C pass over all the numbers
            vals = np.fromstring(raw.replace(b":", b" "), dtype=np.float64, sep=" ")
        except (DeprecationWarning, ValueError):
            vals = None
    if vals is None or vals.size != starts.size:
        toks = raw.replace(b":", b" ").split()
        for k, t in enumerate(toks):
            try:
                float(t)
            except ValueError:
                _fail(what, path, raw, starts[k], "%r is not a number" % t.decode("utf-8", "replace"))
        vals = np.array(toks).astype(np.float64)
    first = vals[heads]
    second = np.ones(heads.size)
    two = pieces == 2
    second[two] = vals[heads[two] + 1]
    labels = first[is_label]
    feat = ~is_label
    idx = first[feat]
    fval = second[feat].astype(np.float32)
    fpos = starts[heads[feat]]
    badi = (idx < 0) | (idx != np.floor(idx)) | (idx >= width)
    if badi.any():
        k = np.argmax(badi)
        msg = ("feature index %s is negative" % idx[k] if idx[k] < 0 else
               "feature index %s is not an integer" % idx[k] if idx[k] != np.floor(idx[k]) else
               "feature index %d is outside [0, %d) (data_shape/label_shape)" % (idx[k], width))
        _fail(what, path, raw, fpos[k], msg)
    idx = idx.astype(np.int64)
    row = np.cumsum(is_label)[feat] - 1                 # row of each feature
    if idx.size > 1:
        same = row[1:] == row[:-1]
        unsorted = same & (idx[1:] <= idx[:-1])
        if unsorted.any():
            _fail(what, path, raw, fpos[1 + np.argmax(unsorted)],
                  "column indices must be strictly ascending")
    nnz = np.bincount(row, minlength=labels.size).astype(np.int64)
    # dmlc's splitter: a row goes with the last '\n'/'\r' before it (the file start
    # counts as one at its first byte)
    lstart = starts[heads[is_label]]
    nl = np.flatnonzero(_NL[b])
    k = np.searchsorted(nl, lstart) - 1
    q = np.full(lstart.size, offset, dtype=np.int64)
    if nl.size:
        q[k >= 0] += nl[k[k >= 0]]
    return labels, fval, idx, nnz, q


def _parse(path, width, what, num_parts, part_index):
    files = _files(path, what)
    raws = []
    for f in files:
        try:
            with open(f, "rb") as fh:
                raws.append(fh.read())
        except OSError as e:
            raise MXNetError("LibSVMIter: cannot read %s %s: %s" % (what, f, e)) from None
    total = sum(len(r) for r in raws)
    parts = []
    off = 0
    for f, raw in zip(files, raws):
        parts.append(_parse_file(f, raw, off, width, what))
        off += len(raw)
    labels = np.concatenate([p[0] for p in parts])
    vals = np.concatenate([p[1] for p in parts])
    idx = np.concatenate([p[2] for p in parts])
    nnz = np.concatenate([p[3] for p in parts])
    q = np.concatenate([p[4] for p in parts])
    indptr = np.zeros(labels.size + 1, dtype=np.int64)
    np.cumsum(nnz, out=indptr[1:])
    if num_parts > 1:
        nstep = max(1, -(-total // num_parts))
        part = np.minimum(q // nstep, num_parts - 1)
        keep = np.flatnonzero(part == part_index)
        labels, vals, idx, indptr = _rows(labels, vals, idx, indptr, keep)
    return _Parsed(labels, vals, idx, indptr, part_index, total)


def _rows(labels, vals, idx, indptr, rows):
    """The CSR parts of the given rows (vectorised gather)."""
    rows = np.asarray(rows, dtype=np.int64)
    lo, hi = indptr[rows], indptr[rows + 1]
    cnt = hi - lo
    new_ptr = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(cnt, out=new_ptr[1:])
    take = np.repeat(lo - new_ptr[:-1], cnt) + np.arange(new_ptr[-1])
    return labels[rows], vals[take], idx[take], new_ptr


class LibSVMIter(_BatchIter):
    """Iterates over a LibSVM file (zero-based indices): ``data`` as a CSRNDArray
    batch, the label dense (or CSR from ``label_libsvm``); see the module docs."""

    def __init__(self, data_libsvm, data_shape, label_libsvm="NULL", label_shape=(1,),
                 batch_size=1, round_batch=True, num_parts=1, part_index=0,
                 prefetch_buffer=4, dtype=None, ctx="cpu", data_name="data",
                 label_name="softmax_label", **kwargs):
        super(LibSVMIter, self).__init__(int(batch_size))
        data_shape = tuple(int(x) for x in np.atleast_1d(data_shape))
        label_shape = tuple(int(x) for x in np.atleast_1d(label_shape))
        if len(data_shape) != 1:
            raise MXNetError("LibSVMIter: dimension of data_shape is expected to be 1, got %s"
                             % (data_shape,))
        if int(num_parts) <= 0:
            raise MXNetError("LibSVMIter: number of parts should be positive")
        if int(part_index) < 0 or int(part_index) >= int(num_parts):
            raise MXNetError("LibSVMIter: part_index %d is outside [0, num_parts=%d)"
                             % (int(part_index), int(num_parts)))
        if self.batch_size <= 0:
            raise MXNetError("LibSVMIter: batch_size must be positive")
        has_label_file = label_libsvm is not None and label_libsvm != "NULL"
        lsize = int(np.prod(label_shape))
        if has_label_file and lsize <= 1:
            raise MXNetError("LibSVMIter: label_shape is not expected to be (1,) when "
                             "label_libsvm is set")
        if not has_label_file and lsize != 1:
            raise MXNetError("LibSVMIter: label_shape is expected to be (1,) when "
                             "label_libsvm is NULL")
        self._width = data_shape[0]
        self._lwidth = lsize
        self._data = _parse(data_libsvm, self._width, "data_libsvm", int(num_parts),
                            int(part_index))
        self._label = None
        if has_label_file:
            lab = _parse(label_libsvm, lsize, "label_libsvm", int(num_parts), int(part_index))
            n = self._data.labels.size
            if lab.labels.size < n:
                raise MXNetError("LibSVMIter: %s has %d rows but %s only %d (the label file "
                                 "needs a row per example)" % (data_libsvm, n, label_libsvm,
                                                                lab.labels.size))
            if lab.labels.size > n:
                lab = _Parsed(*_rows(lab.labels, lab.data, lab.indices, lab.indptr,
                                     np.arange(n)), lab.part, lab.nbytes)
            self._label = lab
        self._n = self._data.labels.size
        self.round_batch = bool(round_batch)
        self._data_name, self._label_name = data_name, label_name
        self._pos = 0
        self._overflow = 0
        self._batch = None

    @property
    def provide_data(self):
        return [DataDesc(self._data_name, (self.batch_size, self._width), np.float32)]

    @property
    def provide_label(self):
        if self._label is not None:
            return [DataDesc(self._label_name, (self.batch_size, self._lwidth), np.float32)]
        return [DataDesc(self._label_name, (self.batch_size,), np.float32)]

    def reset(self):
        if not self.round_batch or self._overflow == 0:
            self._pos = 0
        self._overflow = 0
        self._batch = None

    def iter_next(self):
        if self._overflow or self._n == 0:
            return False
        take = min(self.batch_size, self._n - self._pos)
        if take <= 0:
            return False
        rows = np.arange(self._pos, self._pos + take)
        self._pos += take
        pad = 0
        if take < self.batch_size:
            if not self.round_batch:
                raise MXNetError("LibSVMIter: round_batch = False is not supported for "
                                 "sparse data iterator (the last batch is incomplete)")
            pad = self.batch_size - take
            if pad > self._n:
                raise MXNetError("LibSVMIter: number of input must be bigger than batch size")
            rows = np.concatenate([rows, np.arange(pad)])
            self._pos = pad
            self._overflow = pad
        d = self._data
        lab, vals, idx, ptr = _rows(d.labels, d.data, d.indices, d.indptr, rows)
        data = nd.sparse.csr_matrix((vals, idx, ptr), shape=(self.batch_size, self._width),
                                    dtype=np.float32)
        if self._label is not None:
            L = self._label
            _, lv, li, lp = _rows(L.labels, L.data, L.indices, L.indptr, rows)
            label = nd.sparse.csr_matrix((lv, li, lp), shape=(self.batch_size, self._lwidth),
                                         dtype=np.float32)
        else:
            label = nd.array(lab.astype(np.float32))
        self._batch = DataBatch([data], [label], pad=pad, index=rows.astype(np.uint64),
                                provide_data=self.provide_data,
                                provide_label=self.provide_label)
        return True
