//! Host kernels. Parallel loops split work across the rayon pool only when it is
//! large enough to pay for it.

pub mod elemwise;
pub mod layout;
pub mod index;
pub mod reduce;
pub mod softmax;
pub mod sort;
pub mod gemm;
pub mod nn;
pub mod conv;
pub mod conv_direct;

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
    let threads = rayon::current_num_threads().max(1);
    if n < PAR_MIN.max(grain) || threads == 1 {
        f(0, n);
        return;
    }
    let chunks = (threads * 4).min(n.div_ceil(grain.max(1)));
    let size = n.div_ceil(chunks);
    rayon::scope(|s| {
        for c in 0..chunks {
            let f = &f;
            let start = c * size;
            let end = ((c + 1) * size).min(n);
            if start < end {
                s.spawn(move |_| f(start, end));
            }
        }
    });
}
