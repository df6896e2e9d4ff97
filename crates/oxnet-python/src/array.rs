//! The NDArray handle. The arithmetic operators and the data accessors that run on
//! every step live here in Rust; the rest of MXNet's NDArray API (indexing, repr,
//! pickling, conveniences) is added to this class by python/oxnet/ndarray.

use crate::convert::{ctx_of, dtype_of, make_ctx};
use crate::{err, IntoPy};
use numpy::{IxDyn, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use oxnet_core::autograd;
use oxnet_core::op::{self, OpDef, Params, Value};
use oxnet_core::{DType, Error};
use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyFloat, PyInt, PyTuple};
use std::sync::OnceLock;

/// Arrays whose raw handle was taken (see `NDArray._as_parameter_`), by handle.
fn raw_handles(_py: Python<'_>) -> &'static parking_lot::Mutex<std::collections::HashMap<usize, Py<pyo3::types::PyWeakrefReference>>> {
    static TABLE: OnceLock<parking_lot::Mutex<std::collections::HashMap<usize, Py<pyo3::types::PyWeakrefReference>>>> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

#[pyclass(name = "NDArray", module = "oxnet.ndarray", subclass, weakref, frozen)]
pub struct NDArray {
    /// The array, without its autograd entry (kept in `ag`).
    pub(crate) inner: oxnet_core::NDArray,
    pub(crate) writable: bool,
    /// The autograd entry (set by attach_grad and by recorded ops writing here).
    pub(crate) ag: parking_lot::Mutex<Option<oxnet_core::autograd::Entry>>,
    /// For a row_sparse or csr array (Python's CSRNDArray/RowSparseNDArray), the
    /// sparse array; `inner` is then an empty placeholder that nothing reads (the
    /// Python subclasses override what would touch it; see crate::sparse).
    pub(crate) sparse: Option<oxnet_core::SparseArray>,
}

impl NDArray {
    pub(crate) fn new(mut inner: oxnet_core::NDArray) -> Self {
        let e = inner.ag_entry().cloned();
        if e.is_some() {
            inner.set_ag_entry(None);
        }
        NDArray { inner, writable: true, ag: parking_lot::Mutex::new(e), sparse: None }
    }
    pub(crate) fn view(inner: oxnet_core::NDArray, writable: bool) -> Self {
        NDArray { inner, writable, ag: parking_lot::Mutex::new(None), sparse: None }
    }
    /// A view keeping the autograd entry a recorded view got (see `_reshape_view`).
    fn recorded_view(mut inner: oxnet_core::NDArray, writable: bool) -> Self {
        let e = inner.ag_entry().cloned();
        inner.set_ag_entry(None);
        NDArray { inner, writable, ag: parking_lot::Mutex::new(e), sparse: None }
    }
    /// The array with its autograd entry while recording (the entry matters only
    /// to recorded ops); outside recording, just the array.
    pub(crate) fn arr(&self) -> oxnet_core::NDArray {
        let mut a = self.inner.clone();
        if oxnet_core::autograd::is_recording() {
            a.set_ag_entry(self.ag.lock().clone());
        }
        a
    }
    /// The array with its autograd entry, always.
    pub(crate) fn with_entry(&self) -> oxnet_core::NDArray {
        let mut a = self.inner.clone();
        a.set_ag_entry(self.ag.lock().clone());
        a
    }
    /// Takes the entry a recorded op gave to `res` (an array written in place).
    pub(crate) fn take_entry_of(&self, res: &oxnet_core::NDArray) {
        if oxnet_core::autograd::is_recording() {
            *self.ag.lock() = res.ag_entry().cloned();
        }
    }
}

/// The registry entries the operators use, looked up once.
struct Hot {
    bin: [(&'static OpDef, &'static OpDef, Option<&'static OpDef>); 12],
    neg: &'static OpDef,
}

#[derive(Clone, Copy)]
enum Bin {
    Add = 0,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

fn hot() -> &'static Hot {
    static HOT: OnceLock<Hot> = OnceLock::new();
    HOT.get_or_init(|| {
        let l = |n: &str| op::lookup(n).expect("core op missing");
        let t = |a: &str, s: &str, r: Option<&str>| (l(a), l(s), r.map(l));
        Hot {
            bin: [
                t("broadcast_add", "_plus_scalar", None),
                t("broadcast_sub", "_minus_scalar", Some("_rminus_scalar")),
                t("broadcast_mul", "_mul_scalar", None),
                t("broadcast_div", "_div_scalar", Some("_rdiv_scalar")),
                t("broadcast_mod", "_mod_scalar", Some("_rmod_scalar")),
                t("broadcast_power", "_power_scalar", Some("_rpower_scalar")),
                t("broadcast_equal", "_equal_scalar", None),
                t("broadcast_not_equal", "_not_equal_scalar", None),
                t("broadcast_greater", "_greater_scalar", None),
                t("broadcast_greater_equal", "_greater_equal_scalar", None),
                t("broadcast_lesser", "_lesser_scalar", None),
                t("broadcast_lesser_equal", "_lesser_equal_scalar", None),
            ],
            neg: l("negative"),
        }
    })
}

/// A Python number as (value, is_int), or None for anything else.
fn scalar_of(o: &Bound<'_, PyAny>) -> Option<(f64, bool)> {
    if o.is_instance_of::<PyFloat>() {
        return o.extract::<f64>().ok().map(|v| (v, false));
    }
    if o.is_instance_of::<PyInt>() || o.is_instance_of::<PyBool>() {
        return o.extract::<f64>().ok().map(|v| (v, true));
    }
    // numpy scalars
    let t = o.get_type();
    let module = t.module().ok()?;
    if module.to_cow().ok()? == "numpy" && o.hasattr("dtype").ok()? && !o.hasattr("shape").ok().map(|_| false).unwrap_or(true) {
        return None;
    }
    if module.to_cow().ok()? == "numpy" && o.getattr("ndim").ok()?.extract::<usize>().ok()? == 0 {
        let is_int = o.getattr("dtype").ok()?.getattr("kind").ok()?.extract::<String>().ok()? != "f";
        return o.extract::<f64>().ok().map(|v| (v, is_int));
    }
    None
}

fn scalar_params(v: f64, is_int: bool) -> Params {
    Params::from_values(vec![("scalar", Value::Float(v)), ("is_int", Value::Bool(is_int))])
}

impl NDArray {
    fn inplace(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, kind: Bin) -> PyResult<()> {
        let r = Self::binary(slf, other, kind, false, true)?;
        if r.is(&slf.py().NotImplemented()) {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "type {} not supported",
                other.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            )));
        }
        Ok(())
    }

    fn binary(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, kind: Bin, reverse: bool, inplace: bool) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let me = slf.get();
        if inplace && !me.writable {
            return Err(pyo3::exceptions::PyValueError::new_err("trying to modify a readonly NDArray"));
        }
        let (arr_op, sc_op, rsc_op) = hot().bin[kind as usize];
        let out_vec;
        let out = if inplace {
            out_vec = [me.arr()];
            Some(&out_vec[..])
        } else {
            None
        };
        if me.sparse.is_some() {
            return Ok(py.NotImplemented());
        }
        let res = if let Ok(o) = other.cast::<NDArray>() {
            if o.get().sparse.is_some() {
                return Ok(py.NotImplemented());
            }
            let o = o.get().arr();
            let ins = if reverse { [o, me.arr()] } else { [me.arr(), o] };
            op::invoke(arr_op, &ins, Params::default(), out, None)
        } else if let Some((v, is_int)) = scalar_of(other) {
            let op = if reverse { rsc_op.unwrap_or(sc_op) } else { sc_op };
            op::invoke(op, &[me.arr()], scalar_params(v, is_int), out, None)
        } else {
            return Ok(py.NotImplemented());
        };
        let mut res = res.py_err()?;
        if inplace {
            me.take_entry_of(&res[0]);
            return Ok(slf.clone().into_any().unbind());
        }
        Ok(Py::new(py, NDArray::new(res.remove(0)))?.into_any())
    }
}

fn numpy_types(py: Python<'_>) -> PyResult<&'static [Py<PyAny>; 13]> {
    static TYPES: PyOnceLock<[Py<PyAny>; 13]> = PyOnceLock::new();
    TYPES.get_or_try_init(py, || {
        let np = py.import("numpy")?;
        let get = |n: &str| -> PyResult<Py<PyAny>> { Ok(np.getattr(n)?.unbind()) };
        // Indexed by MXNet's type flag; 12 is bfloat16, which NumPy lacks: MXNet's
        // stand-in, a structured dtype of one uint16 field named 'bfloat16'.
        Ok([
            get("float32")?,
            get("float64")?,
            get("float16")?,
            get("uint8")?,
            get("int32")?,
            get("int8")?,
            get("int64")?,
            get("bool_")?,
            get("int16")?,
            get("uint16")?,
            get("uint32")?,
            get("uint64")?,
            bfloat16_dtype(py)?,
        ])
    })
}

/// `oxnet.base.bfloat16` (MXNet's `numpy.dtype([('bfloat16', numpy.uint16)])`): how
/// bfloat16 is shown to NumPy; defined once, on the Python side.
pub(crate) fn bfloat16_dtype(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(py.import("oxnet.base")?.getattr("bfloat16")?.unbind())
}

/// A new NumPy array holding a copy of `a` (blocks until `a` is ready).
/// Size from which [`to_numpy`] allocates through `numpy.empty`.
const BIG_NUMPY_BYTES: usize = 1 << 26;

fn to_numpy<'py>(py: Python<'py>, a: &oxnet_core::NDArray) -> PyResult<Bound<'py, PyAny>> {
    let shape: Vec<usize> = a.shape().to_vec();
    let n = a.nbytes();
    macro_rules! mk {
        ($T:ty) => {{
            // The numpy crate's constructor panics when numpy cannot allocate; a big
            // array is made through numpy.empty instead, which raises MemoryError.
            let arr = if n > BIG_NUMPY_BYTES {
                let np = py.import("numpy")?;
                let dt = numpy::dtype::<$T>(py);
                np.call_method1("empty", (shape.clone(), dt))?.cast_into::<PyArrayDyn<$T>>()?
            } else {
                // SAFETY: the array is fully written by read_into before Python sees it.
                unsafe { PyArrayDyn::<$T>::new(py, IxDyn(&shape), false) }
            };
            let ptr = arr.data() as usize;
            let src = a.clone();
            py.detach(move || {
                // SAFETY: the numpy buffer is n bytes long and alive (we hold arr).
                let dst = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, n) };
                src.read_into(dst)
            })
            .py_err()?;
            arr.into_any()
        }};
    }
    Ok(match a.dtype() {
        DType::F32 => mk!(f32),
        DType::F64 => mk!(f64),
        DType::F16 => mk!(half::f16),
        // The bits as uint16, viewed as MXNet's structured bfloat16 dtype.
        DType::BF16 => mk!(u16).call_method1("view", (numpy_types(py)?[12].clone_ref(py),))?,
        DType::U8 => mk!(u8),
        DType::I32 => mk!(i32),
        DType::I8 => mk!(i8),
        DType::I64 => mk!(i64),
        DType::Bool => mk!(bool),
    })
}

#[pymethods]
impl NDArray {
    /// `NDArray(handle)`: the array a sparse handle holds (how the Python sparse
    /// classes are built), or the array behind a raw handle: MXNet code turns the
    /// handle a callback gets back into an array with
    /// `NDArray(ctypes.cast(arr, NDArrayHandle))`, and the value `ctypes` takes from
    /// an array (its `_as_parameter_`) leads back to it here (the new object shares
    /// the array's memory). Dense arrays come from `mx.nd.array` and the ops.
    #[new]
    #[pyo3(signature = (handle=None, writable=true))]
    fn py_new(py: Python<'_>, handle: Option<Bound<'_, PyAny>>, writable: bool) -> PyResult<Self> {
        let h = handle.ok_or_else(|| err(Error::new("NDArray() needs a handle; create arrays with mx.nd.array, mx.nd.zeros, ...")))?;
        if let Ok(sh) = h.cast::<crate::sparse::SparseHandle>() {
            let s = sh.borrow().inner.clone();
            let placeholder = oxnet_core::NDArray::empty(&[0], s.ctx(), s.dtype()).py_err()?;
            return Ok(NDArray { inner: placeholder, writable, ag: parking_lot::Mutex::new(None), sparse: Some(s) });
        }
        // A ctypes pointer (c_void_p) holds the value in `.value`; a plain int is one.
        let value = if h.is_instance_of::<PyInt>() { h.clone() } else { h.getattr("value").unwrap_or_else(|_| h.clone()) };
        let bad = || {
            err(Error::new(format!(
                "NDArray(handle): {} is not the handle of a live NDArray (handles come from an array's _as_parameter_, as ctypes.cast(arr, NDArrayHandle) takes it)",
                h.repr().map(|r| r.to_string()).unwrap_or_default()
            )))
        };
        let key: usize = value.extract().map_err(|_| bad())?;
        let target = raw_handles(py).lock().get(&key).and_then(|w| w.bind(py).upgrade()).ok_or_else(bad)?;
        let a = target.cast::<NDArray>().map_err(|_| bad())?.get();
        let ag = a.ag.lock().clone();
        Ok(NDArray { inner: a.inner.clone(), writable, ag: parking_lot::Mutex::new(ag), sparse: a.sparse.clone() })
    }
    /// The raw handle `ctypes` takes from this array (`ctypes.cast(arr,
    /// NDArrayHandle)`, an argument of a ctypes function): a number that
    /// `NDArray(handle)` turns back into the array while it lives.
    #[getter]
    fn _as_parameter_(slf: &Bound<'_, Self>) -> PyResult<usize> {
        let key = slf.as_ptr() as usize;
        let weak = pyo3::types::PyWeakrefReference::new(slf.as_any())?.unbind();
        let py = slf.py();
        let mut table = raw_handles(py).lock();
        // Forget the arrays that died (their numbers may be reused).
        if table.len() >= 1024 {
            table.retain(|_, w| w.bind(py).upgrade().is_some());
        }
        table.insert(key, weak);
        Ok(key)
    }
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }
    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }
    /// The element type, as a NumPy type (e.g. `numpy.float32`).
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(numpy_types(py)?[self.inner.dtype() as usize].clone_ref(py))
    }
    /// (device_typeid, device_id) of the array's context.
    #[getter]
    fn _ctx(&self) -> (i32, i32) {
        let c = self.inner.ctx();
        (c.dev_type as i32, c.dev_id)
    }
    #[getter]
    fn writable(&self) -> bool {
        self.writable
    }
    /// Blocks until the array's pending writes finish; raises a deferred error.
    fn wait_to_read(&self, py: Python<'_>) -> PyResult<()> {
        let a = self.inner.clone();
        py.detach(move || a.wait_to_read()).py_err()
    }
    /// Blocks until every pending operation on the array finishes.
    fn _wait_to_write(&self, py: Python<'_>) -> PyResult<()> {
        let a = self.inner.clone();
        py.detach(move || a.wait_to_write()).py_err()
    }
    /// Returns a ``numpy.ndarray`` object with value copied from this array.
    fn asnumpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_numpy(py, &self.inner)
    }
    /// Returns a scalar whose value is copied from this array (size must be 1).
    fn asscalar(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.inner.size() != 1 {
            return Err(pyo3::exceptions::PyValueError::new_err("The current array is not a scalar"));
        }
        let mut buf = [0u8; 8];
        let n = self.inner.dtype().size();
        let a = self.inner.clone();
        let bytes = py.detach(move || a.read_into(&mut buf[..n]).map(|_| buf)).py_err()?;
        let t = &numpy_types(py)?[self.inner.dtype() as usize];
        let v: Bound<'_, PyAny> = match self.inner.dtype() {
            DType::F32 => f32::from_le_bytes(bytes[..4].try_into().unwrap()).into_pyobject(py)?.into_any(),
            DType::F64 => f64::from_le_bytes(bytes).into_pyobject(py)?.into_any(),
            DType::F16 => half::f16::from_le_bytes(bytes[..2].try_into().unwrap()).to_f64().into_pyobject(py)?.into_any(),
            // NumPy has no bfloat16 scalar: the value as a numpy.float32 (exact).
            DType::BF16 => {
                let v = half::bf16::from_le_bytes(bytes[..2].try_into().unwrap()).to_f32();
                return Ok(py.import("numpy")?.getattr("float32")?.call1((v,))?.unbind());
            }
            DType::U8 => bytes[0].into_pyobject(py)?.into_any(),
            DType::I8 => (bytes[0] as i8).into_pyobject(py)?.into_any(),
            DType::I32 => i32::from_le_bytes(bytes[..4].try_into().unwrap()).into_pyobject(py)?.into_any(),
            DType::I64 => i64::from_le_bytes(bytes).into_pyobject(py)?.into_any(),
            DType::Bool => PyBool::new(py, bytes[0] != 0).to_owned().into_any(),
        };
        Ok(t.call1(py, (v,))?)
    }

    /// The view `self[begin:end]` along the first axis (shares memory).
    /// While recording, the view is recorded as `slice_axis` (MXNet records it too).
    fn _slice(&self, begin: usize, end: usize) -> PyResult<NDArray> {
        let mut v = self.inner.slice_view(begin, end).py_err()?;
        if autograd::is_recording() {
            record_slice(&self.arr(), begin, end, &mut v)?;
        }
        Ok(NDArray::recorded_view(v, self.writable))
    }
    /// The view `self[i]` (shares memory); recorded as `slice_axis` then `Reshape`.
    fn _at(&self, i: usize) -> PyResult<NDArray> {
        let mut v = self.inner.at(i).py_err()?;
        if autograd::is_recording() {
            let src = self.arr();
            if autograd::is_in_graph(&src) {
                let mut row = self.inner.slice_view(i, i + 1).py_err()?;
                record_slice(&src, i, i + 1, &mut row)?;
                autograd::record_view("Reshape", &[("shape", shape_value(v.shape()))], &row, &mut v).py_err()?;
            }
        }
        Ok(NDArray::recorded_view(v, self.writable))
    }
    /// A view with another shape of the same size (shares memory); recorded as
    /// `Reshape` while recording.
    fn _reshape_view(&self, shape: Vec<usize>) -> PyResult<NDArray> {
        let mut v = self.inner.reshape_view(&shape).py_err()?;
        if autograd::is_recording() {
            autograd::record_view("Reshape", &[("shape", shape_value(&shape))], &self.arr(), &mut v).py_err()?;
        }
        Ok(NDArray::recorded_view(v, self.writable))
    }
    /// True when both arrays share memory.
    fn _same_chunk(&self, other: &NDArray) -> bool {
        self.inner.same_chunk(&other.inner)
    }
    /// A read-only (or writable) handle on the same data.
    fn _with_writable(&self, writable: bool) -> NDArray {
        NDArray::view(self.inner.clone(), writable)
    }
    /// Copies a C-contiguous NumPy array of exactly this size and dtype into the array
    /// (blocks until written).
    fn _sync_copyfrom(&self, py: Python<'_>, src: &Bound<'_, PyAny>) -> PyResult<()> {
        if !self.writable {
            return Err(pyo3::exceptions::PyValueError::new_err("trying to write to a readonly NDArray"));
        }
        let arr = src.cast::<numpy::PyUntypedArray>().map_err(|_| err(Error::new("expected a numpy array")))?;
        if !arr.is_c_contiguous() {
            return Err(err(Error::new("source numpy array must be C-contiguous")));
        }
        let d = dtype_of(&arr.dtype().into_any())?;
        if d != self.inner.dtype() && !(d == DType::Bool && self.inner.dtype() == DType::U8) {
            return Err(err(Error::new(format!("source dtype {} does not match {}", d.name(), self.inner.dtype().name()))));
        }
        let nbytes = arr.len() * d.size();
        // SAFETY: a C-contiguous numpy array's data pointer covers len * itemsize bytes.
        let ptr = unsafe { (*arr.as_array_ptr()).data } as usize;
        let a = self.inner.clone();
        let _keep = src.clone();
        py.detach(move || {
            // SAFETY: we hold a reference to the numpy array for the whole call.
            let s = unsafe { std::slice::from_raw_parts(ptr as *const u8, nbytes) };
            a.write_bytes(s)
        })
        .py_err()
    }

    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize / 16
    }

    fn __add__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Add, false, false)
    }
    fn __radd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Add, true, false)
    }
    fn __iadd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, Bin::Add)
    }
    fn __sub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Sub, false, false)
    }
    fn __rsub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Sub, true, false)
    }
    fn __isub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, Bin::Sub)
    }
    fn __mul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Mul, false, false)
    }
    fn __rmul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Mul, true, false)
    }
    fn __imul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, Bin::Mul)
    }
    fn __truediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Div, false, false)
    }
    fn __rtruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Div, true, false)
    }
    fn __itruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, Bin::Div)
    }
    fn __mod__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Mod, false, false)
    }
    fn __rmod__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Mod, true, false)
    }
    fn __imod__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, Bin::Mod)
    }
    fn __pow__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>, _m: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Pow, false, false)
    }
    fn __rpow__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>, _m: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        Self::binary(slf, o, Bin::Pow, true, false)
    }
    fn __neg__(slf: &Bound<'_, Self>) -> PyResult<NDArray> {
        let r = op::invoke(hot().neg, &[slf.get().arr()], Params::default(), None, None).py_err()?;
        Ok(NDArray::new(r.into_iter().next().unwrap()))
    }
    fn __richcmp__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>, cmp: CompareOp) -> PyResult<Py<PyAny>> {
        let kind = match cmp {
            CompareOp::Eq => Bin::Eq,
            CompareOp::Ne => Bin::Ne,
            CompareOp::Gt => Bin::Gt,
            CompareOp::Ge => Bin::Ge,
            CompareOp::Lt => Bin::Lt,
            CompareOp::Le => Bin::Le,
        };
        Self::binary(slf, o, kind, false, false)
    }
}

/// An uninitialised array.
#[pyfunction]
fn empty(shape: Vec<usize>, dev_type: i32, dev_id: i32, dtype: &Bound<'_, PyAny>) -> PyResult<NDArray> {
    let ctx = make_ctx(dev_type, dev_id)?;
    let d = dtype_of(dtype)?;
    Ok(NDArray::new(oxnet_core::NDArray::empty(&shape, ctx, d).py_err()?))
}

/// Copies the data of `src` into `dst` (any host devices), in engine order.
#[pyfunction]
fn copyto(src: &NDArray, dst: &NDArray) -> PyResult<()> {
    if !dst.writable {
        return Err(pyo3::exceptions::PyValueError::new_err("trying to write to a readonly NDArray"));
    }
    if src.inner.same_chunk(&dst.inner) && src.inner.offset() == dst.inner.offset() {
        return Ok(());
    }
    if src.inner.shape() != dst.inner.shape() {
        return Err(err(Error::op(
            "_copyto",
            format!(
                "shape mismatch: cannot copy an array of shape {} into one of shape {}",
                oxnet_core::shape::fmt_shape(src.inner.shape()),
                oxnet_core::shape::fmt_shape(dst.inner.shape())
            ),
        )));
    }
    let (s, d) = if src.inner.dtype() == dst.inner.dtype() { ("_copyto", None) } else { ("Cast", Some(dst.inner.dtype())) };
    let def = op::lookup(s).py_err()?;
    let params = match d {
        Some(d) => def.parse(vec![("dtype".to_string(), Value::DType(d))]).py_err()?,
        None => Params::default(),
    };
    let dst_arr = [dst.arr()];
    if s == "Cast" && src.inner.ctx() != dst.inner.ctx() {
        let tmp = op::invoke(def, &[src.arr()], params, None, None).py_err()?;
        let res = op::invoke(op::lookup("_copyto").py_err()?, &tmp, Params::default(), Some(&dst_arr), None).py_err()?;
        dst.take_entry_of(&res[0]);
        return Ok(());
    }
    // Recorded while recording (MXNet's copyto is the `_copyto` op).
    let res = op::invoke(def, &[src.arr()], params, Some(&dst_arr), None).py_err()?;
    dst.take_entry_of(&res[0]);
    Ok(())
}

/// A context object's (device_typeid, device_id), validated.
#[pyfunction]
fn _ctx_tuple(ctx: &Bound<'_, PyAny>) -> PyResult<(i32, i32)> {
    let c = ctx_of(ctx)?;
    Ok((c.dev_type as i32, c.dev_id))
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(copyto, m)?)?;
    m.add_function(wrap_pyfunction!(_ctx_tuple, m)?)?;
    m.add_function(wrap_pyfunction!(infer_reshape, m)?)?;
    Ok(())
}

/// The shape `reshape` gives: MXNet's special values (0, -1, -2, -3, -4) and reverse.
#[pyfunction]
fn infer_reshape(src: Vec<usize>, spec: Vec<i64>, reverse: bool) -> PyResult<Vec<usize>> {
    Ok(oxnet_core::op::shape::infer_reshape(&src, &spec, reverse).py_err()?.to_vec())
}

fn shape_value(shape: &[usize]) -> Value {
    Value::Tuple(shape.iter().map(|&d| d as i64).collect())
}

/// Records the view `a[begin:end]` (axis 0) as `slice_axis` while recording.
fn record_slice(a: &oxnet_core::NDArray, begin: usize, end: usize, v: &mut oxnet_core::NDArray) -> PyResult<()> {
    let attrs = [("axis", Value::Int(0)), ("begin", Value::Int(begin as i64)), ("end", Value::Int(end as i64))];
    autograd::record_view("slice_axis", &attrs, a, v).py_err()
}
