//! CI's check of the CUDA kernels without a GPU: every generated source must compile
//! with NVRTC for sm_80 and sm_90. NVRTC comes from the pip package
//! `nvidia-cuda-nvrtc` (requirements-dev.txt), found in the repository's `.venv`
//! when `OXNET_NVRTC_LIBRARY` / `VIRTUAL_ENV` do not name it. Missing NVRTC fails
//! this test: CI installs it.

use oxnet_core::kernels::cuda::{gen, nvrtc, sources};
use std::path::PathBuf;
use std::sync::Once;

fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("OXNET_NVRTC_LIBRARY").is_some() {
            return;
        }
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(".venv");
        for dir in nvrtc::site_packages(&root) {
            for so in ["libnvrtc.so.13", "libnvrtc.so.12"] {
                let p = dir.join(so);
                if p.is_file() {
                    std::env::set_var("OXNET_NVRTC_LIBRARY", p);
                    return;
                }
            }
        }
    });
}

fn require_nvrtc() {
    setup();
    if let Err(e) = nvrtc::info() {
        panic!("NVRTC is required for this check (pip install -r requirements-dev.txt): {e}");
    }
}

#[test]
fn every_kernel_source_compiles_for_sm80_and_sm90() {
    require_nvrtc();
    let all = sources();
    assert!(all.len() > 50, "expected every family's sources, got {}", all.len());
    let jobs: Vec<(String, String, u32)> = all.iter().flat_map(|(n, s)| [80u32, 90].map(|a| (n.clone(), s.clone(), a))).collect();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).min(8);
    let chunks: Vec<Vec<(String, String, u32)>> = (0..threads).map(|t| jobs.iter().skip(t).step_by(threads).cloned().collect()).collect();
    let failures: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .into_iter()
                        .filter_map(|(n, src, arch)| match nvrtc::compile(&n, &src, arch, nvrtc::Output::Cubin) {
                            Ok(bin) if bin.is_empty() => Some(format!("{n} sm_{arch}: empty CUBIN")),
                            Ok(_) => None,
                            Err(e) => Some(e.to_string()),
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().expect("compile thread")).collect()
    });
    assert!(failures.is_empty(), "{} kernel source(s) failed:\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn broken_source_names_the_kernel_and_carries_the_log() {
    require_nvrtc();
    let src = "extern \"C\" __global__ void bad_kernel(float* y) { y[0] = undefined_thing; }";
    let e = nvrtc::compile("broken_family_f32", src, 90, nvrtc::Output::Cubin).unwrap_err().to_string();
    assert!(e.contains("broken_family_f32"), "{e}");
    assert!(e.contains("sm_90"), "{e}");
    assert!(e.contains("undefined_thing"), "the NVRTC log is included: {e}");
}

#[test]
fn ptx_output_is_text_for_one_generated_source() {
    require_nvrtc();
    let src = gen::source(gen::Family::Binary, "f32").unwrap();
    let ptx = nvrtc::compile("binary_f32", &src, 80, nvrtc::Output::Ptx).unwrap();
    let text = String::from_utf8_lossy(&ptx);
    assert!(text.contains(".entry binary_add_f32"), "kernel entry present");
}
