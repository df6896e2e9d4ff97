//! Host kernels. Parallel loops split work across the rayon pool only when it is
//! large enough to pay for it. That pool is oxnet's compute pool
//! ([`crate::engine::pool`]), never rayon's global one: every parallel section runs
//! inside [`crate::engine::install`] (a direct call on a pool thread), so that a
//! forked child, which gets a fresh pool, never waits on its parent's threads.

/// Defines `pub fn $name(args)`: checks `$check`, then runs `$imp` compiled for
/// AVX-512, for AVX2+FMA or plainly, whichever the CPU has (picked at run time).
macro_rules! isa_dispatch {
    ($(#[$m:meta])* pub fn $name:ident($($a:ident: $t:ty),*) => $imp:ident, check $check:expr) => {
        $(#[$m])*
        pub fn $name($($a: $t),*) {
            assert!($check);
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,fma")]
                unsafe fn avx512($($a: $t),*) {
                    $imp($($a),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2($($a: $t),*) {
                    $imp($($a),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has the instruction set the function is compiled for.
                    return unsafe { avx512($($a),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    // SAFETY: as above.
                    return unsafe { avx2($($a),*) };
                }
            }
            $imp($($a),*)
        }
    };
    ($(#[$m:meta])* pub fn $name:ident($($a:ident: $t:ty),*) -> $r:ty => $imp:ident, check $check:expr) => {
        $(#[$m])*
        pub fn $name($($a: $t),*) -> $r {
            assert!($check);
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,fma")]
                unsafe fn avx512($($a: $t),*) -> $r {
                    $imp($($a),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2($($a: $t),*) -> $r {
                    $imp($($a),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has the instruction set the function is compiled for.
                    return unsafe { avx512($($a),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    // SAFETY: as above.
                    return unsafe { avx2($($a),*) };
                }
            }
            $imp($($a),*)
        }
    };
}

pub mod conv;
pub mod conv_blocked;
pub mod conv_depthwise;
pub mod conv_direct;
pub mod conv_dw_blocked;
pub mod conv_fvec;
pub mod conv_wgrad;
pub mod elemwise;
pub mod gemm;
pub mod index;
pub mod layout;
pub mod nn;
pub mod packed_gemm;
pub mod reduce;
pub mod rnn_cell;
pub mod small_la;
pub mod softmax;
pub mod sort;
pub mod winograd;

/// A pointer that may cross to rayon workers: the engine guarantees exclusive access.
#[derive(Clone, Copy)]
pub struct SendPtr<T>(pub *mut T);
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}
impl<T> SendPtr<T> {
    #[inline(always)]
    pub fn get(self) -> *mut T {
        self.0
    }
}

/// Below this many elements a loop runs on one thread.
pub const PAR_MIN: usize = 1 << 16;

/// Runs `f(start, end)` over `0..n`, split across the pool when `n` is large.
pub fn par_for<F: Fn(usize, usize) + Sync + Send>(n: usize, grain: usize, f: F) {
    let threads = crate::engine::threads().max(1);
    if n < PAR_MIN.max(grain) || threads == 1 {
        f(0, n);
        return;
    }
    let chunks = (threads * 4).min(n.div_ceil(grain.max(1)));
    let size = n.div_ceil(chunks);
    crate::engine::install(|| {
        rayon::scope(|s| {
            for c in 0..chunks {
                let f = &f;
                let start = c * size;
                let end = ((c + 1) * size).min(n);
                if start < end {
                    s.spawn(move |_| f(start, end));
                }
            }
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn par_for_runs_inside_the_compute_pool() {
        // Called from a thread outside the pool, the loop's pieces run on it anyway.
        let outside = AtomicUsize::new(0);
        let seen = AtomicUsize::new(0);
        let n = PAR_MIN * 4;
        par_for(n, 1024, |s, e| {
            seen.fetch_add(e - s, Ordering::Relaxed);
            if crate::engine::pool().current_thread_index().is_none() && crate::engine::threads() > 1 {
                outside.fetch_add(1, Ordering::Relaxed);
            }
        });
        assert_eq!(seen.load(Ordering::Relaxed), n);
        assert_eq!(outside.load(Ordering::Relaxed), 0);
    }
}

/// How an environment switch (`OXNET_CONV_*`) sets a kernel's choice.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// Unset (or any value but `1` and `0`): the kernel's own rule by shape.
    Auto,
    /// `1`: wherever the kernel can run.
    On,
    /// `0`: never.
    Off,
}

/// The [`Mode`] environment variable `var` sets, read once into `cell`.
pub(crate) fn env_mode(cell: &'static std::sync::OnceLock<Mode>, var: &str) -> Mode {
    *cell.get_or_init(|| match std::env::var(var).as_deref().map(str::trim) {
        Ok("1") => Mode::On,
        Ok("0") => Mode::Off,
        _ => Mode::Auto,
    })
}

/// The x86-64 vector instruction set a hand-written kernel can use on this CPU
/// (AVX-512F or AVX2, each with FMA); `Portable` elsewhere.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Isa {
    Avx512,
    Avx2,
    Portable,
}

/// The best [`Isa`] this CPU runs.
pub(crate) fn isa() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        let fma = std::arch::is_x86_feature_detected!("fma");
        if std::arch::is_x86_feature_detected!("avx512f") && fma {
            return Isa::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && fma {
            return Isa::Avx2;
        }
    }
    Isa::Portable
}
