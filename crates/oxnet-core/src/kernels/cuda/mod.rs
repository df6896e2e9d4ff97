//! CUDA kernel sources, compiled at run time by NVRTC. The op entries' `cuda` slots
//! point at launchers built from these sources; they come with the CUDA backend work.
//! Every source is listed in [`SOURCES`] so CI can compile each one with NVRTC.

/// (name, CUDA C++ source) of every kernel file.
pub const SOURCES: &[(&str, &str)] = &[];
