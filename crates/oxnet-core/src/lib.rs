//! oxnet-core: Apache MXNet's programming model in pure Rust.
//!
//! - [`engine`]: the dependency engine every asynchronous operation goes through
//!   (and the profiler's recorder, [`engine::profiler`]);
//! - [`storage`]: per-device pooled memory;
//! - [`ndarray`]: NDArray = chunk + offset + shape + dtype;
//! - [`op`]: the operator registry (each op defined once) and [`op::invoke`];
//! - [`kernels`]: CPU loops and CUDA sources;
//! - [`io`]: MXNet's `.params` format.
//!
//! No Python here: a Rust program can use all of it directly (see `examples/`).

pub mod autograd;
pub mod context;
pub mod dtype;
pub mod engine;
pub mod error;
pub mod graph;
pub mod io;
pub mod kernels;
pub mod kvstore;
pub mod nd;
pub mod ndarray;
pub mod op;
pub mod predict;
pub mod random;
pub mod shape;
pub mod storage;

pub use context::Context;
pub use dtype::DType;
pub use error::{Error, Result};
pub use ndarray::{AnyArray, NDArray, SType, SparseArray};
