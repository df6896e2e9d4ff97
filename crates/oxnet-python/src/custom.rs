//! The host of custom operators (`mx.operator`): oxnet-core's `Custom` op asks it
//! for the names, shapes and dtypes a custom op declares and to run its forward and
//! backward. Each request calls one Python function, `oxnet.operator._sym_host`,
//! with the GIL taken for the call only.

use crate::array::NDArray as PyND;
use oxnet_core::op::custom::{set_host, CustomHost, CustomSpec, Triple};
use oxnet_core::shape::Shape;
use oxnet_core::{DType, Error, NDArray, Result};
use pyo3::prelude::*;
use pyo3::types::PyList;

struct PyHost {
    func: Py<PyAny>,
}

type Kw<'a> = &'a [(String, String)];

impl PyHost {
    fn call<'py>(&self, py: Python<'py>, method: &str, op_type: &str, kw: Kw<'_>, payload: Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>> {
        self.func.bind(py).call1((method, op_type, kw.to_vec(), payload)).map_err(|e| Error::new(e.value(py).to_string()))
    }
}

fn fail(e: PyErr) -> Error {
    Python::attach(|py| Error::new(format!("custom operator host: {}", e.value(py))))
}

fn arrays<'py>(py: Python<'py>, xs: &[NDArray]) -> Result<Bound<'py, PyList>> {
    let items: Vec<Py<PyND>> = xs.iter().map(|x| Py::new(py, PyND::new(x.clone()))).collect::<PyResult<_>>().map_err(fail)?;
    PyList::new(py, items).map_err(fail)
}

impl CustomHost for PyHost {
    fn spec(&self, op_type: &str, kw: Kw<'_>) -> Result<CustomSpec> {
        Python::attach(|py| {
            let r = self.call(py, "spec", op_type, kw, py.None().into_bound(py))?;
            let (arguments, outputs, aux_states): (Vec<String>, Vec<String>, Vec<String>) = r.extract().map_err(fail)?;
            Ok(CustomSpec { arguments, outputs, aux_states })
        })
    }
    fn infer_shape(&self, op_type: &str, kw: Kw<'_>, args: &[Shape]) -> Result<Triple<Shape>> {
        Python::attach(|py| {
            let shapes: Vec<Vec<usize>> = args.iter().map(|s| s.to_vec()).collect();
            let payload = shapes.into_pyobject(py).map_err(fail)?.into_any();
            let r = self.call(py, "infer_shape", op_type, kw, payload)?;
            let (a, o, x): (Vec<Vec<usize>>, Vec<Vec<usize>>, Vec<Vec<usize>>) = r.extract().map_err(fail)?;
            let conv = |v: Vec<Vec<usize>>| v.into_iter().map(|s| Shape::from_slice(&s)).collect::<Vec<_>>();
            Ok((conv(a), conv(o), conv(x)))
        })
    }
    fn infer_type(&self, op_type: &str, kw: Kw<'_>, args: &[DType]) -> Result<Triple<DType>> {
        Python::attach(|py| {
            let names: Vec<&str> = args.iter().map(|d| d.name()).collect();
            let payload = names.into_pyobject(py).map_err(fail)?.into_any();
            let r = self.call(py, "infer_type", op_type, kw, payload)?;
            let (a, o, x): (Vec<String>, Vec<String>, Vec<String>) = r.extract().map_err(fail)?;
            let conv = |v: Vec<String>| v.iter().map(|s| DType::from_name(s)).collect::<Result<Vec<_>>>();
            Ok((conv(a)?, conv(o)?, conv(x)?))
        })
    }
    fn forward(&self, op_type: &str, kw: Kw<'_>, inputs: &[NDArray], outputs: &[NDArray], is_train: bool) -> Result<()> {
        Python::attach(|py| {
            let payload = (arrays(py, inputs)?, arrays(py, outputs)?, is_train).into_pyobject(py).map_err(fail)?.into_any();
            self.call(py, "forward", op_type, kw, payload)?;
            Ok(())
        })
    }
    fn backward(
        &self,
        op_type: &str,
        kw: Kw<'_>,
        out_grads: &[NDArray],
        inputs: &[NDArray],
        outputs: &[NDArray],
    ) -> Result<Vec<Option<NDArray>>> {
        Python::attach(|py| {
            let payload = (arrays(py, out_grads)?, arrays(py, inputs)?, arrays(py, outputs)?).into_pyobject(py).map_err(fail)?.into_any();
            let r = self.call(py, "backward", op_type, kw, payload)?;
            let mut out = Vec::new();
            for item in r.try_iter().map_err(fail)? {
                let item = item.map_err(fail)?;
                if item.is_none() {
                    out.push(None);
                } else {
                    let a = item.cast::<PyND>().map_err(|_| Error::op("Custom", format!("'{op_type}' backward must give NDArrays")))?;
                    out.push(Some(a.get().inner.clone()));
                }
            }
            Ok(out)
        })
    }
}

/// Registers `func(method, op_type, kwargs, payload)` as the custom-operator host.
#[pyfunction]
fn set_custom_host(func: Py<PyAny>) {
    set_host(Box::new(PyHost { func }));
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_custom_host, m)?)
}
