//! Fork safety. `fork()` copies only the calling thread: in the child, the compute
//! pool's threads are gone, and any lock one of them held stays locked forever. So
//! oxnet registers `pthread_atfork` handlers (once, when the engine, the compute
//! pool or the host memory pool is first used), which every fork of the process
//! runs, whoever calls it (`os.fork`, `multiprocessing`, a C library, a Rust test):
//!
//! - before: new operations from threads outside the pool wait, the engine drains
//!   (every pushed operation finishes, so no worker is inside an operation or holds
//!   an engine lock), and the host memory pool's lock is taken (no thread is
//!   half-way through an allocation);
//! - in the parent afterwards: the lock is released and pushes resume;
//! - in the child: the lock is released, the compute pool is forgotten (a new one
//!   is built on first use; the old one is leaked, never joined: its threads do not
//!   exist here) and the engine's wait/notify state is replaced by a fresh one
//!   (deferred errors are carried over).
//!
//! Not supported: forking from inside an engine operation (a compute thread), since
//! the operation itself can never finish in the child.

use std::sync::Once;

static REGISTER: Once = Once::new();

/// Registers the fork handlers (once per process; a child inherits them).
pub(crate) fn register() {
    REGISTER.call_once(|| {
        #[cfg(unix)]
        // SAFETY: the handlers are `extern "C"` functions without arguments that
        // never unwind (each body runs under `catch_unwind`).
        unsafe {
            libc::pthread_atfork(Some(prepare), Some(parent), Some(child));
        }
    });
}

fn guarded(f: fn()) {
    // A panic must not unwind through fork(); there is nothing better to do than
    // carry on (the handlers only wait and reset state).
    let _ = std::panic::catch_unwind(f);
}

extern "C" fn prepare() {
    guarded(|| {
        super::quiesce_for_fork();
        crate::storage::fork_prepare();
    });
}

extern "C" fn parent() {
    guarded(|| {
        crate::storage::fork_parent();
        super::resume_after_fork();
    });
}

extern "C" fn child() {
    guarded(|| {
        crate::storage::fork_child();
        super::pool::forget_after_fork();
        super::reset_after_fork();
    });
}

#[cfg(all(test, unix))]
mod tests {
    use crate::engine::{self, install, pool, threads, Var};
    use crate::{op, Context, NDArray};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// `n × n` product through the registry (an engine push whose GEMM is split
    /// across the compute pool), checked against a plain loop on a few entries.
    fn dot_ok(n: usize) -> bool {
        let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..n * n).map(|i| (i % 5) as f32 * 0.5).collect();
        let run = || -> crate::Result<Vec<f32>> {
            let x = NDArray::from_vec(&[n, n], &a, Context::cpu(0))?;
            let y = NDArray::from_vec(&[n, n], &b, Context::cpu(0))?;
            op::call1("dot", &[x, y], &[])?.to_vec::<f32>()
        };
        let Ok(c) = run() else { return false };
        [(0, 0), (n - 1, 3), (n / 2, n - 1)].iter().all(|&(i, j)| {
            let want: f32 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
            (c[i * n + j] - want).abs() <= 1e-3 * want.abs().max(1.0)
        })
    }

    /// Every thread of the pool runs a task at the same time (each waits until all
    /// have started): proof that the pool's threads exist and work.
    fn all_threads_run() -> bool {
        let n = threads();
        let started = AtomicUsize::new(0);
        let deadline = Instant::now() + Duration::from_secs(10);
        install(|| {
            rayon::scope(|s| {
                for _ in 0..n {
                    s.spawn(|_| {
                        started.fetch_add(1, Ordering::SeqCst);
                        while started.load(Ordering::SeqCst) < n && Instant::now() < deadline {
                            std::thread::yield_now();
                        }
                    });
                }
            })
        });
        started.load(Ordering::SeqCst) == n && Instant::now() < deadline
    }

    /// A dispatched (not inline) engine operation and a blocking wait on its var.
    fn engine_push_ok() -> bool {
        let v = Var::new();
        let hit = Arc::new(AtomicUsize::new(0));
        for _ in 0..8 {
            let h = hit.clone();
            let pushed = engine::push(
                move || {
                    h.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
                &[],
                std::slice::from_ref(&v),
                false,
            );
            if pushed.is_err() {
                return false;
            }
        }
        engine::wait_for_read(&v).is_ok() && engine::wait_all().is_ok() && hit.load(Ordering::SeqCst) == 8
    }

    fn child_checks() -> i32 {
        if !all_threads_run() {
            return 2;
        }
        if !dot_ok(320) {
            return 3;
        }
        if !engine_push_ok() {
            return 4;
        }
        if pool().current_thread_index().is_some() {
            return 5;
        }
        0
    }

    #[test]
    fn forked_child_runs_parallel_ops_and_engine() {
        // The parent's pool threads and engine are busy before the fork.
        assert!(all_threads_run());
        assert!(dot_ok(320));
        assert!(engine_push_ok());
        // Operations still in flight when fork() is called: the handler drains them.
        let x = NDArray::from_vec(&[256, 256], &vec![1.0f32; 256 * 256], Context::cpu(0)).unwrap();
        let mut pending = Vec::new();
        for _ in 0..4 {
            pending.push(op::call1("dot", &[x.clone(), x.clone()], &[]).unwrap());
        }
        // SAFETY: the child only runs oxnet code (no printing, no test harness) and
        // leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = std::panic::catch_unwind(child_checks).unwrap_or(6);
            // SAFETY: ends the child without running the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        // The parent goes on working meanwhile.
        assert!(dot_ok(200));
        for p in &pending {
            assert_eq!(p.to_vec::<f32>().unwrap()[0], 256.0);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut status = 0;
        loop {
            // SAFETY: plain waitpid on our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            assert_eq!(r, 0, "waitpid failed");
            if Instant::now() > deadline {
                // SAFETY: kills and reaps our own child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                panic!("the forked child deadlocked (killed after 20 s)");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(libc::WIFEXITED(status), "child did not exit normally: status {status}");
        assert_eq!(libc::WEXITSTATUS(status), 0, "child check failed (2: pool threads, 3: dot, 4: engine, 5: thread, 6: panic)");
    }
}
