//! The KVStore handle: Python keys and arrays to core calls. The Python class in
//! python/oxnet/kvstore.py normalises MXNet's argument forms (single keys, lists,
//! per-device lists) into lists of (key, [arrays]) before calling here.

use crate::array::NDArray as PyND;
use crate::convert::value_of;
use crate::{err, IntoPy};
use oxnet_core::kvstore::{KVStore as Store, Key, Update};
use oxnet_core::op::{self, Value};
use oxnet_core::Error;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyList, PyString};

#[pyclass(frozen, module = "oxnet._core")]
pub struct KVStoreHandle {
    inner: Store,
}

fn key_of(obj: &Bound<'_, PyAny>) -> PyResult<Key> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Key::Str(s.to_cow()?.into()));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Key::Str(String::from_utf8_lossy(b.as_bytes()).into()));
    }
    if obj.is_instance_of::<PyInt>() || obj.hasattr("__index__")? {
        return Ok(Key::Int(obj.call_method0("__index__")?.extract()?));
    }
    Err(err(Error::new(format!(
        "kvstore keys must be int or str, got {}",
        obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
    ))))
}

fn arrays_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<oxnet_core::NDArray>> {
    let mut v = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        let a = item.cast::<PyND>().map_err(|_| {
            err(Error::new(format!(
                "kvstore values must be NDArrays, got {}",
                item.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            )))
        })?;
        v.push(a.get().inner.clone());
    }
    Ok(v)
}

/// `[(key, [arrays])]` from a list of keys and a list of lists of arrays.
fn items_of(keys: &Bound<'_, PyList>, values: &Bound<'_, PyList>) -> PyResult<Vec<(Key, Vec<oxnet_core::NDArray>)>> {
    if keys.len() != values.len() {
        return Err(err(Error::new(format!("{} keys but {} value lists", keys.len(), values.len()))));
    }
    keys.iter().zip(values.iter()).map(|(k, v)| Ok((key_of(&k)?, arrays_of(&v)?))).collect()
}

#[pymethods]
impl KVStoreHandle {
    #[new]
    fn new(name: &str) -> PyResult<Self> {
        Ok(KVStoreHandle { inner: Store::create(name).py_err()? })
    }

    #[getter]
    fn r#type(&self) -> &'static str {
        self.inner.type_name()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Initialises keys[i] with a copy of values[i] (one array each).
    fn init(&self, keys: &Bound<'_, PyList>, values: &Bound<'_, PyList>) -> PyResult<()> {
        let items = items_of(keys, values)?;
        let mut flat = Vec::with_capacity(items.len());
        for (k, mut v) in items {
            if v.len() != 1 {
                return Err(err(Error::new(format!("init: key {k} needs one array, got {}", v.len()))));
            }
            flat.push((k, v.remove(0)));
        }
        self.inner.init(&flat).py_err()
    }

    /// Pushes the arrays of every key: the sum replaces the stored value.
    fn push(&self, keys: &Bound<'_, PyList>, values: &Bound<'_, PyList>) -> PyResult<()> {
        let items = items_of(keys, values)?;
        self.inner.push(&items, None).py_err()
    }

    /// Pushes with a fused update per key: `ops[i]` is the registry op, `attrs[i]` its
    /// parameters, `states[i]` its state arrays (mutate inputs after weight and grad).
    /// `second[i]` (optional) is a second phase `(op, attrs)` run as
    /// `op(weight, g, norm(weight), norm(g), out=weight)` on the first op's result
    /// `g` (LAMB's `lamb_update_phase2`).
    #[pyo3(signature = (keys, values, ops, attrs, states, second=None))]
    fn push_update(
        &self,
        keys: &Bound<'_, PyList>,
        values: &Bound<'_, PyList>,
        ops: Vec<String>,
        attrs: &Bound<'_, PyList>,
        states: &Bound<'_, PyList>,
        second: Option<&Bound<'_, PyList>>,
    ) -> PyResult<()> {
        let items = items_of(keys, values)?;
        if ops.len() != items.len()
            || attrs.len() != items.len()
            || states.len() != items.len()
            || second.is_some_and(|s| s.len() != items.len())
        {
            return Err(err(Error::new("push_update: ops, attrs, states (and second) need one entry per key")));
        }
        let parse = |name: &str, a: &Bound<'_, PyAny>| -> PyResult<(&'static op::OpDef, op::Params)> {
            let def = op::lookup(name).py_err()?;
            let d = a.cast::<PyDict>().map_err(|_| err(Error::new("push_update: attrs must be dicts")))?;
            let mut given: Vec<(String, Value)> = Vec::with_capacity(d.len());
            for (k, v) in d.iter() {
                given.push((k.extract()?, value_of(&v)?));
            }
            Ok((def, def.parse(given).py_err()?))
        };
        let mut updates = Vec::with_capacity(items.len());
        for (i, ((name, a), s)) in ops.iter().zip(attrs.iter()).zip(states.iter()).enumerate() {
            let (op, params) = parse(name, &a)?;
            let second = match second.map(|l| l.get_item(i)).transpose()? {
                Some(p) if !p.is_none() => {
                    let (n2, a2): (String, Bound<'_, PyAny>) = p.extract()?;
                    Some(parse(&n2, &a2)?)
                }
                _ => None,
            };
            updates.push(Update { op, params, states: arrays_of(&s)?, second });
        }
        self.inner.push(&items, Some(updates)).py_err()
    }

    /// Sums the arrays of `key` and returns the merged array (for a Python updater).
    fn reduce(&self, py: Python<'_>, key: &Bound<'_, PyAny>, values: &Bound<'_, PyAny>) -> PyResult<Py<PyND>> {
        let k = key_of(key)?;
        let v = arrays_of(values)?;
        let m = self.inner.reduce(&k, &v).py_err()?;
        Py::new(py, PyND::new(m))
    }

    /// Copies the stored value of every key into each of its arrays.
    fn pull(&self, keys: &Bound<'_, PyList>, outs: &Bound<'_, PyList>) -> PyResult<()> {
        let items = items_of(keys, outs)?;
        self.inner.pull(&items).py_err()
    }

    /// The stored array of `key` (shares memory with the store).
    fn stored(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyND>> {
        let k = key_of(key)?;
        Py::new(py, PyND::new(self.inner.stored(&k).py_err()?))
    }

    fn set_gradient_compression(&self, kind: &str, threshold: f64) -> PyResult<()> {
        self.inner.set_gradient_compression(kind, threshold).py_err()
    }
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<KVStoreHandle>()?;
    Ok(())
}
