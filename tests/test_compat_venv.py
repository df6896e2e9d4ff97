"""`python -m oxnet.compat enable` in a fresh virtual environment: an unmodified script
that says `import mxnet` then runs on oxnet; `disable` undoes it; `enable` refuses when a
real MXNet is installed there.

The environment is a plain `python -m venv` (no system site-packages, no pip). Nothing is
installed into it but one .pth file naming oxnet's source folder and a folder that holds
links to NumPy, oxnet's only run-time dependency."""

import glob
import os
import subprocess
import sys
import textwrap

import numpy
import pytest

import oxnet

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(oxnet.__file__)))

SCRIPT = textwrap.dedent("""
    import sys
    import mxnet as mx
    import mxnet.gluon
    from mxnet import nd
    assert mx.gluon is sys.modules["oxnet"].gluon
    assert isinstance(nd.ones(2), sys.modules["oxnet"].nd.NDArray)
    net = mx.gluon.nn.Dense(3, in_units=2)
    net.initialize(mx.init.One())
    out = net(nd.array([[1.0, 2.0]]))
    assert out.asnumpy().tolist() == [[3.0, 3.0, 3.0]], out.asnumpy()
    print("ran on", mx.__name__)
""")


def _run(py, *args, **kw):
    return subprocess.run([py, *args], capture_output=True, text=True, timeout=120, **kw)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("compat")
    env_dir = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True,
                   timeout=120)
    py = str(env_dir / "bin" / "python")
    site = _run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    site = site.stdout.strip()
    assert site and os.path.isdir(site)
    # NumPy by links (its package, its bundled libraries, its metadata), not a copy.
    deps = root / "deps"
    deps.mkdir()
    np_site = os.path.dirname(os.path.dirname(numpy.__file__))
    for entry in ["numpy", "numpy.libs"] + [os.path.basename(p) for p in
                                            glob.glob(os.path.join(np_site, "numpy-*.dist-info"))]:
        if os.path.exists(os.path.join(np_site, entry)):
            os.symlink(os.path.join(np_site, entry), deps / entry)
    with open(os.path.join(site, "oxnet-dev.pth"), "w") as f:
        f.write(PYTHON_DIR + "\n" + str(deps) + "\n")
    return py, site, root


def test_import_mxnet_before_enable_fails(venv):
    py, _, root = venv
    r = _run(py, "-c", "import mxnet", cwd=str(root))
    assert r.returncode != 0 and "No module named 'mxnet'" in r.stderr


def test_enable_runs_unmodified_script_then_disable(venv):
    py, site, root = venv
    script = root / "user_script.py"
    script.write_text(SCRIPT)
    r = _run(py, "-m", "oxnet.compat", "enable", cwd=str(root))
    assert r.returncode == 0, r.stderr
    try:
        assert os.path.exists(os.path.join(site, "oxnet-mxnet-alias.pth"))
        r = _run(py, str(script), cwd=str(root))
        assert r.returncode == 0, r.stderr
        assert "ran on oxnet" in r.stdout
    finally:
        r = _run(py, "-m", "oxnet.compat", "disable", cwd=str(root))
    assert r.returncode == 0, r.stderr
    r = _run(py, "-c", "import mxnet", cwd=str(root))
    assert r.returncode != 0 and "No module named 'mxnet'" in r.stderr
    assert not os.path.exists(os.path.join(site, "oxnet-mxnet-alias.pth"))


def test_enable_refuses_next_to_a_real_mxnet(venv):
    py, site, root = venv
    fake = os.path.join(site, "mxnet-1.9.1.dist-info")
    os.mkdir(fake)
    try:
        r = _run(py, "-m", "oxnet.compat", "enable", cwd=str(root))
        assert r.returncode == 1
        assert "real MXNet is installed" in r.stderr and "mxnet-1.9.1.dist-info" in r.stderr
        assert not os.path.exists(os.path.join(site, "oxnet-mxnet-alias.pth"))
    finally:
        os.rmdir(fake)
