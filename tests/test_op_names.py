"""The public names of MXNet 1.9.1's ``mx.nd`` and ``mx.sym`` (committed in
fixtures/mxnet_1_9_1_op_names.json, taken from ``dir()`` of MXNet 1.9.1) exist in
oxnet, except the ones still listed in ``NOT_YET`` below (a ratchet: the list only
shrinks; a name that appears in oxnet must be removed from it). Contrib, sparse,
linalg and random names are counted by their own modules' tests."""

import json
import os

import oxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))

# Counted elsewhere: sub-namespaces and modules, contrib/sparse/linalg/random ops.
OTHER_AREAS = ("contrib", "sparse", "linalg", "random", "sample_", "_sample", "shuffle", "gen_", "np",
               "numpy", "image", "op", "register", "_internal")

# Still to build (each a missing MXNet name; remove it when it lands).
_BOTH = {
    "Convolution_v1", "Crop",
    "IdentityAttachKLSparseReg", "Pooling_v1",
    "mp_lamb_update_phase1",
    "mp_lamb_update_phase2", "multi_lars", "multi_mp_sgd_mom_update", "multi_mp_sgd_update",
    "multi_sgd_mom_update", "multi_sgd_update", "preloaded_multi_mp_sgd_mom_update",
    "preloaded_multi_mp_sgd_update", "preloaded_multi_sgd_mom_update", "preloaded_multi_sgd_update",
}
NOT_YET = {
    "nd": _BOTH | {
        "imdecode",
    },
    "sym": _BOTH,
}


def _names():
    with open(os.path.join(HERE, "fixtures", "mxnet_1_9_1_op_names.json")) as f:
        return json.load(f)


def _missing(kind, module):
    have = set(dir(module))
    return {n for n in _names()[kind] if n not in have and not n.startswith(OTHER_AREAS) and not n.startswith("_")}


def test_nd_names():
    missing = _missing("nd", mx.nd)
    assert missing <= NOT_YET["nd"], sorted(missing - NOT_YET["nd"])
    assert not (NOT_YET["nd"] & set(dir(mx.nd))), "remove from NOT_YET: %s" % sorted(NOT_YET["nd"] & set(dir(mx.nd)))


def test_sym_names():
    missing = _missing("sym", mx.sym)
    assert missing <= NOT_YET["sym"], sorted(missing - NOT_YET["sym"])
    assert not (NOT_YET["sym"] & set(dir(mx.sym))), "remove from NOT_YET: %s" % sorted(NOT_YET["sym"] & set(dir(mx.sym)))


def test_new_names_are_callable():
    for name in ["cumsum", "gammaln", "gamma", "erf", "erfinv", "moveaxis", "diag", "linspace", "add_n",
                 "ElementWiseSum", "split_v2", "slice_like", "shape_array", "size_array", "depth_to_space",
                 "space_to_depth", "ravel_multi_index", "unravel_index", "batch_take", "histogram", "khatri_rao",
                 "moments", "im2col", "col2im", "pad", "Pad", "hard_sigmoid", "smooth_l1", "softmax_cross_entropy",
                 "L2Normalization", "LRN", "SequenceMask", "SequenceLast", "SequenceReverse", "UpSampling",
                 "SVMOutput", "GroupNorm", "all_finite", "multi_all_finite", "multi_sum_sq", "reset_arrays",
                 "choose_element_0index", "fill_element_0index", "onehot_encode", "amp_cast", "amp_multicast"]:
        assert callable(getattr(mx.nd, name)), name
    for name in ["eye", "arange", "full", "linspace", "split_v2", "histogram", "cumsum", "GroupNorm"]:
        assert callable(getattr(mx.sym, name)), name
