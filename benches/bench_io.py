"""Data pipeline benchmark: oxnet against MXNet 1.9.1 (OpenCV) in one run, on the
same photos with the same settings, images/s of the best of 3 epochs:

- ``ImageRecordIter`` on a ``.rec``: 224x224 random crop after resizing the shorter
  edge to 256, random mirror, mean/std normalisation, batch 64, 2 decode threads;
- ``gluon.data.vision.ImageFolderDataset`` + ``DataLoader`` on the JPEG folder tree:
  ``RandomResizedCrop(224)``, ``RandomFlipLeftRight``, ``ToTensor``, ``Normalize``,
  batch 64, 2 worker processes.

    python benches/bench_io.py [--rec PATH] [--folder PATH] [--record]

``--rec``/``--folder`` default to ../shared/data/photos (600 photos written by MXNet
1.9.1), else the committed 45-image fixture. Each backend runs in its own process
(this script with --worker NAME); MXNet comes from $MXNET_PYTHON,
benches/.mxnet-venv or /opt/mxnet-venv.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _driver import alternating_rounds, mxnet_python  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EPOCHS = 3
SETTINGS = dict(data_shape=(3, 224, 224), batch_size=64, resize=256, rand_crop=True,
                rand_mirror=True, mean_r=123.68, mean_g=116.28, mean_b=103.53, std_r=58.395,
                std_g=57.12, std_b=57.375, preprocess_threads=2, shuffle=False)


def _default(name):
    shared = os.path.join(HERE, "..", "..", "shared", "data", "photos", name)
    if os.path.exists(shared):
        return os.path.abspath(shared)
    return os.path.join(HERE, "..", "tests", "fixtures", "photos", name)


def default_rec():
    return _default("train.rec")


def rec_epochs(mx, rec):
    it = mx.io.ImageRecordIter(path_imgrec=rec, **SETTINGS)
    best = 0.0
    for _ in range(EPOCHS):
        it.reset()
        n = 0
        t = time.perf_counter()
        for b in it:
            b.data[0].wait_to_read()
            n += b.data[0].shape[0] - b.pad
        best = max(best, n / (time.perf_counter() - t))
    return best


def folder_epochs(mx, folder):
    from_gluon = mx.gluon.data
    T = from_gluon.vision.transforms
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomFlipLeftRight(), T.ToTensor(),
                    T.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))])
    ds = from_gluon.vision.ImageFolderDataset(folder).transform_first(tf)
    loader = from_gluon.DataLoader(ds, batch_size=64, shuffle=False, num_workers=2,
                                   last_batch="keep")
    best = 0.0
    for _ in range(EPOCHS):
        n = 0
        t = time.perf_counter()
        for x, _y in loader:
            x.wait_to_read()
            n += x.shape[0]
        best = max(best, n / (time.perf_counter() - t))
    return best


def worker(name, case, path):
    if name == "oxnet":
        import oxnet as mx
    else:
        import mxnet as mx
    ips = rec_epochs(mx, path) if case == "rec" else folder_epochs(mx, path)
    return {"images_per_s": ips, "version": getattr(mx, "__version__", "?")}


def run(python, name, case, path):
    import subprocess
    r = subprocess.run([python, os.path.abspath(__file__), "--worker", name, "--case", case,
                        "--path", path], capture_output=True, text=True)
    if r.returncode != 0:
        print("[%s failed]\n%s" % (name, r.stderr[-2000:]), file=sys.stderr)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--case")
    ap.add_argument("--path")
    ap.add_argument("--rec", default=default_rec())
    ap.add_argument("--folder", default=_default("folder"))
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--rounds", type=int, default=3, help="alternating oxnet/MXNet rounds per case")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.case, args.path)))
        return
    mxpy = mxnet_python()
    lines = ["| case | oxnet | mxnet | oxnet vs mxnet |", "|---|---|---|---|"]
    cell = lambda r: "%.0f" % r["images_per_s"] if r else "-"  # noqa: E731
    cases = [("rec", args.rec, "ImageRecordIter %s, resize 256, 224 crop+mirror+normalise, "
              "batch 64, 2 threads (images/s)" % os.path.basename(args.rec)),
             ("folder", args.folder, "ImageFolderDataset + DataLoader, RandomResizedCrop 224 + "
              "flip + ToTensor + Normalize, batch 64, 2 workers (images/s)")]
    for case, path, label in cases:
        # Rounds alternate oxnet and MXNet, so that a change in the shared machine's load
        # falls on both; the table gives the medians over rounds and the median of the
        # rounds' ratios.
        runs = {"oxnet": lambda: run(sys.executable, "oxnet", case, path)}
        if mxpy:
            runs["mxnet"] = lambda: run(mxpy, "mxnet", case, path)
        per, complete = alternating_rounds(runs, args.rounds)
        oxs = [r["images_per_s"] for r in per["oxnet"]]
        mxs = [r["images_per_s"] for r in per.get("mxnet", [])]
        ratios = [r["oxnet"]["images_per_s"] / r["mxnet"]["images_per_s"]
                  for r in complete if "mxnet" in r]
        med = lambda v: {"images_per_s": statistics.median(v)} if v else None  # noqa: E731
        ratio = "%.2fx" % statistics.median(ratios) if ratios else "-"
        each = " (rounds: %s)" % ", ".join("%.2f" % r for r in ratios) if len(ratios) > 1 else ""
        lines.append("| %s | %s | %s | %s%s |" % (label, cell(med(oxs)), cell(med(mxs)), ratio, each))
    lines.append("(medians over %d alternating rounds, each the best of %d epochs; ratios > 1 "
                 "mean oxnet is faster)" % (args.rounds, EPOCHS))
    table = "\n".join(lines)
    print(table)
    if args.record:
        head = "\n## bench_io — %s — %s, %d cores, Python %s\n\n" % (
            datetime.date.today().isoformat(), platform.machine(), os.cpu_count(),
            platform.python_version())
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(head + table + "\n")


if __name__ == "__main__":
    main()
