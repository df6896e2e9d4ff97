//! CUDA kernel sources, compiled at run time by NVRTC ([`nvrtc`]). Most are
//! generated from one description per op family ([`gen`]); the NN, convolution and
//! miscellaneous kernels are written by hand ([`nn`], [`conv`], [`misc`]) over the
//! same prelude. [`sources`] lists every one of them so CI can compile each with
//! NVRTC (see `tests/nvrtc_compile.rs`).

pub mod conv;
pub mod gen;
pub mod misc;
pub mod nn;
pub mod nvrtc;

/// A hand-written source: its name and the function building its text.
type Handwritten = (&'static str, fn() -> String);

/// The hand-written sources.
const HANDWRITTEN: [Handwritten; 3] = [(nn::NAME, nn::source), (conv::NAME, conv::source), (misc::NAME, misc::source)];

/// A hand-written source's text: the common prelude, then `body`.
pub fn with_prelude(name: &str, body: &str) -> String {
    format!("// oxnet: {name}\n{}\n{body}", gen::PRELUDE)
}

/// (name, CUDA C++ source) of every kernel source.
pub fn sources() -> Vec<(String, String)> {
    let mut v = gen::sources();
    v.extend(HANDWRITTEN.iter().map(|(n, f)| (n.to_string(), f())));
    v
}

/// The source called `name` (as in [`sources`]).
pub fn source_by_name(name: &str) -> Option<String> {
    if let Some((_, f)) = HANDWRITTEN.iter().find(|(n, _)| *n == name) {
        return Some(f());
    }
    if name == "gather" {
        return gen::source(gen::Family::Gather, "any");
    }
    let (fam, tag) = name.split_once('_')?;
    let family = gen::FAMILIES.into_iter().find(|f| f.name() == fam)?;
    gen::source(family, tag)
}
