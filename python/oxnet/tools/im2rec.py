"""Makes image lists and RecordIO files, with the command line of MXNet 1.9.1's
``tools/im2rec.py``::

    python -m oxnet.tools.im2rec PREFIX ROOT --list [--recursive] [--train-ratio R]
        [--test-ratio R] [--exts .jpeg .jpg .png] [--chunks N] [--no-shuffle]
    python -m oxnet.tools.im2rec PREFIX ROOT [--quality 95] [--resize N] [--center-crop]
        [--encoding .jpg|.png] [--num-thread N] [--pass-through] [--color 1|0|-1]
        [--pack-label]

List mode writes ``PREFIX.lst`` (or ``PREFIX_train.lst``/``_val.lst``/``_test.lst``
with ratios, ``PREFIX_<chunk>...`` with chunks): ``index<TAB>label<TAB>path`` lines,
labels printed with ``%f``. With ``--recursive`` each folder holding images gets the
next label, folders and files visited in sorted order; the list is shuffled with
Python's ``random.seed(100)`` as MXNet's tool does, so the same tree gives the same
``.lst`` file.

Pack mode reads every ``PREFIX*.lst`` in PREFIX's folder and writes ``.rec``/``.idx``
next to it (the record key is the list's index; the header holds the label, or all
labels with ``--pack-label``). Images are decoded, centre-cropped, resized (shorter
edge to ``--resize``, bilinear) and re-encoded in Rust (oxnet's ``mx.image`` and
``mx.recordio``), BGR as MXNet packs them, on ``--num-thread`` threads; records are
written in list order. ``--pass-through`` stores the file bytes unchanged. An image
that cannot be read is reported and skipped, as MXNet's tool does.
"""

import argparse
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import recordio
from ..base import MXNetError

__all__ = ["list_image", "write_list", "make_list", "read_list", "encode_item", "pack_list",
           "main"]


def list_image(root, recursive, exts):
    """Yields ``(index, relative path, label)`` for the images under ``root``."""
    exts = {e.lower() for e in exts}
    n = 0
    if recursive:
        labels = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            for fname in sorted(files):
                full = os.path.join(path, fname)
                if os.path.splitext(fname)[1].lower() in exts and os.path.isfile(full):
                    lab = labels.setdefault(path, len(labels))
                    yield (n, os.path.relpath(full, root), lab)
                    n += 1
        for path, lab in sorted(labels.items(), key=lambda kv: kv[1]):
            print(os.path.relpath(path, root), lab)
    else:
        for fname in sorted(os.listdir(root)):
            full = os.path.join(root, fname)
            if os.path.splitext(fname)[1].lower() in exts and os.path.isfile(full):
                yield (n, os.path.relpath(full, root), 0)
                n += 1


def write_list(path, items):
    """Writes ``(index, path, label, ...)`` items as an MXNet ``.lst`` file."""
    with open(path, "w") as f:
        for it in items:
            labels = "".join("%f\t" % x for x in it[2:])
            f.write("%d\t%s%s\n" % (it[0], labels, it[1]))


def make_list(args):
    """List mode: writes the ``.lst`` file(s) for ``args.root``."""
    items = list(list_image(args.root, args.recursive, args.exts))
    if args.shuffle:
        random.seed(100)
        random.shuffle(items)
    size = (len(items) + args.chunks - 1) // args.chunks
    written = []
    for c in range(args.chunks):
        chunk = items[c * size:(c + 1) * size]
        tag = "_%d" % c if args.chunks > 1 else ""
        n_train = int(size * args.train_ratio)
        n_test = int(size * args.test_ratio)
        if args.train_ratio == 1.0:
            outs = [(args.prefix + tag + ".lst", chunk)]
        else:
            outs = []
            if args.test_ratio:
                outs.append((args.prefix + tag + "_test.lst", chunk[:n_test]))
            if args.train_ratio + args.test_ratio < 1.0:
                outs.append((args.prefix + tag + "_val.lst", chunk[n_test + n_train:]))
            outs.append((args.prefix + tag + "_train.lst", chunk[n_test:n_test + n_train]))
        for path, part in outs:
            write_list(path, part)
            written.append(path)
    return written


def read_list(path):
    """Yields ``[index, path, label, ...]`` from a ``.lst`` file; a line that does not
    parse is reported (file and line) and skipped, as MXNet's tool does."""
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = [p.strip() for p in line.strip().split("\t")]
            if len(parts) < 3:
                print("%s line %d: a .lst line needs index, label(s) and path, got %r; "
                      "skipped" % (path, lineno, line.rstrip("\n")), file=sys.stderr)
                continue
            try:
                item = [int(parts[0]), parts[-1]] + [float(x) for x in parts[1:-1]]
            except ValueError as e:
                print("%s line %d does not parse (%s); skipped" % (path, lineno, e),
                      file=sys.stderr)
                continue
            yield item


def _resize_short_edge(img, size):
    """Shorter edge to ``size``, the longer scaled with integer division (MXNet's tool),
    bilinear like its ``cv2.resize``."""
    from ..image import imresize
    from .. import ndarray as nd
    h, w = img.shape[:2]
    if h > w:
        nw, nh = size, h * size // w
    else:
        nw, nh = w * size // h, size
    squeeze = img.ndim == 2
    src = nd.array(img[:, :, None] if squeeze else img, dtype=np.uint8)
    out = imresize(src, nw, nh, interp=1).asnumpy()
    return out[:, :, 0] if squeeze else out


def encode_item(args, item):
    """The record bytes of one list item, or ``None`` (reported) when it fails."""
    path = os.path.join(args.root, item[1])
    if len(item) > 3 and args.pack_label:
        header = recordio.IRHeader(0, item[2:], item[0], 0)
    else:
        header = recordio.IRHeader(0, item[2], item[0], 0)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        print("im2rec: cannot read %s: %s; skipped" % (path, e), file=sys.stderr)
        return None
    if args.pass_through:
        return recordio.pack(header, raw)
    from ..image.image import _decode_np
    try:
        img = _decode_np(raw, args.color, False)        # BGR, as MXNet packs
    except MXNetError as e:
        print("im2rec: cannot decode %s: %s; skipped" % (path, e), file=sys.stderr)
        return None
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if args.center_crop:
        h, w = img.shape[:2]
        if h > w:
            m = (h - w) // 2
            img = img[m:m + w]
        else:
            m = (w - h) // 2
            img = img[:, m:m + h]
    if args.resize:
        img = _resize_short_edge(img, args.resize)
    try:
        return recordio.pack_img(header, img, quality=args.quality, img_fmt=args.encoding)
    except MXNetError as e:
        print("im2rec: cannot encode %s: %s; skipped" % (path, e), file=sys.stderr)
        return None


def pack_list(args, lst):
    """Writes ``<lst without .lst>.rec/.idx`` from the list file ``lst``; returns the
    number of records written."""
    items = list(read_list(lst))
    base = os.path.splitext(lst)[0]
    rec = recordio.MXIndexedRecordIO(base + ".idx", base + ".rec", "w")
    t0 = time.time()
    count = 0
    try:
        with ThreadPoolExecutor(max_workers=max(1, args.num_thread)) as pool:
            for item, s in zip(items, pool.map(lambda it: encode_item(args, it), items)):
                if s is None:
                    continue
                rec.write_idx(item[0], s)
                if count % 1000 == 0:
                    print("time: %.3f count: %d" % (time.time() - t0, count))
                count += 1
    finally:
        rec.close()
    return count


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Create an image list or make a record database by reading from an "
                    "image list (MXNet's im2rec, on oxnet)")
    p.add_argument("prefix", help="prefix of input/output lst and rec files.")
    p.add_argument("root", help="path to folder containing images.")
    g = p.add_argument_group("Options for creating image lists")
    g.add_argument("--list", action="store_true",
                   help="make a list of the images under root instead of a record file")
    g.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"],
                   help="list of acceptable image extensions.")
    g.add_argument("--chunks", type=int, default=1, help="number of chunks.")
    g.add_argument("--train-ratio", type=float, default=1.0,
                   help="Ratio of images to use for training.")
    g.add_argument("--test-ratio", type=float, default=0,
                   help="Ratio of images to use for testing.")
    g.add_argument("--recursive", action="store_true",
                   help="walk root's subfolders; each folder of images is one class")
    g.add_argument("--no-shuffle", dest="shuffle", action="store_false",
                   help="keep the images in the listed order")
    g = p.add_argument_group("Options for creating database")
    g.add_argument("--pass-through", action="store_true",
                   help="store the image files unchanged (no decode, resize or re-encode)")
    g.add_argument("--resize", type=int, default=0,
                   help="resize the shorter edge of the image to this size")
    g.add_argument("--center-crop", action="store_true",
                   help="crop the centre square of the image")
    g.add_argument("--quality", type=int, default=95,
                   help="JPEG quality for encoding, 1-100; or PNG compression for encoding")
    g.add_argument("--num-thread", type=int, default=1,
                   help="number of threads decoding and encoding images")
    g.add_argument("--color", type=int, default=1, choices=[-1, 0, 1],
                   help="1: colour (3 channels), 0: grayscale, -1: as in the file")
    g.add_argument("--encoding", type=str, default=".jpg", choices=[".jpg", ".png"],
                   help="image encoding in the record")
    g.add_argument("--pack-label", action="store_true",
                   help="store every label of a list line in the record header")
    args = p.parse_args(argv)
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        make_list(args)
        return 0
    folder = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    lists = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                   if os.path.isfile(os.path.join(folder, f)))
    lists = [f for f in lists if f.startswith(args.prefix) and f.endswith(".lst")]
    if not lists:
        print("Did not find and list file with prefix %s" % args.prefix)
        return 1
    for lst in lists:
        print("Creating .rec file from", lst, "in", folder)
        pack_list(args, lst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
