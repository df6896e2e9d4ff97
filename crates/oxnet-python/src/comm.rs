//! Engine operations done by Python communication threads (the distributed
//! kvstore's MPI sends and receives, python/oxnet/kvstore/dist.py).
//!
//! `_comm_op(reads, writes, queue)` pushes an asynchronous engine operation
//! (`engine::push_async`) and returns a `CommOp` at once. When the operation holds
//! its vars it becomes *ready*: `wait_ready` returns, its id is appended to the
//! ready queue read by `_comm_next` (when `queue`), and `buffer(i)` gives the
//! memory of array `i` as a memoryview (writable for the arrays written) for MPI to
//! send from or receive into without a copy. `complete(error=None)` finishes it;
//! later operations on those arrays wait until then. Every wait here releases the
//! GIL, so a thread blocked in MPI never stops Python or the compute threads.

use crate::array::NDArray as PyND;
use crate::{err, IntoPy};
use oxnet_core::engine::{self, Completion};
use oxnet_core::{Error, NDArray};
use parking_lot::{Condvar, Mutex};
use pyo3::prelude::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
struct State {
    completion: Option<Completion>,
    ready: bool,
    done: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    cv: Condvar,
}

/// One asynchronous communication operation.
#[pyclass(frozen, module = "oxnet._core")]
pub struct CommOp {
    id: u64,
    shared: Arc<Shared>,
    arrays: Vec<(NDArray, bool)>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The ready queue read by `_comm_next` (0 is a wake-up without an operation).
struct ReadyQueue {
    q: Mutex<VecDeque<u64>>,
    cv: Condvar,
}

static READY: ReadyQueue = ReadyQueue { q: Mutex::new(VecDeque::new()), cv: Condvar::new() };

fn enqueue_ready(id: u64) {
    READY.q.lock().push_back(id);
    READY.cv.notify_one();
}

fn wait_on<F: Fn(&State) -> bool>(shared: &Shared, timeout: Option<f64>, cond: F) -> bool {
    let mut g = shared.state.lock();
    let deadline = timeout.map(|t| std::time::Instant::now() + Duration::from_secs_f64(t.max(0.0)));
    while !cond(&g) {
        match deadline {
            None => shared.cv.wait(&mut g),
            Some(d) => {
                if shared.cv.wait_until(&mut g, d).timed_out() {
                    return cond(&g);
                }
            }
        }
    }
    true
}

#[pymethods]
impl CommOp {
    /// The operation's id (as returned by `_comm_next`).
    #[getter]
    fn id(&self) -> u64 {
        self.id
    }

    /// Blocks (without the GIL) until the operation holds its vars or `timeout`
    /// seconds passed; True when ready.
    #[pyo3(signature = (timeout=None))]
    fn wait_ready(&self, py: Python<'_>, timeout: Option<f64>) -> bool {
        let s = self.shared.clone();
        py.detach(move || wait_on(&s, timeout, |st| st.ready || st.done))
    }

    /// Blocks (without the GIL) until the operation is completed or `timeout`
    /// seconds passed; True when completed.
    #[pyo3(signature = (timeout=None))]
    fn wait_done(&self, py: Python<'_>, timeout: Option<f64>) -> bool {
        let s = self.shared.clone();
        py.detach(move || wait_on(&s, timeout, |st| st.done))
    }

    /// True once the operation holds its vars and is not completed.
    #[getter]
    fn ready(&self) -> bool {
        let g = self.shared.state.lock();
        g.ready && !g.done
    }

    /// The memory of array `i` as a memoryview of bytes (writable when the operation
    /// writes it). Valid only between readiness and `complete`.
    fn buffer<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        {
            let g = self.shared.state.lock();
            if !g.ready || g.done || g.completion.is_none() {
                return Err(err(Error::new("comm op: buffer() is only valid while the operation holds its arrays")));
            }
        }
        let (a, write) = self.arrays.get(i).ok_or_else(|| err(Error::new(format!("comm op: no array {i}"))))?;
        if !a.ctx().is_host() {
            return Err(err(Error::new(format!("comm op: array {i} is on {}; communication buffers must be on the CPU", a.ctx()))));
        }
        let n = a.nbytes();
        let ptr = if n == 0 { std::ptr::NonNull::<u8>::dangling().as_ptr() } else { a.data_ptr() };
        // CPython's PyBUF_WRITE (0x200) and PyBUF_READ (0x100) of memoryobject.h
        let flags: std::os::raw::c_int = if *write { 0x200 } else { 0x100 };
        // SAFETY: the array's memory (n bytes from ptr) is alive (self keeps the array)
        // and the engine grants this operation its access until `complete`.
        unsafe {
            let mv = pyo3::ffi::PyMemoryView_FromMemory(ptr as *mut std::os::raw::c_char, n as pyo3::ffi::Py_ssize_t, flags);
            Bound::from_owned_ptr_or_err(py, mv)
        }
    }

    /// Finishes the operation; `error` (a message) is stored on the arrays written.
    #[pyo3(signature = (error=None))]
    fn complete(&self, error: Option<String>) -> PyResult<()> {
        let c = {
            let mut g = self.shared.state.lock();
            if g.done {
                return Ok(());
            }
            g.done = true;
            g.completion.take()
        };
        self.shared.cv.notify_all();
        if let Some(c) = c {
            c.complete(match error {
                None => Ok(()),
                Some(m) => Err(Error::new(m)),
            });
        }
        Ok(())
    }
}

/// Pushes a communication operation reading `reads` and writing `writes`; its id
/// goes to the ready queue when it is ready if `queue`.
#[pyfunction]
#[pyo3(signature = (reads, writes, queue=false))]
fn _comm_op(py: Python<'_>, reads: Vec<PyRef<'_, PyND>>, writes: Vec<PyRef<'_, PyND>>, queue: bool) -> PyResult<CommOp> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let shared = Arc::new(Shared::default());
    let mut arrays: Vec<(NDArray, bool)> = reads.iter().map(|a| (a.inner.clone(), false)).collect();
    arrays.extend(writes.iter().map(|a| (a.inner.clone(), true)));
    let rv: Vec<_> = reads.iter().map(|a| a.inner.var().clone()).collect();
    let wv: Vec<_> = writes.iter().map(|a| a.inner.var().clone()).collect();
    let s2 = shared.clone();
    let start = move |c: Completion| {
        {
            let mut g = s2.state.lock();
            g.completion = Some(c);
            g.ready = true;
        }
        s2.cv.notify_all();
        if queue {
            enqueue_ready(id);
        }
    };
    // NaiveEngine blocks in push_async until completion: never with the GIL.
    py.detach(move || engine::push_async(start, &rv, &wv)).py_err()?;
    Ok(CommOp { id, shared, arrays })
}

/// The id of the next ready queued operation (0 after `_comm_wake`), or None when
/// `timeout` seconds passed first. Waits without the GIL.
#[pyfunction]
#[pyo3(signature = (timeout=None))]
fn _comm_next(py: Python<'_>, timeout: Option<f64>) -> Option<u64> {
    py.detach(move || {
        let mut g = READY.q.lock();
        let deadline = timeout.map(|t| std::time::Instant::now() + Duration::from_secs_f64(t.max(0.0)));
        loop {
            if let Some(id) = g.pop_front() {
                return Some(id);
            }
            match deadline {
                None => READY.cv.wait(&mut g),
                Some(d) => {
                    if READY.cv.wait_until(&mut g, d).timed_out() {
                        return g.pop_front();
                    }
                }
            }
        }
    })
}

/// Wakes a thread waiting in `_comm_next` (which then returns 0).
#[pyfunction]
fn _comm_wake() {
    enqueue_ready(0);
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CommOp>()?;
    m.add_function(wrap_pyfunction!(_comm_op, m)?)?;
    m.add_function(wrap_pyfunction!(_comm_next, m)?)?;
    m.add_function(wrap_pyfunction!(_comm_wake, m)?)?;
    Ok(())
}
