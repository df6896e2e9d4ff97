# make demo: build, then run the main demo.   make test: build, cargo test, pytest.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
CARGO ?= cargo

.PHONY: all build venv demo test test-rust test-python test-avx2 conformance conformance-check conformance-numpy1 conformance-check-numpy1 bench bench-setup clean wheel wheel-check

all: build

$(VENV)/.installed: requirements-dev.txt
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

build: venv
	$(VENV)/bin/maturin develop --release -q

demo: build
	$(PY) examples/train_mnist.py

test: build test-rust test-python

# The Rust tests (oxnet-core's; the PyO3 crate has none and is built by `build`), in
# the ci-test profile: release code generation without LTO (see Cargo.toml).
test-rust:
	$(CARGO) test -p oxnet-core --profile ci-test -q

test-python:
	$(PY) -m pytest tests -n 2

# The convolution and normalisation tests on an emulated AVX2-only CPU (QEMU user mode,
# Debian's qemu-user): the AVX-512 kernels must never run there (about 5 minutes).
test-avx2: build
	qemu-x86_64 -cpu EPYC-Rome $(PY) -m pytest tests/test_ops_nn_conv.py tests/test_fusion.py -q -p no:cacheprovider
	qemu-x86_64 -cpu EPYC-Rome $(PY) -m pytest tests/test_gluon.py tests/test_hybridize.py -q -p no:cacheprovider -k "batchnorm or BatchNorm"

# MXNet's own unit tests (../shared/mxnet-tests, or MXNET_TESTS=<folder of test files>)
# against the installed oxnet: a per-file table. conformance-check: the ratchet (the
# tests in tests/conformance/passing.txt must still pass).
MXNET_TESTS ?= ../shared/mxnet-tests
$(VENV)/.conformance: $(VENV)/.installed tests/conformance/requirements.txt
	$(PIP) install -q -r tests/conformance/requirements.txt
	touch $@

conformance: build $(VENV)/.conformance
	$(PY) tests/conformance/run.py $(MXNET_TESTS) -n 2

conformance-check: build $(VENV)/.conformance
	$(PY) tests/conformance/run.py $(MXNET_TESTS) -n 2 --only-listed --check

# The same oxnet build under NumPy 1.23.5 (MXNet's baseline used NumPy < 1.24): the tests
# in passing-numpy1.txt use NumPy names that NumPy 1.24+ removed, so they run here.
NP1_VENV := .venv-numpy1
$(NP1_VENV)/.installed: tests/conformance/requirements-numpy1.txt
	python3 -m venv $(NP1_VENV)
	$(NP1_VENV)/bin/pip install -q -r tests/conformance/requirements-numpy1.txt
	touch $@

conformance-numpy1: build $(NP1_VENV)/.installed
	PYTHONPATH=$(CURDIR)/python $(PY) tests/conformance/run.py $(MXNET_TESTS) -n 2 \
		--python $(CURDIR)/$(NP1_VENV)/bin/python $(CONFORMANCE_ARGS)

conformance-check-numpy1: build $(NP1_VENV)/.installed
	PYTHONPATH=$(CURDIR)/python $(PY) tests/conformance/run.py $(MXNET_TESTS) -n 2 \
		--python $(CURDIR)/$(NP1_VENV)/bin/python --passing tests/conformance/passing-numpy1.txt \
		--only-listed --check

# MXNet 1.9.1 (the oracle the benches compare against) needs NumPy < 1.24: own venv.
MXNET_VENV := benches/.mxnet-venv
$(MXNET_VENV)/.installed:
	python3 -m venv $(MXNET_VENV)
	$(MXNET_VENV)/bin/pip install -q "mxnet==1.9.1" "numpy<1.24" "scipy<1.12"
	touch $@

bench-setup: $(MXNET_VENV)/.installed

bench: build bench-setup
	$(PY) benches/bench_ndarray.py
	$(PY) benches/bench_gluon.py
	$(PY) benches/bench_ops.py
	$(PY) benches/bench_sparse.py

# The release wheel: one abi3 wheel for CPython >= 3.9, linked by zig against glibc 2.17
# (manylinux2014), so it installs on Ubuntu 20.04, Debian 11, RHEL 8 and older cluster
# images; auditwheel prints the platform tag it verified.
$(VENV)/.release: $(VENV)/.installed requirements-release.txt
	$(PIP) install -q -r requirements-release.txt
	touch $@

wheel: $(VENV)/.release
	rm -f target/wheels/oxnet-*.whl
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/maturin build --release --zig --compatibility manylinux2014 -o target/wheels
	$(VENV)/bin/auditwheel show target/wheels/oxnet-*.whl

# Installs that wheel into fresh venvs of the oldest and newest supported Pythons
# (3.9 with NumPy 1.26, 3.13 with NumPy 2) and runs the demo and a smoke test there.
wheel-check: wheel
	tests/wheel/check.sh target/wheels/oxnet-*.whl

clean:
	rm -rf target $(VENV) python/oxnet/_core*.so
