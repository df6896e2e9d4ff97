//! The profiler's recorder (what MXNet's `mx.profiler` reads): timed spans of the
//! operations the engine runs, and the spans, counter values and instant markers a
//! program records itself, with aggregate statistics per (category, name).
//!
//! Off by default, and then free: whoever pushes an operation asks [`ops_on`] (one
//! relaxed atomic load) and only when it is on builds a [`Tag`] for
//! [`super::push_named`], which times the operation where it actually runs (on a
//! compute thread or inline) and records it here. The engine knows nothing of what
//! it runs: a tag's name and category are opaque strings chosen by the pusher (the
//! op layer passes the op's registry name, see [`op_tag`]).
//!
//! Timestamps are microseconds on a monotonic clock anchored to the Unix epoch at
//! first use (chrome://tracing's `ts`). Records wait in memory until [`drain`]ed
//! (by a dump); aggregate statistics, when enabled, are updated as records arrive
//! and read with [`aggregate`] (MXNet's `dumps`). Formatting (the chrome trace file,
//! the statistics table) belongs to the caller.

use crate::context::Context;
use parking_lot::Mutex;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// How a span appears in a chrome trace: `B`/`E` (operators, events), `b`/`e`
/// (tasks), `(`/`)` (frames).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Duration,
    Task,
    Frame,
}

impl Phase {
    /// The begin and end event letters of chrome://tracing.
    pub fn letters(self) -> (char, char) {
        match self {
            Phase::Duration => ('B', 'E'),
            Phase::Task => ('b', 'e'),
            Phase::Frame => ('(', ')'),
        }
    }
}

/// What a record holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// A timed span from the record's `ts` to `end`.
    Span { phase: Phase, end: u64 },
    /// A counter's new value.
    Counter(i64),
    /// An instant marker with its chrome scope letter (`g`, `p`, `t`).
    Instant(char),
}

/// One profile record.
#[derive(Clone, Debug)]
pub struct Record {
    pub name: String,
    pub cat: String,
    pub kind: Kind,
    /// Start (spans) or time (counters, markers), in microseconds.
    pub ts: u64,
    /// The recording thread (a small number, stable per thread).
    pub tid: u64,
    /// The device an operation ran for; None for what a program records itself.
    pub dev: Option<Context>,
}

/// What [`super::push_named`] needs to record an operation it runs.
#[derive(Clone, Debug)]
pub struct Tag {
    pub name: Cow<'static, str>,
    pub cat: &'static str,
    pub dev: Option<Context>,
}

/// Aggregate statistics of one (category, name): MXNet's `AggregateStats::StatData`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// True for counters (their `total` is the last value), false for spans.
    pub counter: bool,
    pub count: u64,
    pub total: u64,
    pub min: u64,
    pub max: u64,
}

static RUNNING: AtomicBool = AtomicBool::new(false);
static PAUSED: AtomicBool = AtomicBool::new(false);
static SYMBOLIC: AtomicBool = AtomicBool::new(true);
static IMPERATIVE: AtomicBool = AtomicBool::new(true);
static AGGREGATE: AtomicBool = AtomicBool::new(false);
/// running && !paused: records are taken.
static RECORDING: AtomicBool = AtomicBool::new(false);
/// RECORDING && (SYMBOLIC || IMPERATIVE): operations may be timed.
static OPS: AtomicBool = AtomicBool::new(false);

static RECORDS: Mutex<Vec<Record>> = Mutex::new(Vec::new());
type Stats = HashMap<String, HashMap<String, Stat>>;
static STATS: OnceLock<Mutex<Stats>> = OnceLock::new();

fn stats() -> &'static Mutex<Stats> {
    STATS.get_or_init(Default::default)
}

fn refresh() {
    let rec = RUNNING.load(Ordering::SeqCst) && !PAUSED.load(Ordering::SeqCst);
    RECORDING.store(rec, Ordering::SeqCst);
    let ops = SYMBOLIC.load(Ordering::SeqCst) || IMPERATIVE.load(Ordering::SeqCst);
    OPS.store(rec && ops, Ordering::SeqCst);
}

/// Starts (true) or stops (false) the profiler; starting also resumes it.
pub fn set_running(on: bool) {
    RUNNING.store(on, Ordering::SeqCst);
    PAUSED.store(!on, Ordering::SeqCst);
    refresh();
}

/// Whether the profiler was started and not stopped.
pub fn running() -> bool {
    RUNNING.load(Ordering::SeqCst)
}

/// Pauses (true) or resumes (false) recording without stopping the profiler.
pub fn set_paused(p: bool) {
    PAUSED.store(p, Ordering::SeqCst);
    refresh();
}

/// Which operations are timed while recording (MXNet's modes): `symbolic`, those
/// an executor runs (see [`graph_scope`]); `imperative`, the others (hybridized
/// blocks included, as in MXNet).
pub fn set_profile_ops(symbolic: bool, imperative: bool) {
    SYMBOLIC.store(symbolic, Ordering::SeqCst);
    IMPERATIVE.store(imperative, Ordering::SeqCst);
    refresh();
}

/// Keeps (true) or drops and stops keeping (false) aggregate statistics.
pub fn set_aggregate(on: bool) {
    AGGREGATE.store(on, Ordering::SeqCst);
    if !on {
        stats().lock().clear();
    }
}

/// Whether records are taken now (started and not paused).
#[inline]
pub fn recording() -> bool {
    RECORDING.load(Ordering::Relaxed)
}

/// Whether operations are timed now: the one check on the hot path.
#[inline]
pub fn ops_on() -> bool {
    OPS.load(Ordering::Relaxed)
}

fn clock() -> &'static (Instant, u64) {
    static BASE: OnceLock<(Instant, u64)> = OnceLock::new();
    BASE.get_or_init(|| {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0);
        (Instant::now(), wall)
    })
}

/// Microseconds now (monotonic; the Unix epoch at first use).
pub fn now_us() -> u64 {
    let (base, wall) = clock();
    wall + base.elapsed().as_micros() as u64
}

/// The name of every thread that got an id from [`thread_id`], by id.
static THREAD_NAMES: std::sync::Mutex<Vec<(u64, String)>> = std::sync::Mutex::new(Vec::new());

/// A small number identifying the calling thread in records (one per thread: each
/// engine worker has its own). The first call on a thread notes its name (the
/// engine's workers are `oxnet-worker-N`) for [`thread_names`].
pub fn thread_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static ID: u64 = {
            let id = NEXT.fetch_add(1, Ordering::Relaxed);
            let name = std::thread::current().name().map(str::to_string).unwrap_or_else(|| format!("thread {id}"));
            THREAD_NAMES.lock().unwrap_or_else(|e| e.into_inner()).push((id, name));
            id
        };
    }
    ID.with(|i| *i)
}

/// `(id, name)` of every thread [`thread_id`] has numbered so far (for the
/// trace's thread-name metadata).
pub fn thread_names() -> Vec<(u64, String)> {
    THREAD_NAMES.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

thread_local! {
    /// The custom operator whose host code runs on this thread (see [`op_tag`]).
    static SCOPE: RefCell<Option<String>> = const { RefCell::new(None) };
    /// True while this thread runs an executor (see [`graph_scope`]).
    static IN_GRAPH: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as running an executor until the guard drops:
/// operations pushed meanwhile are symbolic ones for [`set_profile_ops`].
pub fn graph_scope() -> GraphScope {
    GraphScope(IN_GRAPH.with(|g| g.replace(true)))
}

/// See [`graph_scope`].
pub struct GraphScope(bool);

impl Drop for GraphScope {
    fn drop(&mut self) {
        IN_GRAPH.with(|g| g.set(self.0));
    }
}

/// Sets the name of the custom operator whose code runs on this thread (None: none);
/// returns the previous one. Operations pushed meanwhile are named
/// `{scope}::{op}` in the `Custom Operator` category, as in MXNet.
pub fn set_scope(scope: Option<String>) -> Option<String> {
    SCOPE.with(|s| std::mem::replace(&mut *s.borrow_mut(), scope))
}

/// The category of operations pushed outside a custom operator.
pub const OPERATOR: &str = "operator";
/// The category of custom operators and of what their code pushes.
pub const CUSTOM_OPERATOR: &str = "Custom Operator";

/// The tag of an operation named `name` pushed now from this thread: `name` in the
/// `operator` category, or `{scope}::{name}` in `Custom Operator` inside a custom
/// operator's code (see [`set_scope`]); None when operations of its kind (symbolic
/// or imperative, see [`set_profile_ops`]) are not timed. Ask [`ops_on`] first.
pub fn op_tag(name: &'static str, dev: Option<Context>) -> Option<Tag> {
    let kind = if IN_GRAPH.with(|g| g.get()) { &SYMBOLIC } else { &IMPERATIVE };
    if !kind.load(Ordering::Relaxed) {
        return None;
    }
    Some(SCOPE.with(|s| match &*s.borrow() {
        Some(scope) => Tag { name: Cow::Owned(format!("{scope}::{name}")), cat: CUSTOM_OPERATOR, dev },
        None => Tag { name: Cow::Borrowed(name), cat: OPERATOR, dev },
    }))
}

fn push(r: Record) {
    if AGGREGATE.load(Ordering::Relaxed) {
        let (v, is_counter) = match r.kind {
            Kind::Span { end, .. } => (Some(end.saturating_sub(r.ts)), false),
            Kind::Counter(v) => (Some(v.max(0) as u64), true),
            Kind::Instant(_) => (None, false),
        };
        if let Some(v) = v {
            let mut st = stats().lock();
            let s = st.entry(r.cat.clone()).or_default().entry(r.name.clone()).or_insert(Stat { min: u64::MAX, ..Stat::default() });
            s.counter = is_counter;
            s.count += 1;
            // A counter's total is its last value (as in MXNet); a span's, the sum.
            s.total = if is_counter { v } else { s.total + v };
            s.min = s.min.min(v);
            s.max = s.max.max(v);
        }
    }
    RECORDS.lock().push(r);
}

/// Records a span that started at `start` and ends now, on this thread, if recording.
pub fn span(name: &str, cat: &str, phase: Phase, start: u64, dev: Option<Context>) {
    if !recording() {
        return;
    }
    let end = now_us();
    push(Record { name: name.to_string(), cat: cat.to_string(), kind: Kind::Span { phase, end }, ts: start, tid: thread_id(), dev });
}

/// Records a counter's new value, if recording.
pub fn counter(name: &str, cat: &str, value: i64) {
    if !recording() {
        return;
    }
    push(Record { name: name.to_string(), cat: cat.to_string(), kind: Kind::Counter(value), ts: now_us(), tid: thread_id(), dev: None });
}

/// Records an instant marker (`scope`: `g`, `p` or `t`), if recording.
pub fn instant(name: &str, cat: &str, scope: char) {
    if !recording() {
        return;
    }
    push(Record { name: name.to_string(), cat: cat.to_string(), kind: Kind::Instant(scope), ts: now_us(), tid: thread_id(), dev: None });
}

/// Runs `f` (an operation's work) and records it under `tag`, unless the profiler
/// was stopped meanwhile.
pub(super) fn timed<R>(tag: Tag, f: impl FnOnce() -> R) -> R {
    let start = now_us();
    let r = f();
    if recording() {
        let end = now_us();
        push(Record {
            name: tag.name.into_owned(),
            cat: tag.cat.to_string(),
            kind: Kind::Span { phase: Phase::Duration, end },
            ts: start,
            tid: thread_id(),
            dev: tag.dev,
        });
    }
    r
}

/// Takes every record kept so far, oldest first.
pub fn drain() -> Vec<Record> {
    std::mem::take(&mut *RECORDS.lock())
}

/// Drops every record kept so far.
pub fn clear() {
    RECORDS.lock().clear();
}

/// The aggregate statistics as (category, name, stat), in no particular order;
/// `reset` clears them.
pub fn aggregate(reset: bool) -> Vec<(String, String, Stat)> {
    let mut st = stats().lock();
    let out = st.iter().flat_map(|(c, m)| m.iter().map(move |(n, s)| (c.clone(), n.clone(), *s))).collect();
    if reset {
        st.clear();
    }
    out
}

/// Whether aggregate statistics are kept.
pub fn aggregating() -> bool {
    AGGREGATE.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_while_running_and_aggregates() {
        set_aggregate(true);
        set_running(false);
        span("x", "c", Phase::Duration, now_us(), None);
        assert!(drain().iter().all(|r| r.name != "x"));
        set_running(true);
        set_scope(Some("Op".into()));
        assert_eq!(op_tag("_zeros", None).unwrap().name, "Op::_zeros");
        assert_eq!(op_tag("_zeros", None).unwrap().cat, CUSTOM_OPERATOR);
        set_scope(None);
        assert_eq!(op_tag("_zeros", None).unwrap().cat, OPERATOR);
        set_profile_ops(false, true);
        assert!(op_tag("a", None).is_some());
        {
            let _g = graph_scope();
            assert!(op_tag("a", None).is_none());
        }
        assert!(op_tag("a", None).is_some());
        set_profile_ops(true, true);
        let t = now_us();
        span("x", "c", Phase::Task, t, None);
        span("x", "c", Phase::Task, t, None);
        counter("k", "c", 5);
        counter("k", "c", 3);
        instant("m", "c", 'p');
        // An operation pushed with a tag is recorded where it runs, under the tag.
        let v = super::super::Var::new();
        let tag = Tag { name: Cow::Borrowed("opaque"), cat: "c", dev: Some(Context::cpu(1)) };
        super::super::push_named(|| Ok(()), &[], &[v.clone()], false, Some(tag)).unwrap();
        super::super::wait_for_read(&v).unwrap();
        set_paused(true);
        span("x", "c", Phase::Task, t, None);
        set_running(false);
        let recs: Vec<_> = drain().into_iter().filter(|r| r.cat == "c").collect();
        assert_eq!(recs.len(), 6);
        let op = recs.iter().find(|r| r.name == "opaque").unwrap();
        assert_eq!(op.dev, Some(Context::cpu(1)));
        assert!(matches!(op.kind, Kind::Span { phase: Phase::Duration, end } if end >= op.ts));
        let agg = aggregate(true);
        let x = agg.iter().find(|(c, n, _)| c == "c" && n == "x").unwrap().2;
        assert_eq!((x.count, x.counter), (2, false));
        let k = agg.iter().find(|(c, n, _)| c == "c" && n == "k").unwrap().2;
        assert_eq!((k.count, k.total, k.min, k.max, k.counter), (2, 3, 3, 5, true));
        assert!(!agg.iter().any(|(_, n, _)| n == "m"));
        set_aggregate(false);
    }
}
