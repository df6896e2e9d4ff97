"""gluon.data image datasets (record file, folder, list, CIFAR binaries), the
image transforms and samplers, on the committed photos fixture."""

import os

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon
from oxnet.gluon.data.vision import transforms

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "photos")
LABELS = [float(l.split("\t")[1]) for l in open(os.path.join(FIX, "train.lst"))]


def test_record_datasets_and_loader():
    raw = gluon.data.RecordFileDataset(os.path.join(FIX, "train.rec"))
    assert len(raw) == 45 and isinstance(raw[0], bytes)
    ds = gluon.data.vision.ImageRecordDataset(os.path.join(FIX, "train.rec"))
    img, label = ds[4]
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    assert label == LABELS[4]
    ds = ds.transform_first(transforms.Compose([transforms.Resize((32, 32)),
                                                transforms.ToTensor()]))
    loader = gluon.data.DataLoader(ds, batch_size=8, last_batch="keep")
    labels = np.concatenate([y.asnumpy() for _, y in loader])
    np.testing.assert_array_equal(labels, LABELS)
    x, _ = next(iter(loader))
    assert x.shape == (8, 3, 32, 32)


def test_folder_and_list_datasets():
    ds = gluon.data.vision.ImageFolderDataset(os.path.join(FIX, "folder"))
    assert len(ds.synsets) == 15 and len(ds) == 45
    img, label = ds[3]
    assert label == 1 and img.shape[2] == 3
    gray, _ = gluon.data.vision.ImageFolderDataset(os.path.join(FIX, "folder"), flag=0)[0]
    assert gray.shape[2] == 1
    lst = gluon.data.vision.ImageListDataset(root=FIX, imglist="train.lst")
    img2, label2 = lst[3]
    assert label2 == LABELS[3]
    np.testing.assert_array_equal(img2.asnumpy(), img.asnumpy())
    lst2 = gluon.data.vision.ImageListDataset(root=FIX, imglist=[[2.0, "folder/brick/brick_000.jpg"]])
    assert lst2[0][1] == 2.0
    with pytest.raises(mx.MXNetError):
        gluon.data.vision.ImageFolderDataset(os.path.join(FIX, "nope"))


def test_cifar_from_local_binaries(tmp_path):
    rng = np.random.RandomState(0)
    for name in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]:
        rec = np.concatenate([rng.randint(0, 10, (4, 1)), rng.randint(0, 256, (4, 3072))], 1)
        rec.astype(np.uint8).tofile(str(tmp_path / name))
    ds = gluon.data.vision.CIFAR10(root=str(tmp_path))
    assert len(ds) == 20
    img, label = ds[0]
    raw = np.fromfile(str(tmp_path / "data_batch_1.bin"), dtype=np.uint8)[:3073]
    assert label == raw[0]
    np.testing.assert_array_equal(img.asnumpy(), raw[1:].reshape(3, 32, 32).transpose(1, 2, 0))
    assert len(gluon.data.vision.CIFAR10(root=str(tmp_path), train=False)) == 4
    rec = np.concatenate([rng.randint(0, 20, (3, 1)), rng.randint(0, 100, (3, 1)),
                          rng.randint(0, 256, (3, 3072))], 1).astype(np.uint8)
    rec.tofile(str(tmp_path / "train.bin"))
    fine = gluon.data.vision.CIFAR100(root=str(tmp_path), fine_label=True)
    assert [fine[i][1] for i in range(3)] == list(rec[:, 1])
    with pytest.raises(mx.MXNetError, match="does not download"):
        gluon.data.vision.CIFAR100(root=str(tmp_path / "empty"), train=False)


def test_transforms_shapes_and_values():
    x = mx.nd.array(np.random.uniform(0, 255, (30, 40, 3)).astype(np.uint8), dtype=np.uint8)
    assert transforms.Resize(20)(x).shape == (20, 20, 3)
    assert transforms.Resize(20, keep_ratio=True)(x).shape == (20, 26, 3)
    assert transforms.CenterCrop(16)(x).shape == (16, 16, 3)
    assert transforms.RandomResizedCrop(12)(x).shape == (12, 12, 3)
    assert transforms.RandomCrop(10, pad=2)(x).shape == (10, 10, 3)
    np.testing.assert_array_equal(transforms.CropResize(1, 2, 5, 4)(x).asnumpy(),
                                  x.asnumpy()[2:6, 1:6])
    flips = {transforms.RandomFlipLeftRight()(x).asnumpy().tobytes() for _ in range(20)}
    assert flips == {x.asnumpy().tobytes(), x.asnumpy()[:, ::-1].tobytes()}
    for t in [transforms.RandomBrightness(0.3), transforms.RandomContrast(0.3),
              transforms.RandomSaturation(0.3), transforms.RandomHue(0.3),
              transforms.RandomColorJitter(0.1, 0.1, 0.1, 0.1), transforms.RandomLighting(0.1)]:
        y = t(x)
        assert y.shape == x.shape and y.dtype == np.uint8
    b = transforms.RandomBrightness(0.0)(mx.nd.array(x.asnumpy().astype(np.float32)))
    np.testing.assert_allclose(b.asnumpy(), x.asnumpy(), rtol=1e-6)
    with pytest.raises(mx.MXNetError):
        transforms.Resize(-3)(x)
    with pytest.raises(mx.MXNetError):
        transforms.CropResize(30, 30, 20, 20)(x)


def test_interval_sampler():
    s = gluon.data.IntervalSampler(13, interval=3)
    assert list(s) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11] and len(s) == 13
    s = gluon.data.IntervalSampler(13, interval=3, rollover=False)
    assert list(s) == [0, 3, 6, 9, 12] and len(s) == 5
