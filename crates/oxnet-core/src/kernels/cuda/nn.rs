//! Hand-written CUDA kernels: nn (see the launchers in `op::cuda_*`). Kernels are
//! templates over the storage type instantiated as `extern "C"` functions named
//! `nn_<kernel>_<tag>` (tag as in `gen::ctype`).

/// The source's name (what launchers pass to `Device::function`).
pub const NAME: &str = "nn";

const BODY: &str = r#"
"#;

/// The source: the common prelude, then the kernels.
pub fn source() -> String {
    super::with_prelude(NAME, BODY)
}
