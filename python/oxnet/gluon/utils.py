"""Gluon helpers: split a batch over devices, clip gradients by global norm, check
file hashes."""

import hashlib
import os
import uuid
import warnings

import numpy as np

from .. import ndarray
from .. import numpy as _mx_np
from ..util import is_np_array
from ..base import MXNetError
from .parameter import _add_all

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download",
           "replace_file"]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Splits ``data`` into ``num_slice`` slices along ``batch_axis``; with
    ``even_split=False`` the first ``size % num_slice`` slices get one more row
    (7 rows in 5 slices: 2, 2, 1, 1, 1), and fewer rows than slices is an error."""
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            "data with shape %s cannot be evenly split into %d slices along axis %d. Use a "
            "batch size that's multiple of %d or set even_split=False to allow uneven "
            "partitioning of data." % (str(data.shape), num_slice, batch_axis, num_slice))
    if size < num_slice:
        raise MXNetError("split_data: cannot split %d rows along axis %d into %d slices: "
                         "a slice would be empty" % (size, batch_axis, num_slice))
    each, extra = divmod(size, num_slice)
    bounds = [0]
    for i in range(num_slice):
        bounds.append(bounds[-1] + each + (1 if i < extra else 0))
    if batch_axis == 0:
        return [data[bounds[i]:bounds[i + 1]] for i in range(num_slice)]
    if not isinstance(data, ndarray.NDArray):  # an mx.np.ndarray
        lead = (slice(None),) * batch_axis
        return [data[lead + (slice(bounds[i], bounds[i + 1]),)] for i in range(num_slice)]
    return [ndarray.slice_axis(data, axis=batch_axis, begin=bounds[i], end=bounds[i + 1])
            for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Splits ``data`` (an NDArray, an mx.np array, or anything ``array`` takes: an
    mx.np array under NumPy-array semantics, else an NDArray) into one slice per context
    and copies each slice to its context."""
    if not isinstance(data, (ndarray.NDArray, _mx_np.ndarray)):
        data = (_mx_np.array if is_np_array() else ndarray.array)(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [i.as_in_context(ctx) for i, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescales ``arrays`` in place so that the 2-norm of all of them together is at
    most ``max_norm``; returns that norm (before clipping)."""
    if len(arrays) == 0:
        raise MXNetError("clip_global_norm: arrays must not be empty")
    ctx = arrays[0].context
    total = _add_all([ndarray.sum(ndarray.square(a)).as_in_context(ctx) for a in arrays])
    total_norm = ndarray.sqrt(total)
    if check_isfinite and not np.isfinite(total_norm.asscalar()):
        warnings.warn(UserWarning("nan or inf is detected. Clipping results will be "
                                  "undefined."), stacklevel=2)
    scale = max_norm / (total_norm + 1e-8)
    scale = ndarray.min(ndarray.concat(scale, ndarray.ones((1,), ctx=ctx), dim=0))
    for arr in arrays:
        arr *= scale.as_in_context(arr.context)
    if check_isfinite:
        return total_norm.asscalar()
    return total_norm


def check_sha1(filename, sha1_hash):
    """True when the SHA-1 of the file ``filename`` is ``sha1_hash`` (hex)."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        while True:
            data = f.read(1048576)
            if not data:
                break
            sha1.update(data)
    return sha1.hexdigest() == sha1_hash


def replace_file(src, dst):
    """Moves ``src`` onto ``dst`` atomically (same file system), replacing it."""
    os.replace(src, dst)


def _http_get(url, verify_ssl):
    """(status, chunk iterator) of a GET of ``url``: through ``requests`` when it is
    installed (as MXNet does), else urllib."""
    try:
        import requests
    except ImportError:
        requests = None
    if requests is not None:
        r = requests.get(url, stream=True, verify=verify_ssl)
        return r.status_code, r.iter_content(chunk_size=1024)
    import ssl
    import urllib.request
    ctx = None if verify_ssl else ssl._create_unverified_context()  # noqa: S323
    import urllib.error
    try:
        resp = urllib.request.urlopen(url, context=ctx)  # noqa: S310
    except urllib.error.HTTPError as e:   # a status other than 2xx: as requests reports it
        e.close()
        return e.code, iter(())
    return resp.status, iter(lambda: resp.read(1024), b"")


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Downloads ``url`` to ``path`` (a file, or a folder to put the URL's file name
    in; default: the file name in the current folder) and returns the file name.

    Skips the download when the file exists (and matches ``sha1_hash`` when given)
    unless ``overwrite``; retries ``retries`` times; writes to a temporary file first,
    so that concurrent downloads of one file leave exactly one complete file."""
    if path is None:
        fname = url.split("/")[-1]
        assert fname, ("Can't construct file-name from this URL. Please set the `path` "
                       "option manually.")
    else:
        path = os.path.expanduser(path)
        fname = os.path.join(path, url.split("/")[-1]) if os.path.isdir(path) else path
    assert retries >= 0, \
        "Number of retries should be at least 0, currently it's {}".format(retries)
    if not verify_ssl:
        warnings.warn("Unverified HTTPS request is being made (verify_ssl=False). "
                      "Adding certificate verification is strongly advised.")
    if overwrite or not os.path.exists(fname) or (sha1_hash and not check_sha1(fname, sha1_hash)):
        dirname = os.path.dirname(os.path.abspath(os.path.expanduser(fname)))
        os.makedirs(dirname, exist_ok=True)
        while retries + 1 > 0:
            try:
                print("Downloading {} from {}...".format(fname, url))
                status, chunks = _http_get(url, verify_ssl)
                if status != 200:
                    raise RuntimeError("Failed downloading url {}".format(url))
                tmp = "{}.{}".format(fname, uuid.uuid4())
                with open(tmp, "wb") as f:
                    for chunk in chunks:
                        if chunk:
                            f.write(chunk)
                if not os.path.exists(fname) or (sha1_hash and not check_sha1(fname, sha1_hash)):
                    replace_file(tmp, fname)
                else:
                    try:
                        os.remove(tmp)
                    except OSError:
                        pass
                    warnings.warn("File {} exists in file system so the downloaded file is "
                                  "deleted".format(fname))
                if sha1_hash and not check_sha1(fname, sha1_hash):
                    raise UserWarning("File {} is downloaded but the content hash does not "
                                      "match. The repo may be outdated or download may be "
                                      "incomplete. If the `repo_url` is overridden, consider "
                                      "switching to the default repo.".format(fname))
                break
            except Exception as e:  # noqa: BLE001 -- retried, then re-raised
                retries -= 1
                if retries <= 0:
                    raise e
                print("download failed due to {}, retrying, {} attempt{} left"
                      .format(repr(e), retries, "s" if retries > 1 else ""))
    return fname
