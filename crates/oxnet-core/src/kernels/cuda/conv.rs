//! Hand-written CUDA kernels: conv (see the launchers in `op::cuda_*`). Kernels are
//! templates over the storage type instantiated as `extern "C"` functions named
//! `conv_<kernel>_<tag>` (tag as in `gen::ctype`).

/// The source's name (what launchers pass to `Device::function`).
pub const NAME: &str = "conv";

const BODY: &str = r#"
"#;

/// The source: the common prelude, then the kernels.
pub fn source() -> String {
    super::with_prelude(NAME, BODY)
}
