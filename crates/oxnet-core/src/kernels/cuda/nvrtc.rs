//! NVRTC, opened at run time by full path (never linked, never a panic).
//!
//! cudarc's NVRTC wrapper finds the library only on the dynamic linker's path and
//! panics when it is missing; the pip wheel `nvidia-cuda-nvrtc` installs it under
//! `site-packages/nvidia/cu13/lib`, next to `libnvrtc-builtins.so.13.0`, which NVRTC
//! itself opens by name. So this module binds the handful of NVRTC entry points with
//! libloading, preloads the builtins library from the same folder, and turns every
//! failure into an [`Error`].
//!
//! Where the library is looked for, in order: `$OXNET_NVRTC_LIBRARY` (a file; the
//! Python package sets it from the installed wheel), `nvidia/cu13/lib` and
//! `nvidia/cuda_nvrtc/lib` under `$VIRTUAL_ENV`'s site-packages, `$CUDA_HOME` /
//! `$CUDA_PATH` / `/usr/local/cuda` `lib64`, then the plain names on the linker path.
//!
//! Kernels are compiled to CUBIN for the device's exact architecture: a CUBIN needs
//! no JIT by the driver, so a NVRTC newer than the driver (e.g. 13.5 on a 13.0
//! driver, whose PTX the driver could not read) still produces loadable code.

use crate::error::{Error, Result};
use libloading::os::unix::{Library, Symbol, RTLD_GLOBAL, RTLD_NOW};
use std::ffi::{c_char, c_int, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

type Prog = *mut std::ffi::c_void;
type Res = c_int;

struct Api {
    _builtins: Option<Library>,
    _lib: Library,
    path: PathBuf,
    version: (i32, i32),
    create: unsafe extern "C" fn(*mut Prog, *const c_char, *const c_char, c_int, *const *const c_char, *const *const c_char) -> Res,
    compile: unsafe extern "C" fn(Prog, c_int, *const *const c_char) -> Res,
    destroy: unsafe extern "C" fn(*mut Prog) -> Res,
    log_size: unsafe extern "C" fn(Prog, *mut usize) -> Res,
    log: unsafe extern "C" fn(Prog, *mut c_char) -> Res,
    cubin_size: unsafe extern "C" fn(Prog, *mut usize) -> Res,
    cubin: unsafe extern "C" fn(Prog, *mut c_char) -> Res,
    ptx_size: unsafe extern "C" fn(Prog, *mut usize) -> Res,
    ptx: unsafe extern "C" fn(Prog, *mut c_char) -> Res,
    err_str: unsafe extern "C" fn(Res) -> *const c_char,
}

// SAFETY: NVRTC's API is thread-safe for distinct programs (documented); the
// function pointers and library handles are immutable after loading.
unsafe impl Send for Api {}
unsafe impl Sync for Api {}

static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();

const SONAMES: [&str; 4] = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "libnvrtc.so.13.0"];

/// Candidate library files, most specific first.
pub fn candidates() -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Ok(p) = std::env::var("OXNET_NVRTC_LIBRARY") {
        if !p.is_empty() {
            v.push(PathBuf::from(p));
        }
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(venv) = std::env::var("VIRTUAL_ENV") {
        dirs.extend(site_packages(Path::new(&venv)));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Ok(p) = std::env::var(var) {
            dirs.push(PathBuf::from(p).join("lib64"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    for d in dirs {
        for so in SONAMES {
            v.push(d.join(so));
        }
    }
    v
}

/// `nvidia/cu13/lib` and `nvidia/cuda_nvrtc/lib` under each `lib/python3*/site-packages`
/// of the environment at `prefix`.
pub fn site_packages(prefix: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(prefix.join("lib")) else { return out };
    let mut pys: Vec<PathBuf> =
        rd.flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python3"))).collect();
    pys.sort();
    for py in pys {
        let sp = py.join("site-packages").join("nvidia");
        out.push(sp.join("cu13").join("lib"));
        out.push(sp.join("cuda_nvrtc").join("lib"));
    }
    out
}

fn open(path: &Path) -> std::result::Result<Api, String> {
    let by_name = path.parent().is_none_or(|p| p.as_os_str().is_empty());
    if !by_name && !path.is_file() {
        return Err(format!("{} does not exist", path.display()));
    }
    // NVRTC opens libnvrtc-builtins by soname; loading it from the same folder first
    // makes that succeed without LD_LIBRARY_PATH.
    let mut builtins = None;
    if let Some(dir) = path.parent().filter(|_| !by_name) {
        if let Ok(rd) = std::fs::read_dir(dir) {
            let mut names: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        n.starts_with("libnvrtc-builtins.so") && !n.contains(".alt.")
                    })
                })
                .collect();
            names.sort();
            if let Some(b) = names.last() {
                // SAFETY: opening NVRTC's builtins library runs no initialiser of note.
                builtins = Some(unsafe { Library::open(Some(b), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| format!("{}: {e}", b.display()))?);
            }
        }
    }
    // SAFETY: as above; libnvrtc's initialisers are benign.
    let lib = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| format!("{}: {e}", path.display()))?;
    macro_rules! sym {
        ($name:literal) => {{
            // SAFETY: the symbol has the C signature NVRTC documents for it.
            let s: Symbol<_> = unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|e| format!("{}: {e}", path.display()))?;
            *s
        }};
    }
    let version_fn: unsafe extern "C" fn(*mut c_int, *mut c_int) -> Res = sym!("nvrtcVersion");
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out-pointers.
    unsafe { version_fn(&mut major, &mut minor) };
    Ok(Api {
        path: path.to_path_buf(),
        version: (major, minor),
        create: sym!("nvrtcCreateProgram"),
        compile: sym!("nvrtcCompileProgram"),
        destroy: sym!("nvrtcDestroyProgram"),
        log_size: sym!("nvrtcGetProgramLogSize"),
        log: sym!("nvrtcGetProgramLog"),
        cubin_size: sym!("nvrtcGetCUBINSize"),
        cubin: sym!("nvrtcGetCUBIN"),
        ptx_size: sym!("nvrtcGetPTXSize"),
        ptx: sym!("nvrtcGetPTX"),
        err_str: sym!("nvrtcGetErrorString"),
        _builtins: builtins,
        _lib: lib,
    })
}

fn load() -> std::result::Result<Api, String> {
    let mut tried = Vec::new();
    for c in candidates() {
        match open(&c) {
            Ok(api) => return Ok(api),
            Err(e) => tried.push(e),
        }
    }
    for so in SONAMES {
        match open(Path::new(so)) {
            Ok(api) => return Ok(api),
            Err(e) => tried.push(e),
        }
    }
    Err(format!(
        "NVRTC (libnvrtc.so) was not found; install the pip package nvidia-cuda-nvrtc or set OXNET_NVRTC_LIBRARY. Tried: {}",
        tried.join("; ")
    ))
}

fn api() -> Result<&'static Api> {
    API.get_or_init(load).as_ref().map_err(|e| Error::new(e.clone()))
}

/// True when NVRTC can be loaded.
pub fn available() -> bool {
    api().is_ok()
}

/// The loaded library's path and NVRTC version.
pub fn info() -> Result<(PathBuf, (i32, i32))> {
    let a = api()?;
    Ok((a.path.clone(), a.version))
}

/// What [`compile`] produces.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Output {
    /// Device code for exactly this architecture.
    Cubin,
    Ptx,
}

/// Compiles `src` (named `name` in messages) for `sm_XY` (`arch` = XY, e.g. 90).
/// Errors name the source and carry NVRTC's log.
pub fn compile(name: &str, src: &str, arch: u32, out: Output) -> Result<Vec<u8>> {
    let a = api()?;
    let csrc = CString::new(src).map_err(|_| Error::new(format!("kernel source '{name}' contains a NUL byte")))?;
    let cname = CString::new(format!("{name}.cu")).map_err(|_| Error::new(format!("kernel name '{name}' contains a NUL byte")))?;
    let opts: Vec<CString> = [format!("--gpu-architecture=sm_{arch}"), "--std=c++17".to_string(), "-default-device".to_string()]
        .into_iter()
        .map(|o| CString::new(o).expect("option without NUL"))
        .collect();
    let optp: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let err = |what: &str, r: Res| -> Error {
        // SAFETY: nvrtcGetErrorString returns a static C string.
        let s = unsafe { CStr::from_ptr((a.err_str)(r)) }.to_string_lossy().into_owned();
        Error::new(format!("NVRTC {what} failed for kernel source '{name}' (sm_{arch}): {s}"))
    };
    let mut prog: Prog = std::ptr::null_mut();
    // SAFETY: valid C strings; no headers.
    let r = unsafe { (a.create)(&mut prog, csrc.as_ptr(), cname.as_ptr(), 0, std::ptr::null(), std::ptr::null()) };
    if r != 0 {
        return Err(err("nvrtcCreateProgram", r));
    }
    let result = (|| {
        // SAFETY: prog is a live program; options are valid C strings.
        let r = unsafe { (a.compile)(prog, optp.len() as c_int, optp.as_ptr()) };
        if r != 0 {
            let log = program_log(a, prog);
            return Err(Error::new(format!(
                "NVRTC failed to compile kernel source '{name}' for sm_{arch} ({}):\n{log}",
                err("compile", r).message().rsplit(": ").next().unwrap_or("")
            )));
        }
        let (size_fn, get_fn) = match out {
            Output::Cubin => (a.cubin_size, a.cubin),
            Output::Ptx => (a.ptx_size, a.ptx),
        };
        let mut n = 0usize;
        // SAFETY: live program, valid out-pointer.
        let r = unsafe { size_fn(prog, &mut n) };
        if r != 0 {
            return Err(err("get output size", r));
        }
        let mut buf = vec![0u8; n];
        // SAFETY: buf has the size NVRTC reported.
        let r = unsafe { get_fn(prog, buf.as_mut_ptr() as *mut c_char) };
        if r != 0 {
            return Err(err("get output", r));
        }
        Ok(buf)
    })();
    // SAFETY: prog was created above and is destroyed once.
    unsafe { (a.destroy)(&mut prog) };
    result
}

fn program_log(a: &Api, prog: Prog) -> String {
    let mut n = 0usize;
    // SAFETY: live program, valid out-pointers / buffer of the reported size.
    unsafe {
        if (a.log_size)(prog, &mut n) != 0 || n == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; n];
        if (a.log)(prog, buf.as_mut_ptr() as *mut c_char) != 0 {
            return String::new();
        }
        String::from_utf8_lossy(&buf).trim_end_matches('\0').trim().to_string()
    }
}
