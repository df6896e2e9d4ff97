//! Finding and opening NVIDIA's libraries (cuBLAS, cuBLASLt, cuDNN, NCCL) at run
//! time; nothing of them is needed to build oxnet.
//!
//! Each library is looked for, in this order:
//! 1. the folders of `OXNET_CUDA_LIB_DIRS` (`:`-separated);
//! 2. the NVIDIA pip wheels of the running Python: the `nvidia` package folders
//!    the Python side registers ([`set_wheel_roots`]; `nvidia/cu13/lib`,
//!    `nvidia/cublas/lib`, `nvidia/cudnn/lib`, `nvidia/nccl/lib`, ...), then those of
//!    `$VIRTUAL_ENV`;
//! 3. `$CUDA_HOME/lib64`, `/usr/local/cuda/lib64`;
//! 4. the system linker's path (by soname).
//!
//! A file found in a folder is opened by its full path after the libraries it
//! needs (cuBLASLt before cuBLAS, cuDNN's sub-libraries before `libcudnn.so.9`), so
//! nothing depends on `LD_LIBRARY_PATH`. A missing library is an error message,
//! never a panic.

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The libraries this module finds.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CudaLib {
    CublasLt,
    Cublas,
    Cudnn,
    Nccl,
}

impl CudaLib {
    pub const ALL: [CudaLib; 4] = [CudaLib::CublasLt, CudaLib::Cublas, CudaLib::Cudnn, CudaLib::Nccl];

    pub fn name(self) -> &'static str {
        match self {
            CudaLib::CublasLt => "cuBLASLt",
            CudaLib::Cublas => "cuBLAS",
            CudaLib::Cudnn => "cuDNN",
            CudaLib::Nccl => "NCCL",
        }
    }

    /// File names, preferred first (CUDA 13's, then CUDA 12's).
    pub fn sonames(self) -> &'static [&'static str] {
        match self {
            CudaLib::CublasLt => &["libcublasLt.so.13", "libcublasLt.so.12"],
            CudaLib::Cublas => &["libcublas.so.13", "libcublas.so.12"],
            CudaLib::Cudnn => &["libcudnn.so.9"],
            CudaLib::Nccl => &["libnccl.so.2"],
        }
    }

    /// Folders under a wheel root (`site-packages/nvidia`) that may hold it.
    fn wheel_dirs(self) -> &'static [&'static str] {
        match self {
            CudaLib::CublasLt | CudaLib::Cublas => &["cu13/lib", "cublas/lib"],
            CudaLib::Cudnn => &["cudnn/lib", "cu13/lib"],
            CudaLib::Nccl => &["nccl/lib", "cu13/lib"],
        }
    }

    /// Libraries to open first.
    fn needs(self) -> &'static [CudaLib] {
        match self {
            CudaLib::Cublas => &[CudaLib::CublasLt],
            _ => &[],
        }
    }
}

static WHEEL_ROOTS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Registers the `nvidia` package folders of the running Python (the Python side
/// calls it at import).
pub fn set_wheel_roots(roots: Vec<PathBuf>) {
    *WHEEL_ROOTS.lock() = roots;
}

/// Every folder to search for `lib`, in order (see the module's documentation).
pub fn search_dirs(lib: CudaLib) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(v) = std::env::var("OXNET_CUDA_LIB_DIRS") {
        dirs.extend(v.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
    }
    let mut roots = WHEEL_ROOTS.lock().clone();
    if let Ok(venv) = std::env::var("VIRTUAL_ENV") {
        roots.extend(venv_roots(Path::new(&venv)));
    }
    for r in roots {
        dirs.extend(lib.wheel_dirs().iter().map(|d| r.join(d)));
    }
    if let Ok(p) = std::env::var("CUDA_HOME") {
        dirs.push(PathBuf::from(p).join("lib64"));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| seen.insert(d.clone()));
    dirs
}

/// `lib/python3*/site-packages/nvidia` under a Python environment's prefix.
fn venv_roots(prefix: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(prefix.join("lib")) else { return Vec::new() };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python3")))
        .map(|p| p.join("site-packages").join("nvidia"))
        .collect();
    v.sort();
    v
}

/// The file that would be opened for `lib`: the first soname present in the first
/// folder holding one; None when only the system linker's path is left to try.
pub fn locate(lib: CudaLib) -> Option<PathBuf> {
    for d in search_dirs(lib) {
        for so in lib.sonames() {
            let p = d.join(so);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

static OPENED: OnceLock<Mutex<HashMap<CudaLib, Result<&'static Library, String>>>> = OnceLock::new();

/// cuDNN 9's sub-libraries, in dependency order (each needs those before it).
const CUDNN_PARTS: [&str; 7] = [
    "libcudnn_graph.so.9",
    "libcudnn_engines_precompiled.so.9",
    "libcudnn_engines_runtime_compiled.so.9",
    "libcudnn_heuristic.so.9",
    "libcudnn_ops.so.9",
    "libcudnn_cnn.so.9",
    "libcudnn_adv.so.9",
];

fn open_path(p: &Path) -> Result<Library, String> {
    // SAFETY: opening NVIDIA's libraries runs their initialisers, which only set up
    // their own state.
    unsafe { Library::open(Some(p), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| format!("{}: {e}", p.display()))
}

fn open_uncached(lib: CudaLib) -> Result<&'static Library, String> {
    for dep in lib.needs() {
        open(*dep).map_err(|e| format!("{} needs {}: {e}", lib.name(), dep.name()))?;
    }
    if let Some(p) = locate(lib) {
        if lib == CudaLib::Cudnn {
            if let Some(dir) = p.parent() {
                for part in CUDNN_PARTS {
                    let q = dir.join(part);
                    if q.is_file() {
                        // Kept open for the life of the process, like the main library.
                        std::mem::forget(open_path(&q)?);
                    }
                }
            }
        }
        return open_path(&p).map(|l| &*Box::leak(Box::new(l)));
    }
    let mut errs = Vec::new();
    for so in lib.sonames() {
        // SAFETY: as in open_path.
        match unsafe { Library::open(Some(so), RTLD_NOW | RTLD_GLOBAL) } {
            Ok(l) => return Ok(Box::leak(Box::new(l))),
            Err(e) => errs.push(e.to_string()),
        }
    }
    Err(format!(
        "{} was not found (install the NVIDIA wheels with `pip install oxnet[cuda13]`, or name its folder in OXNET_CUDA_LIB_DIRS): {}",
        lib.name(),
        errs.join("; ")
    ))
}

/// Opens `lib` (once; later calls return the same library or the same error).
pub fn open(lib: CudaLib) -> Result<&'static Library, String> {
    let map = OPENED.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(r) = map.lock().get(&lib) {
        return r.clone();
    }
    let r = open_uncached(lib);
    map.lock().insert(lib, r.clone());
    r
}

/// A function of an opened library.
///
/// # Safety
/// `T` must be the function's true type.
pub unsafe fn symbol<T: Copy>(lib: &'static Library, lname: &str, name: &str) -> Result<T, String> {
    // SAFETY: the caller gives the symbol's type.
    unsafe { lib.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|e| format!("{lname}: {name} not found: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_layouts_and_the_explicit_folder_are_searched_in_order() {
        let t = std::env::temp_dir().join(format!("oxnet-libs-{}", std::process::id()));
        let root = t.join("site-packages").join("nvidia");
        std::fs::create_dir_all(root.join("cu13/lib")).unwrap();
        std::fs::create_dir_all(root.join("cudnn/lib")).unwrap();
        std::fs::create_dir_all(root.join("nccl/lib")).unwrap();
        std::fs::write(root.join("cu13/lib/libcublas.so.13"), b"").unwrap();
        std::fs::write(root.join("cudnn/lib/libcudnn.so.9"), b"").unwrap();
        std::fs::write(root.join("nccl/lib/libnccl.so.2"), b"").unwrap();
        set_wheel_roots(vec![root.clone()]);
        assert_eq!(locate(CudaLib::Cublas), Some(root.join("cu13/lib/libcublas.so.13")));
        assert_eq!(locate(CudaLib::Cudnn), Some(root.join("cudnn/lib/libcudnn.so.9")));
        assert_eq!(locate(CudaLib::Nccl), Some(root.join("nccl/lib/libnccl.so.2")));
        let dirs = search_dirs(CudaLib::Cublas);
        assert!(dirs.iter().position(|d| d == &root.join("cu13/lib")) < dirs.iter().position(|d| d.ends_with("cuda/lib64")));
        // An empty file is found but cannot be opened: an error, never a panic.
        let e = open_path(&root.join("cu13/lib/libcublas.so.13")).unwrap_err();
        assert!(e.contains("libcublas.so.13"), "{e}");
        set_wheel_roots(Vec::new());
        let _ = std::fs::remove_dir_all(&t);
    }
}
