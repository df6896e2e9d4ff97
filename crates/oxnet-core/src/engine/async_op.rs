//! Asynchronous operations: operations whose work is done elsewhere (a
//! communication thread sending or receiving an array over MPI) and which finish
//! when that work says so, not when a function returns.
//!
//! [`push_async`] pushes an operation with the vars it reads and writes, like
//! [`super::push`]. When it holds its vars, its start function is called (on a
//! compute thread, or on the pushing thread when it is ready at once) with a
//! [`Completion`]; the start function must only hand the completion on and return.
//! Whoever holds the completion may then use the arrays' memory (as the operation
//! declared: read or write) until it calls [`Completion::complete`], from any
//! thread; the vars are given back then. A completion dropped without being
//! completed completes with an error, so an operation is never left pending.
//! Errors flow as for any operation: an error stored on the vars skips the start
//! function; an error given to `complete` is stored on the vars written.

use super::{complete_opr, dedup, engine, enqueue, enter, grant_prefix, Body, ExcRef, Opr};
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;

/// The start function of an asynchronous operation.
pub type StartFn = Box<dyn FnOnce(Completion) + Send + 'static>;

/// Finishes an asynchronous operation (see the module docs).
pub struct Completion {
    opr: Option<Arc<Opr>>,
    /// `NaiveEngine` mode: the pushing thread waits on this for the result.
    naive: Option<SyncSender<Result<()>>>,
}

impl Completion {
    /// Finishes the operation: `Err` is stored on the vars it writes and raised at
    /// the next blocking call that touches them.
    pub fn complete(mut self, r: Result<()>) {
        self.finish(r);
    }

    fn finish(&mut self, r: Result<()>) {
        if let Some(tx) = self.naive.take() {
            let _ = tx.send(r);
            return;
        }
        if let Some(opr) = self.opr.take() {
            let eng = engine();
            let exc: Option<ExcRef> = r.err().map(|e| {
                let er: ExcRef = Arc::new(Mutex::new(Some(e)));
                eng.global_exc.lock().push(er.clone());
                er
            });
            complete_opr(eng, &opr, exc);
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if self.opr.is_some() || self.naive.is_some() {
            self.finish(Err(Error::new("an asynchronous engine operation was dropped before it completed")));
        }
    }
}

/// Called by the engine when an asynchronous operation holds its vars.
pub(super) fn start(f: StartFn, opr: Arc<Opr>) {
    let c = Completion { opr: Some(opr), naive: None };
    // A panic drops the completion (moved into `f`), which completes with an error.
    let _ = catch_unwind(AssertUnwindSafe(move || f(c)));
}

/// Pushes an asynchronous operation reading `reads` and writing `writes`; `start`
/// receives its [`Completion`] once the operation holds its vars. In `NaiveEngine`
/// mode this blocks until the operation is completed and returns its result (the
/// caller must not hold anything the completing thread needs).
pub fn push_async<F>(start: F, reads: &[Arc<super::Var>], writes: &[Arc<super::Var>]) -> Result<()>
where
    F: FnOnce(Completion) + Send + 'static,
{
    let eng = engine();
    let (r, w) = dedup(reads, writes);
    if eng.naive {
        if let Some(e) = r.iter().chain(w.iter()).find_map(|v| v.take_exc()) {
            return Err(e);
        }
        let (tx, rx) = sync_channel(1);
        start(Completion { opr: None, naive: Some(tx) });
        return rx.recv().unwrap_or_else(|_| Err(Error::new("an asynchronous engine operation was lost")));
    }
    enter(eng);
    let granted = grant_prefix(&r, &w);
    enqueue(Some(Body::Async(Box::new(start))), &r, &w, granted, false, None, true);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{push, wait_for_read, Var};
    use std::sync::atomic::{AtomicI64, Ordering};

    #[test]
    fn a_read_after_an_async_write_waits_for_its_completion() {
        let v = Var::new();
        let x = Arc::new(AtomicI64::new(0));
        let (tx, rx) = std::sync::mpsc::channel::<Completion>();
        let x2 = x.clone();
        let th = std::thread::spawn(move || {
            if let Ok(c) = rx.recv() {
                std::thread::sleep(std::time::Duration::from_millis(30));
                x2.store(7, Ordering::SeqCst);
                c.complete(Ok(()));
            }
        });
        if crate::engine::is_naive() {
            drop(tx);
            th.join().unwrap();
            return;
        }
        push_async(move |c| tx.send(c).unwrap(), &[], std::slice::from_ref(&v)).unwrap();
        let x3 = x.clone();
        let seen = Arc::new(AtomicI64::new(-1));
        let s2 = seen.clone();
        push(
            move || {
                s2.store(x3.load(Ordering::SeqCst), Ordering::SeqCst);
                Ok(())
            },
            std::slice::from_ref(&v),
            &[],
            false,
        )
        .unwrap();
        wait_for_read(&v).unwrap();
        th.join().unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 7);
    }

    #[test]
    fn an_error_given_to_complete_reaches_the_next_read() {
        if crate::engine::is_naive() {
            return;
        }
        let v = Var::new();
        push_async(|c| c.complete(Err(Error::new("lost peer"))), &[], std::slice::from_ref(&v)).unwrap();
        let e = wait_for_read(&v).unwrap_err();
        assert!(e.to_string().contains("lost peer"));
        // a dropped completion is an error too
        push_async(drop, &[], std::slice::from_ref(&v)).unwrap();
        assert!(wait_for_read(&v).is_err());
    }
}
