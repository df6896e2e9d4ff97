//! Compute kernels. `cpu/` holds the host loops (rayon-parallel, written so the
//! compiler vectorises them); `cuda/` holds the NVRTC sources of the CUDA backend.
//! Kernels see raw pointers and shapes only: no engine, no NDArray.

pub mod cpu;
pub mod cuda;
