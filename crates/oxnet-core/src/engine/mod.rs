//! The dependency engine, with MXNet's semantics.
//!
//! Every chunk of memory has a [`Var`]. An operation is pushed with the vars it
//! reads and the vars it writes. Reads of a var run together; a write waits for
//! everything pushed on that var before it, and everything pushed after it waits
//! for the write: program order per var. Ready operations run on oxnet's compute
//! pool ([`pool()`], a rayon pool that oxnet owns and rebuilds in a forked child,
//! see [`fork`]); an operation that is ready when pushed and small enough runs at
//! once on the pushing thread (nothing could be ordered before it, so the result is
//! the same).
//!
//! Errors are values: a failed operation's error is stored on the vars it writes,
//! flows to every later operation that reads or writes them (those are skipped), and
//! is handed to the next blocking call ([`wait_for_read`], [`run_sync`],
//! [`wait_all`]), which clears it, as MXNet 1.9's engine does.
//!
//! `MXNET_ENGINE_TYPE=NaiveEngine` (or `OXNET_ENGINE_TYPE`) runs every operation
//! synchronously on the pushing thread and returns its error at once.
//!
//! A thread that pushes from outside the compute pool may run ahead of the
//! computation by at most [`max_pending`] operations: [`throttle`] holds it back
//! until half of them have finished. Results do not change; the memory of queued
//! operations stays bounded, and the buffers a loop reuses stay in cache.
//! `OXNET_ENGINE_MAX_PENDING` sets the bound (0: none).
//!
//! Operations do not nest: a compute thread waiting inside an operation's parallel
//! loop may pick up another ready operation from the pool, and sets it aside for
//! when its own returns instead of running it there ([`run_dispatched`]). With host
//! memory taken when an operation first touches it (see [`crate::storage::Storage`]),
//! a queue of independent operations then runs through a few warm output blocks.
//!
//! The profiler ([`profiler`]) times operations pushed with a [`profiler::Tag`]
//! ([`push_named`]) where they run; its names are opaque strings to the engine.
//!
//! This module owns ordering and error flow only; it never looks inside the
//! operations it runs.

pub mod async_op;
pub mod fork;
pub mod pool;
pub mod profiler;

pub use async_op::{push_async, Completion};
pub use pool::{install, on_pool_thread, pool, threads};

use crate::error::{Error, Result};
use parking_lot::{Condvar, Mutex};
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;

/// A deferred error, shared by every var it reached: clearing it at one blocking
/// call clears it everywhere, as in MXNet.
type ExcRef = Arc<Mutex<Option<Error>>>;

/// The work of an operation.
pub type OprFn = Box<dyn FnOnce() -> Result<()> + Send + 'static>;

type VarList = SmallVec<[Arc<Var>; 4]>;

/// An engine variable: the ordering point of one chunk of memory.
pub struct Var {
    state: Mutex<VarState>,
    has_exc: AtomicBool,
}

#[derive(Default)]
struct VarState {
    pending_reads: usize,
    writing: bool,
    queue: VecDeque<(Arc<Opr>, bool)>,
    exc: Option<ExcRef>,
}

impl Var {
    pub fn new() -> Arc<Var> {
        Arc::new(Var { state: Mutex::new(VarState::default()), has_exc: AtomicBool::new(false) })
    }

    fn exc_ref(&self) -> Option<ExcRef> {
        if !self.has_exc.load(Ordering::Acquire) {
            return None;
        }
        let st = self.state.lock();
        match &st.exc {
            Some(e) if e.lock().is_some() => Some(e.clone()),
            _ => None,
        }
    }

    /// Takes (and clears) the error stored on this var, if any.
    fn take_exc(&self) -> Option<Error> {
        self.exc_ref().and_then(|e| e.lock().take())
    }
}

/// What an operation runs: a function that finishes when it returns, or the start
/// of an asynchronous operation that finishes when its [`Completion`] is completed.
enum Body {
    Sync(OprFn),
    Async(async_op::StartFn),
}

struct Opr {
    wait: AtomicUsize,
    func: Mutex<Option<Body>>,
    reads: VarList,
    writes: VarList,
    /// Synchronisation operations run even when their vars carry an error.
    sync: bool,
    done: Option<Arc<Signal>>,
}

#[derive(Default)]
struct Signal {
    state: Mutex<Option<Option<ExcRef>>>,
    cv: Condvar,
}

impl Signal {
    fn set(&self, exc: Option<ExcRef>) {
        *self.state.lock() = Some(exc);
        self.cv.notify_all();
    }
    fn wait(&self) -> Option<ExcRef> {
        let mut g = self.state.lock();
        loop {
            if let Some(r) = g.take() {
                return r;
            }
            self.cv.wait(&mut g);
        }
    }
}

struct Engine {
    naive: bool,
    pending: AtomicUsize,
    waiters: AtomicUsize,
    idle_lock: Mutex<()>,
    idle_cv: Condvar,
    global_exc: Mutex<Vec<ExcRef>>,
    /// Ready operations a compute thread picked up while it was inside another
    /// operation (see [`run_dispatched`]); spawned again when that one returns.
    deferred: Mutex<Vec<Arc<Opr>>>,
    /// Set when `deferred` may be non-empty (a cheap test for every operation).
    any_deferred: AtomicBool,
}

impl Engine {
    fn new(naive: bool, global_exc: Vec<ExcRef>) -> Engine {
        Engine {
            naive,
            pending: AtomicUsize::new(0),
            waiters: AtomicUsize::new(0),
            idle_lock: Mutex::new(()),
            idle_cv: Condvar::new(),
            global_exc: Mutex::new(global_exc),
            deferred: Mutex::new(Vec::new()),
            any_deferred: AtomicBool::new(false),
        }
    }
}

/// The engine's state, leaked; a forked child replaces it (see [`reset_after_fork`]).
static ENGINE: AtomicPtr<Engine> = AtomicPtr::new(std::ptr::null_mut());

/// Operations a pushing thread may have pending before [`throttle`] holds it back
/// (0: no bound). A LeNet training step is about 50 operations; on two cores this
/// bound gave 9% more training throughput than none, against 5% for 128.
pub const DEFAULT_MAX_PENDING: usize = 64;

static MAX_PENDING: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_PENDING);

/// Set while a fork is being prepared: threads outside the compute pool wait before
/// pushing, so that the engine drains.
static FORKING: AtomicBool = AtomicBool::new(false);

#[inline]
fn engine() -> &'static Engine {
    let p = ENGINE.load(Ordering::Acquire);
    if p.is_null() {
        return init_engine();
    }
    // SAFETY: non-null values of ENGINE come from Box::into_raw and are never freed.
    unsafe { &*p }
}

fn built_engine() -> Option<&'static Engine> {
    let p = ENGINE.load(Ordering::Acquire);
    // SAFETY: as in `engine`.
    (!p.is_null()).then(|| unsafe { &*p })
}

#[cold]
fn init_engine() -> &'static Engine {
    fork::register();
    let kind = std::env::var("OXNET_ENGINE_TYPE").or_else(|_| std::env::var("MXNET_ENGINE_TYPE")).unwrap_or_default();
    if let Ok(v) = std::env::var("OXNET_ENGINE_MAX_PENDING") {
        if let Ok(n) = v.trim().parse::<usize>() {
            MAX_PENDING.store(n, Ordering::Relaxed);
        }
    }
    let new = Box::into_raw(Box::new(Engine::new(kind == "NaiveEngine", Vec::new())));
    match ENGINE.compare_exchange(std::ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: just stored; never freed.
        Ok(_) => unsafe { &*new },
        Err(cur) => {
            // SAFETY: `new` came from Box::into_raw above and was not shared; `cur`
            // is a stored engine (as in `engine`).
            unsafe {
                drop(Box::from_raw(new));
                &*cur
            }
        }
    }
}

/// Registers the fork handlers (see [`fork`]); called by anything that creates
/// state a forked child must reset.
pub fn register_fork_handlers() {
    fork::register();
}

/// Counts a new operation as pending. While a fork is being prepared, a thread
/// outside the compute pool backs out and waits until the fork is done (a pool
/// thread goes on: it is inside an operation the fork is waiting for).
#[inline]
fn enter(eng: &Engine) {
    loop {
        eng.pending.fetch_add(1, Ordering::SeqCst);
        if !FORKING.load(Ordering::SeqCst) || pool::on_pool_thread() {
            return;
        }
        leave(eng);
        while FORKING.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
}

/// Counts a pending operation as finished; wakes blocked `wait_all` callers when
/// the engine becomes idle, and throttled pushers when it is down to their mark.
#[inline]
fn leave(eng: &Engine) {
    let now = eng.pending.fetch_sub(1, Ordering::SeqCst) - 1;
    if eng.waiters.load(Ordering::SeqCst) > 0 && (now == 0 || now == MAX_PENDING.load(Ordering::Relaxed) / 2) {
        let _g = eng.idle_lock.lock();
        eng.idle_cv.notify_all();
    }
}

/// The bound on pending operations (0: none); see [`throttle`].
pub fn max_pending() -> usize {
    MAX_PENDING.load(Ordering::Relaxed)
}

/// Sets the bound on pending operations (0: none); returns the previous one.
pub fn set_max_pending(n: usize) -> usize {
    MAX_PENDING.swap(n, Ordering::Relaxed)
}

/// True when the calling thread should [`throttle`] before pushing more: more than
/// [`max_pending`] operations are pending, and it is not a compute thread. Cheap.
#[inline]
pub fn should_throttle() -> bool {
    let m = MAX_PENDING.load(Ordering::Relaxed);
    m != 0 && built_engine().is_some_and(|e| !e.naive && e.pending.load(Ordering::Relaxed) > m) && !pool::on_pool_thread()
}

/// Holds the calling thread back while more than [`max_pending`] operations are
/// pending, until half of them have finished. A no-op on a compute thread (which
/// may be running one of them) and in `NaiveEngine` mode. Callers that hold a lock
/// an operation might need (Python's GIL) must release it first.
pub fn throttle() {
    let m = MAX_PENDING.load(Ordering::Relaxed);
    let Some(eng) = built_engine() else { return };
    if m == 0 || eng.naive || eng.pending.load(Ordering::SeqCst) <= m || pool::on_pool_thread() {
        return;
    }
    let mut g = eng.idle_lock.lock();
    eng.waiters.fetch_add(1, Ordering::SeqCst);
    // The operations pushed first are always runnable (dependencies only point to
    // earlier pushes), so the count falls. The timeout covers a bound changed
    // while waiting.
    while eng.pending.load(Ordering::SeqCst) > MAX_PENDING.load(Ordering::Relaxed) / 2 {
        eng.idle_cv.wait_for(&mut g, std::time::Duration::from_millis(5));
    }
    eng.waiters.fetch_sub(1, Ordering::SeqCst);
}

/// Blocks until no operation is pending.
fn wait_idle(eng: &Engine) {
    let mut g = eng.idle_lock.lock();
    eng.waiters.fetch_add(1, Ordering::SeqCst);
    while eng.pending.load(Ordering::SeqCst) != 0 {
        eng.idle_cv.wait(&mut g);
    }
    eng.waiters.fetch_sub(1, Ordering::SeqCst);
}

/// Fork handler, before: stops new pushes from outside the pool and waits until
/// every pushed operation has finished (skipped on a compute thread, which would
/// wait for itself).
fn quiesce_for_fork() {
    FORKING.store(true, Ordering::SeqCst);
    if let Some(eng) = built_engine() {
        if !eng.naive && !pool::on_pool_thread() {
            wait_idle(eng);
        }
    }
}

/// Fork handler, in the parent: pushes resume.
fn resume_after_fork() {
    FORKING.store(false, Ordering::SeqCst);
}

/// Fork handler, in the child: a fresh engine state (no waiters, unlocked, nothing
/// pending), keeping the errors not yet collected by `wait_all`.
fn reset_after_fork() {
    if let Some(old) = built_engine() {
        // The list's lock can only be held by a thread that no longer exists if the
        // fork raced a `wait_all`; those errors are then lost to `wait_all` (they
        // stay on their vars).
        let exc = old.global_exc.try_lock().map(|mut g| std::mem::take(&mut *g)).unwrap_or_default();
        let new = Box::into_raw(Box::new(Engine::new(old.naive, exc)));
        // The old state is leaked: its locks may be held by threads of the parent.
        ENGINE.store(new, Ordering::Release);
    }
    FORKING.store(false, Ordering::SeqCst);
}

/// True when the engine runs every operation synchronously (`NaiveEngine`).
pub fn is_naive() -> bool {
    engine().naive
}

type RefList<'a> = SmallVec<[&'a Arc<Var>; 4]>;

/// Removes duplicates; a var both read and written is only written.
fn dedup<'a>(reads: &'a [Arc<Var>], writes: &'a [Arc<Var>]) -> (RefList<'a>, RefList<'a>) {
    let mut w: RefList<'a> = SmallVec::new();
    for v in writes {
        if !w.iter().any(|x| Arc::ptr_eq(x, v)) {
            w.push(v);
        }
    }
    let mut r: RefList<'a> = SmallVec::new();
    for v in reads {
        if !w.iter().any(|x| Arc::ptr_eq(x, v)) && !r.iter().any(|x| Arc::ptr_eq(x, v)) {
            r.push(v);
        }
    }
    (r, w)
}

pub(crate) fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

thread_local! {
    /// True while this thread runs the body of an operation.
    static IN_OP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn run_fn<F: FnOnce() -> Result<()>>(f: F) -> Result<()> {
    let outer = !IN_OP.replace(true);
    let r = catch_unwind(AssertUnwindSafe(f));
    if outer {
        IN_OP.set(false);
        respawn_deferred();
    }
    match r {
        Ok(r) => r,
        // Storage::ptr unwinds with the Error itself when the host is out of memory.
        Err(p) => match p.downcast::<Error>() {
            Ok(e) => Err(*e),
            Err(p) => Err(Error::new(format!("internal error (panic) in an engine operation: {}", panic_message(p)))),
        },
    }
}

/// Grants `v` to a new operation at once if nothing is pending on it.
fn try_grant(v: &Var, write: bool) -> bool {
    let mut st = v.state.lock();
    if write {
        if !st.writing && st.pending_reads == 0 && st.queue.is_empty() {
            st.writing = true;
            return true;
        }
    } else if !st.writing && st.queue.is_empty() {
        st.pending_reads += 1;
        return true;
    }
    false
}

/// Pushes an operation. `inline_ok` lets a small operation that is ready at once
/// run on the calling thread. In `NaiveEngine` mode the operation runs now and its
/// error is returned; otherwise errors are deferred to the vars it writes.
pub fn push<F>(f: F, reads: &[Arc<Var>], writes: &[Arc<Var>], inline_ok: bool) -> Result<()>
where
    F: FnOnce() -> Result<()> + Send + 'static,
{
    push_impl(f, reads, writes, inline_ok)
}

/// Like [`push`]; with a tag (build one only when [`profiler::ops_on`]), the
/// operation is timed where it runs and recorded by the profiler under the tag's
/// name and category. An operation skipped for an error on its vars is not recorded.
pub fn push_named<F>(f: F, reads: &[Arc<Var>], writes: &[Arc<Var>], inline_ok: bool, tag: Option<profiler::Tag>) -> Result<()>
where
    F: FnOnce() -> Result<()> + Send + 'static,
{
    match tag {
        None => push_impl(f, reads, writes, inline_ok),
        Some(t) => push_impl(move || profiler::timed(t, f), reads, writes, inline_ok),
    }
}

fn push_impl<F>(f: F, reads: &[Arc<Var>], writes: &[Arc<Var>], inline_ok: bool) -> Result<()>
where
    F: FnOnce() -> Result<()> + Send + 'static,
{
    let eng = engine();
    let (r, w) = dedup(reads, writes);
    if eng.naive {
        if let Some(e) = r.iter().chain(w.iter()).find_map(|v| v.take_exc()) {
            return Err(e);
        }
        return run_fn(f);
    }
    enter(eng);
    let granted = if inline_ok { grant_prefix(&r, &w) } else { 0 };
    if granted == r.len() + w.len() {
        // Ready now, and small: run here, without queueing anything.
        let mut exc = r.iter().chain(w.iter()).find_map(|v| v.exc_ref());
        if exc.is_none() {
            if let Err(e) = run_fn(f) {
                let er: ExcRef = Arc::new(Mutex::new(Some(e)));
                eng.global_exc.lock().push(er.clone());
                exc = Some(er);
            }
        }
        let mut ready: SmallVec<[Arc<Opr>; 4]> = SmallVec::new();
        release(&r, &w, exc.as_ref(), false, &mut ready);
        finish(eng, ready);
        return Ok(());
    }
    enqueue(Some(Body::Sync(Box::new(f))), &r, &w, granted, false, None, false);
    Ok(())
}

/// Grants vars in order (reads, then writes) while they are free; returns how many.
fn grant_prefix(r: &RefList, w: &RefList) -> usize {
    let mut n = 0;
    for v in r.iter() {
        if !try_grant(v, false) {
            return n;
        }
        n += 1;
    }
    for v in w.iter() {
        if !try_grant(v, true) {
            return n;
        }
        n += 1;
    }
    n
}

/// Queues an operation whose first `granted` vars (reads, then writes) are already
/// granted; grants or queues the rest, and dispatches it when it becomes ready.
#[allow(clippy::too_many_arguments)]
fn enqueue(f: Option<Body>, r: &RefList, w: &RefList, granted: usize, sync: bool, done: Option<Arc<Signal>>, inline_ok: bool) {
    let n = r.len() + w.len();
    let opr = Arc::new(Opr {
        wait: AtomicUsize::new(n - granted + 1),
        func: Mutex::new(f),
        reads: r.iter().map(|v| (*v).clone()).collect(),
        writes: w.iter().map(|v| (*v).clone()).collect(),
        sync,
        done,
    });
    let mut now = 0;
    for (i, v) in opr.reads.iter().enumerate() {
        if i < granted {
            continue;
        }
        let mut st = v.state.lock();
        if !st.writing && st.queue.is_empty() {
            st.pending_reads += 1;
            now += 1;
        } else {
            st.queue.push_back((opr.clone(), false));
        }
    }
    for (i, v) in opr.writes.iter().enumerate() {
        if i + opr.reads.len() < granted {
            continue;
        }
        let mut st = v.state.lock();
        if !st.writing && st.pending_reads == 0 && st.queue.is_empty() {
            st.writing = true;
            now += 1;
        } else {
            st.queue.push_back((opr.clone(), true));
        }
    }
    if opr.wait.fetch_sub(now + 1, Ordering::AcqRel) == now + 1 {
        if inline_ok {
            execute(opr);
        } else {
            dispatch(opr);
        }
    }
}

fn dispatch(opr: Arc<Opr>) {
    pool().spawn(move || run_dispatched(opr));
}

/// The pool job of a dispatched operation. A compute thread waiting inside an
/// operation's parallel loop (a `rayon::scope`, `join` or `install`) takes other
/// jobs from the pool meanwhile, ready operations included. Running one there would
/// stack whole operations on that thread, each holding its half-written output,
/// and delay the outer one's completion behind them; so it is set aside and spawned
/// again when the outer operation returns ([`respawn_deferred`]), while the waiting
/// thread goes on with the parallel loops' own pieces.
fn run_dispatched(opr: Arc<Opr>) {
    if IN_OP.get() {
        let eng = engine();
        eng.deferred.lock().push(opr);
        eng.any_deferred.store(true, Ordering::Release);
        return;
    }
    execute(opr);
}

/// Spawns the operations set aside by [`run_dispatched`] on this thread or any other
/// (each thread that sets one aside calls this when its own operation returns, so
/// none is left behind), first set aside first.
fn respawn_deferred() {
    let Some(eng) = built_engine() else { return };
    if !eng.any_deferred.load(Ordering::Acquire) || !eng.any_deferred.swap(false, Ordering::AcqRel) {
        return;
    }
    let ops = std::mem::take(&mut *eng.deferred.lock());
    for o in ops {
        pool().spawn_fifo(move || run_dispatched(o));
    }
}

fn execute(opr: Arc<Opr>) {
    let eng = engine();
    let mut exc: Option<ExcRef> = None;
    if !opr.sync {
        exc = opr.reads.iter().chain(opr.writes.iter()).find_map(|v| v.exc_ref());
    }
    let f = opr.func.lock().take();
    match f {
        Some(Body::Sync(f)) if exc.is_none() => {
            if let Err(e) = run_fn(f) {
                let r: ExcRef = Arc::new(Mutex::new(Some(e)));
                eng.global_exc.lock().push(r.clone());
                exc = Some(r);
            }
        }
        Some(Body::Async(start)) if exc.is_none() => {
            // Finishes when the completion is completed (see async_op).
            async_op::start(start, opr);
            return;
        }
        _ => {}
    }
    complete_opr(eng, &opr, exc);
}

/// Gives back the vars of a finished operation (storing `exc` on the vars it
/// writes), signals its waiter and dispatches the operations now ready.
fn complete_opr(eng: &Engine, opr: &Arc<Opr>, exc: Option<ExcRef>) {
    let mut ready: SmallVec<[Arc<Opr>; 4]> = SmallVec::new();
    let r: RefList = opr.reads.iter().collect();
    let w: RefList = opr.writes.iter().collect();
    release(&r, &w, exc.as_ref(), opr.sync, &mut ready);
    if let Some(d) = &opr.done {
        d.set(exc);
    }
    finish(eng, ready);
}

/// Gives the vars of a finished operation back, collecting the operations that
/// now hold all their vars.
fn release(r: &RefList, w: &RefList, exc: Option<&ExcRef>, sync: bool, ready: &mut SmallVec<[Arc<Opr>; 4]>) {
    for v in r.iter() {
        let mut st = v.state.lock();
        st.pending_reads -= 1;
        if st.pending_reads == 0 && !st.writing {
            if let Some((_, true)) = st.queue.front() {
                let (o, _) = st.queue.pop_front().unwrap();
                st.writing = true;
                ready.push(o);
            }
        }
    }
    for v in w.iter() {
        let mut st = v.state.lock();
        if let Some(e) = exc {
            if !sync {
                st.exc = Some(e.clone());
                v.has_exc.store(true, Ordering::Release);
            }
        }
        st.writing = false;
        while let Some((_, false)) = st.queue.front() {
            let (o, _) = st.queue.pop_front().unwrap();
            st.pending_reads += 1;
            ready.push(o);
        }
        if st.pending_reads == 0 {
            if let Some((_, true)) = st.queue.front() {
                let (o, _) = st.queue.pop_front().unwrap();
                st.writing = true;
                ready.push(o);
            }
        }
    }
}

fn finish(eng: &Engine, ready: SmallVec<[Arc<Opr>; 4]>) {
    for o in ready {
        if o.wait.fetch_sub(1, Ordering::AcqRel) == 1 {
            dispatch(o);
        }
    }
    leave(eng);
}

/// Runs `f` once every operation pushed before it on `reads` (as a reader) and
/// `writes` (as a writer) has finished, and blocks until it has run. An error stored
/// on those vars is returned (and cleared) instead of running `f`.
pub fn run_sync<F>(f: F, reads: &[Arc<Var>], writes: &[Arc<Var>]) -> Result<()>
where
    F: FnOnce() -> Result<()> + Send + 'static,
{
    let eng = engine();
    let (r, w) = dedup(reads, writes);
    if eng.naive {
        if let Some(e) = r.iter().chain(w.iter()).find_map(|v| v.take_exc()) {
            return Err(e);
        }
        return run_fn(f);
    }
    enter(eng);
    let granted = grant_prefix(&r, &w);
    if granted == r.len() + w.len() {
        let res = match r.iter().chain(w.iter()).find_map(|v| v.take_exc()) {
            Some(e) => Err(e),
            None => run_fn(f),
        };
        let mut ready: SmallVec<[Arc<Opr>; 4]> = SmallVec::new();
        release(&r, &w, None, true, &mut ready);
        finish(eng, ready);
        return res;
    }
    let result: Arc<Mutex<Option<Result<()>>>> = Arc::new(Mutex::new(None));
    let res2 = result.clone();
    let vars: VarList = r.iter().chain(w.iter()).map(|v| (*v).clone()).collect();
    let body: OprFn = Box::new(move || {
        // Deferred errors on the vars win over running the body.
        if let Some(e) = vars.iter().find_map(|v| v.take_exc()) {
            *res2.lock() = Some(Err(e));
            return Ok(());
        }
        *res2.lock() = Some(run_fn(f));
        Ok(())
    });
    let sig = Arc::new(Signal::default());
    enqueue(Some(Body::Sync(body)), &r, &w, granted, true, Some(sig.clone()), true);
    sig.wait();
    let r = result.lock().take();
    r.unwrap_or(Ok(()))
}

/// Blocks until every operation pushed before it that writes `var` has finished,
/// then returns (and clears) the error stored on `var`, if any.
pub fn wait_for_read(var: &Arc<Var>) -> Result<()> {
    run_sync(|| Ok(()), std::slice::from_ref(var), &[])
}

/// Blocks until every operation pushed before it that touches `var` has finished.
pub fn wait_for_write(var: &Arc<Var>) -> Result<()> {
    run_sync(|| Ok(()), &[], std::slice::from_ref(var))
}

/// Blocks until the engine is idle, then returns the first error raised by any
/// operation since the last `wait_all`, clearing all of them.
pub fn wait_all() -> Result<()> {
    let eng = engine();
    wait_idle(eng);
    let refs: Vec<ExcRef> = std::mem::take(&mut *eng.global_exc.lock());
    let mut first = None;
    for r in refs {
        let e = r.lock().take();
        if first.is_none() {
            first = e;
        }
    }
    match first {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Number of operations pushed and not yet finished.
pub fn pending() -> usize {
    engine().pending.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI64;

    #[test]
    fn ops_do_not_nest_while_one_waits_in_its_parallel_loop() {
        if is_naive() {
            return;
        }
        // Independent ops, each with a parallel loop whose pieces sleep: a thread
        // waiting for a piece must not start another whole op meanwhile.
        thread_local! {
            static DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        }
        let deepest = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let vars: Vec<_> = (0..40).map(|_| Var::new()).collect();
        for v in &vars {
            let (deepest, done) = (deepest.clone(), done.clone());
            push(
                move || {
                    let d = DEPTH.with(|c| {
                        c.set(c.get() + 1);
                        c.get()
                    });
                    deepest.fetch_max(d, Ordering::SeqCst);
                    install(|| {
                        rayon::scope(|s| {
                            for _ in 0..4 {
                                s.spawn(|_| std::thread::sleep(std::time::Duration::from_millis(1)));
                            }
                        })
                    });
                    DEPTH.with(|c| c.set(c.get() - 1));
                    done.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
                &[],
                &[v.clone()],
                false,
            )
            .unwrap();
        }
        for v in &vars {
            wait_for_read(v).unwrap();
        }
        assert_eq!(done.load(Ordering::SeqCst), 40);
        assert_eq!(deepest.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn out_of_memory_in_an_op_is_its_error() {
        if is_naive() {
            return;
        }
        let v = Var::new();
        let s = Arc::new(crate::storage::Storage::alloc(crate::Context::cpu(0), 1 << 62).unwrap());
        let s2 = s.clone();
        push(
            move || {
                let _ = s2.ptr();
                Ok(())
            },
            &[],
            &[v.clone()],
            false,
        )
        .unwrap();
        let e = wait_for_read(&v).unwrap_err().to_string();
        assert!(e.contains("out of host memory") && !e.contains("panic"), "{e}");
    }

    #[test]
    fn writes_in_program_order() {
        let v = Var::new();
        let cell = Arc::new(AtomicI64::new(0));
        for i in 0..1000 {
            let c = cell.clone();
            push(
                move || {
                    let old = c.load(Ordering::SeqCst);
                    c.store(old * 3 % 1_000_003 + i, Ordering::SeqCst);
                    Ok(())
                },
                &[],
                &[v.clone()],
                false,
            )
            .unwrap();
        }
        wait_for_read(&v).unwrap();
        let mut want = 0i64;
        for i in 0..1000 {
            want = want * 3 % 1_000_003 + i;
        }
        assert_eq!(cell.load(Ordering::SeqCst), want);
    }

    #[test]
    fn throttle_holds_back_until_half_done() {
        if is_naive() {
            return;
        }
        let v = Var::new();
        let gate = Arc::new(AtomicBool::new(false));
        let g2 = gate.clone();
        // A blocked first op keeps every later write of `v` pending.
        push(
            move || {
                while !g2.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
                Ok(())
            },
            &[],
            &[v.clone()],
            false,
        )
        .unwrap();
        let count = Arc::new(AtomicI64::new(0));
        for _ in 0..(max_pending() + 10) {
            let c = count.clone();
            push(
                move || {
                    c.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
                &[],
                &[v.clone()],
                false,
            )
            .unwrap();
        }
        assert!(should_throttle());
        let opener = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(30));
            gate.store(true, Ordering::SeqCst);
        });
        throttle();
        // It could only return once the gate opened and at least half the ops ran.
        assert!(opener.is_finished() || count.load(Ordering::SeqCst) > 0);
        assert!(count.load(Ordering::SeqCst) as usize >= max_pending() / 2);
        opener.join().unwrap();
        wait_for_read(&v).unwrap();
        assert_eq!(count.load(Ordering::SeqCst) as usize, max_pending() + 10);
    }

    #[test]
    fn error_flows_and_clears() {
        let a = Var::new();
        let b = Var::new();
        push(|| Err(Error::new("boom")), &[], &[a.clone()], false).unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let r2 = ran.clone();
        push(
            move || {
                r2.store(true, Ordering::SeqCst);
                Ok(())
            },
            &[a.clone()],
            &[b.clone()],
            false,
        )
        .unwrap();
        let e = wait_for_read(&b).unwrap_err();
        assert!(!is_naive() || e.message().contains("boom"));
        assert!(e.message().contains("boom"));
        assert!(!ran.load(Ordering::SeqCst));
        // the shared error was cleared by the first blocking call
        wait_for_read(&a).unwrap();
        let _ = wait_all();
    }
}
