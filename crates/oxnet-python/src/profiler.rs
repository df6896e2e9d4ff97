//! The profiler's recorder (oxnet-core's `engine::profiler`) for `oxnet.profiler`:
//! state switches, what Python records itself (spans, counters, markers, the
//! custom-operator scope), and the records and aggregate statistics it formats.

use oxnet_core::engine::profiler as prof;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Starts (True) or stops (False) the profiler.
#[pyfunction]
fn profiler_set_running(on: bool) {
    prof::set_running(on);
}

/// Pauses (True) or resumes (False) recording.
#[pyfunction]
fn profiler_set_paused(paused: bool) {
    prof::set_paused(paused);
}

/// Whether symbolic (compiled graph) and imperative operations are timed, and
/// whether aggregate statistics are kept.
#[pyfunction]
fn profiler_configure(symbolic: bool, imperative: bool, aggregate: bool) {
    prof::set_profile_ops(symbolic, imperative);
    prof::set_aggregate(aggregate);
}

/// (running, recording now, timing operations now, aggregating).
#[pyfunction]
fn profiler_status() -> (bool, bool, bool, bool) {
    (prof::running(), prof::recording(), prof::ops_on(), prof::aggregating())
}

/// The profiler's clock, in microseconds.
#[pyfunction]
fn profiler_now() -> u64 {
    prof::now_us()
}

/// Records a span from `start` to now: `phase` is 'duration', 'task' or 'frame'.
#[pyfunction]
fn profiler_span(name: &str, cat: &str, phase: &str, start: u64) -> PyResult<()> {
    let phase = match phase {
        "duration" => prof::Phase::Duration,
        "task" => prof::Phase::Task,
        "frame" => prof::Phase::Frame,
        _ => return Err(PyValueError::new_err(format!("unknown span phase '{phase}'"))),
    };
    prof::span(name, cat, phase, start, None);
    Ok(())
}

/// Records a counter's new value.
#[pyfunction]
fn profiler_counter(name: &str, cat: &str, value: i64) {
    prof::counter(name, cat, value);
}

/// Records an instant marker; `scope` is 'g', 'p' or 't'.
#[pyfunction]
fn profiler_instant(name: &str, cat: &str, scope: char) {
    prof::instant(name, cat, scope);
}

/// Sets the custom operator whose code runs on this thread; returns the previous.
#[pyfunction]
#[pyo3(signature = (scope=None))]
fn profiler_set_scope(scope: Option<String>) -> Option<String> {
    prof::set_scope(scope)
}

type Row = (String, String, String, u64, Py<PyAny>, u64, Option<(i32, i32)>);

/// Takes the records kept so far as (name, category, kind, ts, extra, tid, device):
/// kind is the chrome begin letter of a span ('B', 'b', '(') with extra its end,
/// 'C' with extra the counter's value, or 'i' with extra the scope letter; device
/// is (dev_type, dev_id) for operations, else None.
#[pyfunction]
fn profiler_drain(py: Python<'_>) -> PyResult<Vec<Row>> {
    let mut out = Vec::new();
    for r in prof::drain() {
        let (kind, extra) = match r.kind {
            prof::Kind::Span { phase, end } => (phase.letters().0.to_string(), end.into_pyobject(py)?.into_any().unbind()),
            prof::Kind::Counter(v) => ("C".to_string(), v.into_pyobject(py)?.into_any().unbind()),
            prof::Kind::Instant(s) => ("i".to_string(), s.to_string().into_pyobject(py)?.into_any().unbind()),
        };
        let dev = r.dev.map(|c| (c.dev_type as i32, c.dev_id));
        out.push((r.name, r.cat, kind, r.ts, extra, r.tid, dev));
    }
    Ok(out)
}

/// `(tid, name)` of every thread that records carry so far.
#[pyfunction]
fn profiler_thread_names() -> Vec<(u64, String)> {
    prof::thread_names()
}

/// The aggregate statistics as (category, name, is_counter, count, total, min, max)
/// in microseconds (spans) or values (counters); `reset` clears them.
#[pyfunction]
#[pyo3(signature = (reset=false))]
fn profiler_aggregate(reset: bool) -> Vec<(String, String, bool, u64, u64, u64, u64)> {
    prof::aggregate(reset).into_iter().map(|(c, n, s)| (c, n, s.counter, s.count, s.total, s.min, s.max)).collect()
}

pub(crate) fn add_functions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(profiler_set_running, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_set_paused, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_configure, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_status, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_now, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_span, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_counter, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_instant, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_set_scope, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_drain, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_aggregate, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_thread_names, m)?)?;
    Ok(())
}
