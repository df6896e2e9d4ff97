"""``mx.recordio``: reading and writing MXNet's RecordIO files.

The framing (magic word, length/continuation word, padding, multi-part records)
and the image record header are implemented in Rust (``oxnet-core``'s
``io::recordio``); this module keeps MXNet 1.9.1's Python API over it. Files are
byte-compatible with MXNet's both ways.
"""

from collections import namedtuple
import numbers
import os

import numpy as np

from . import _core
from .base import MXNetError

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img",
           "unpack_img"]


class MXRecordIO(object):
    """Reads/writes a RecordIO data format, supporting sequential read and write.

    Parameters
    ----------
    uri : str
        Path to the record file.
    flag : str
        'w' for write or 'r' for read.
    """

    def __init__(self, uri, flag):
        self.uri = str(uri)
        self.handle = None
        self.flag = flag
        self.pid = None
        self.is_open = False
        self.open()

    def open(self):
        """Opens the record file."""
        if self.flag == "w":
            self.writable = True
        elif self.flag == "r":
            self.writable = False
        else:
            raise ValueError("Invalid flag %s" % self.flag)
        self.handle = _core.RecordFile(self.uri, self.flag)
        self.pid = os.getpid()
        self.is_open = True

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __getstate__(self):
        """Override pickling behavior: the handle is reopened in the new process."""
        is_open = self.is_open
        self.close()
        d = dict(self.__dict__)
        d["is_open"] = is_open
        d["handle"] = None
        if is_open:
            self.open()
        return d

    def __setstate__(self, d):
        self.__dict__ = d
        is_open = d["is_open"]
        self.is_open = False
        self.handle = None
        if is_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        """Reopens the file in a forked child (a handle is per process)."""
        if self.pid != os.getpid():
            if allow_reset:
                self.reset()
            else:
                raise RuntimeError("Forbidden operation in multiple processes")

    def close(self):
        """Closes the record file."""
        if not getattr(self, "is_open", False):
            return
        self.handle.close()
        self.handle = None
        self.is_open = False
        self.pid = None

    def reset(self):
        """Resets the pointer to the first item (closes and reopens the file)."""
        self.close()
        self.open()

    def write(self, buf):
        """Inserts a string buffer as a record."""
        assert self.writable
        self._check_pid(allow_reset=False)
        self.handle.write(bytes(buf))

    def read(self):
        """Returns the next record as bytes, or None at the end of the file."""
        assert not self.writable
        self._check_pid(allow_reset=True)
        return self.handle.read()


class MXIndexedRecordIO(MXRecordIO):
    """Reads/writes RecordIO with an index file for random access.

    Parameters
    ----------
    idx_path : str
        Path to the index file (``key<TAB>offset`` lines).
    uri : str
        Path to the record file.
    flag : str
        'w' for write or 'r' for read.
    key_type : type
        Data type of the keys.
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = str(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super(MXIndexedRecordIO, self).__init__(uri, flag)

    def open(self):
        super(MXIndexedRecordIO, self).open()
        self.idx = {}
        self.keys = []
        self.fidx = open(self.idx_path, self.flag)
        if not self.writable:
            for n, line in enumerate(iter(self.fidx.readline, "")):
                line = line.strip().split("\t")
                if line == [""]:
                    continue
                if len(line) < 2:
                    raise MXNetError("RecordIO index %s: line %d is not 'key<TAB>offset'"
                                     % (self.idx_path, n + 1))
                key = self.key_type(line[0])
                self.idx[key] = int(line[1])
                self.keys.append(key)

    def close(self):
        """Closes the record file and the index file."""
        if not getattr(self, "is_open", False):
            return
        super(MXIndexedRecordIO, self).close()
        self.fidx.close()

    def __getstate__(self):
        d = super(MXIndexedRecordIO, self).__getstate__()
        d["fidx"] = None
        return d

    def seek(self, idx):
        """Sets the current read pointer position to the record of key ``idx``."""
        assert not self.writable
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise MXNetError("RecordIO %s: key %r is not in the index %s"
                             % (self.uri, idx, self.idx_path))
        self.handle.seek(self.idx[idx])

    def tell(self):
        """Returns the current position of the write head."""
        assert self.writable
        return self.handle.tell()

    def read_idx(self, idx):
        """Returns the record at key ``idx``."""
        self.seek(idx)
        rec = self.read()
        if rec is None:
            raise MXNetError("RecordIO %s: no record at key %r (offset %d is the end of the file)"
                             % (self.uri, idx, self.idx[idx]))
        return rec

    def write_idx(self, idx, buf):
        """Inserts a record at key ``idx`` and writes its offset to the index."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write("%s\t%d\n" % (str(key), pos))
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
"""An alias for HEADER. Used to store metadata (e.g. labels) accompanying a record.

flag : int (number of float labels following the header when > 0)
label : float or an array of float
id, id2 : int
"""

_IR_SIZE = 24


def pack(header, s):
    """Packs a string into a record with an ``IRHeader`` in front."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        labels = []
        flag, label = 0, float(header.label)
    else:
        labels = np.asarray(header.label, dtype=np.float32).ravel().tolist()
        flag, label = len(labels), 0.0
    if isinstance(s, str):
        s = s.encode("utf-8")
    return _core.recordio_pack(flag, label, int(header.id), int(header.id2), labels, bytes(s))


def unpack(s):
    """Unpacks a record into an ``IRHeader`` and the payload bytes."""
    s = bytes(s)
    flag, label, id_, id2, labels, off = _core.recordio_unpack(s)
    if flag > 0:
        label = np.frombuffer(s, np.float32, flag, _IR_SIZE)
    header = IRHeader(flag, label, id_, id2)
    return header, s[off:]


def unpack_img(s, iscolor=-1):
    """Unpacks a record into its header and image as a NumPy ``uint8`` array in
    BGR order (as OpenCV's ``imdecode`` gives it). ``iscolor``: 1 colour, 0
    grayscale, -1 as stored."""
    header, s = unpack(s)
    img, h, w, c = _core.image_decode(s, int(iscolor), False)
    return header, img.reshape((h, w)) if c == 1 else img


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """Packs an image (NumPy ``uint8`` array, BGR as OpenCV holds it) into a record.

    ``quality``: JPEG quality 1-100; for PNG the compression level (ignored).
    ``img_fmt``: '.jpg' or '.png'.
    """
    img = np.ascontiguousarray(np.asarray(img), dtype=np.uint8)
    if img.ndim == 2:
        h, w, c = img.shape[0], img.shape[1], 1
    elif img.ndim == 3:
        h, w, c = img.shape
    else:
        raise MXNetError("pack_img: expected an HxW or HxWxC image, got shape %s" % (img.shape,))
    buf = _core.image_encode(img.tobytes(), h, w, c, img_fmt, int(quality), True)
    return pack(header, buf)
