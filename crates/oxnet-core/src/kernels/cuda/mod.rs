//! CUDA kernel sources, compiled at run time by NVRTC ([`nvrtc`]). The sources are
//! generated from one description per op family ([`gen`]); [`sources`] lists every
//! one of them so CI can compile each with NVRTC (see `tests/nvrtc_compile.rs`).

pub mod gen;
pub mod nvrtc;

/// (name, CUDA C++ source) of every kernel source.
pub fn sources() -> Vec<(String, String)> {
    gen::sources()
}

/// The generated source called `name` (as in [`sources`]).
pub fn source_by_name(name: &str) -> Option<String> {
    if name == "gather" {
        return gen::source(gen::Family::Gather, "any");
    }
    let (fam, tag) = name.split_once('_')?;
    let family = gen::FAMILIES.into_iter().find(|f| f.name() == fam)?;
    gen::source(family, tag)
}
