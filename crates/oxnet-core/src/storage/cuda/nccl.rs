//! NCCL, opened at run time ([`super::libs`]): one communicator per GPU of this
//! process (`ncclCommInitAll` over every device, rank = device id), and the two
//! collectives the `nccl` KVStore needs: a sum reduced onto one device and a
//! broadcast from it. Each rank's part is enqueued on its device's compute stream
//! (grouped, from one thread), so stream order carries the engine's order.

use super::libs::{self, CudaLib};
use super::{device, num_gpus};
use crate::context::Context;
use crate::dtype::DType;
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

type Comm = *mut c_void;
type Res = i32;

#[allow(clippy::type_complexity)]
struct Api {
    init_all: unsafe extern "C" fn(*mut Comm, i32, *const i32) -> Res,
    reduce: unsafe extern "C" fn(*const c_void, *mut c_void, usize, i32, i32, i32, Comm, *mut c_void) -> Res,
    broadcast: unsafe extern "C" fn(*const c_void, *mut c_void, usize, i32, i32, Comm, *mut c_void) -> Res,
    group_start: unsafe extern "C" fn() -> Res,
    group_end: unsafe extern "C" fn() -> Res,
    error_string: unsafe extern "C" fn(Res) -> *const c_char,
}

// SAFETY: function pointers into a library kept open for the process.
unsafe impl Send for Api {}
unsafe impl Sync for Api {}

fn load() -> std::result::Result<Api, String> {
    let lib = libs::open(CudaLib::Nccl)?;
    let n = "NCCL";
    // SAFETY: the types are NCCL's documented signatures (nccl.h).
    unsafe {
        Ok(Api {
            init_all: libs::symbol(lib, n, "ncclCommInitAll")?,
            reduce: libs::symbol(lib, n, "ncclReduce")?,
            broadcast: libs::symbol(lib, n, "ncclBroadcast")?,
            group_start: libs::symbol(lib, n, "ncclGroupStart")?,
            group_end: libs::symbol(lib, n, "ncclGroupEnd")?,
            error_string: libs::symbol(lib, n, "ncclGetErrorString")?,
        })
    }
}

fn api() -> Result<&'static Api> {
    static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(|e| Error::new(e.clone()))
}

fn check(a: &Api, what: &str, r: Res) -> Result<()> {
    if r == 0 {
        return Ok(());
    }
    // SAFETY: ncclGetErrorString returns a static C string for any code.
    let msg = unsafe { CStr::from_ptr((a.error_string)(r)) }.to_string_lossy().into_owned();
    Err(Error::new(format!("NCCL {what} failed: {msg} (code {r})")))
}

struct Comms(Vec<Comm>);
// SAFETY: communicators are used under the COMMS lock, one collective at a time.
unsafe impl Send for Comms {}

static COMMS: OnceLock<std::result::Result<Mutex<Comms>, String>> = OnceLock::new();

fn comms() -> Result<&'static Mutex<Comms>> {
    COMMS
        .get_or_init(|| {
            let a = api().map_err(|e| e.to_string())?;
            let n = num_gpus();
            if n <= 0 {
                return Err("NCCL needs a GPU".to_string());
            }
            // Each device's context must exist before NCCL binds to it.
            for i in 0..n {
                device(Context::gpu(i)).map_err(|e| e.to_string())?;
            }
            let mut c: Vec<Comm> = vec![std::ptr::null_mut(); n as usize];
            // SAFETY: c has room for n communicators; a null device list means 0..n.
            check(a, "ncclCommInitAll", unsafe { (a.init_all)(c.as_mut_ptr(), n, std::ptr::null()) }).map_err(|e| e.to_string())?;
            Ok(Mutex::new(Comms(c)))
        })
        .as_ref()
        .map_err(|e| Error::new(e.clone()))
}

/// Whether NCCL can be opened here.
pub fn available() -> bool {
    api().is_ok()
}

fn nccl_type(d: DType) -> Result<i32> {
    Ok(match d {
        DType::I8 => 0,
        DType::U8 => 1,
        DType::I32 => 2,
        DType::I64 => 4,
        DType::F16 => 6,
        DType::BF16 => 9,
        DType::F32 => 7,
        DType::F64 => 8,
        DType::Bool => return Err(Error::new("NCCL does not reduce bool arrays")),
    })
}

/// One device's buffer in a collective: (device id, address).
pub type Part = (i32, u64);

const NCCL_SUM: i32 = 0;

/// `dst = sum of srcs` over devices: `srcs` holds one buffer per device of this
/// process (every rank takes part in the collective), each `count` elements of
/// `dtype`; `dst` is on `root`.
pub fn reduce_sum(root: i32, dst: u64, srcs: &[Part], count: usize, dtype: DType) -> Result<()> {
    let a = api()?;
    let t = nccl_type(dtype)?;
    let cs = comms()?.lock();
    if srcs.len() != cs.0.len() {
        return Err(Error::new(format!("NCCL reduce needs one buffer per GPU ({}), got {}", cs.0.len(), srcs.len())));
    }
    // SAFETY: grouped calls; every buffer is a device block of `count` elements on
    // its device, ordered by the engine; each rank's stream is its device's.
    unsafe {
        check(a, "ncclGroupStart", (a.group_start)())?;
        let mut res = Ok(());
        for &(dev, p) in srcs {
            let d = device(Context::gpu(dev))?;
            let recv = if dev == root { dst } else { p };
            let r = (a.reduce)(
                p as *const c_void,
                recv as *mut c_void,
                count,
                t,
                NCCL_SUM,
                root,
                cs.0[dev as usize],
                d.stream.cu_stream() as *mut c_void,
            );
            if res.is_ok() {
                res = check(a, "ncclReduce", r);
            }
        }
        check(a, "ncclGroupEnd", (a.group_end)())?;
        res
    }
}

/// Copies `src` (on `root`) into one buffer per device (`dsts`, every rank).
pub fn broadcast(root: i32, src: u64, dsts: &[Part], count: usize, dtype: DType) -> Result<()> {
    let a = api()?;
    let t = nccl_type(dtype)?;
    let cs = comms()?.lock();
    if dsts.len() != cs.0.len() {
        return Err(Error::new(format!("NCCL broadcast needs one buffer per GPU ({}), got {}", cs.0.len(), dsts.len())));
    }
    // SAFETY: as in reduce_sum.
    unsafe {
        check(a, "ncclGroupStart", (a.group_start)())?;
        let mut res = Ok(());
        for &(dev, p) in dsts {
            let d = device(Context::gpu(dev))?;
            let r = (a.broadcast)(
                src as *const c_void,
                p as *mut c_void,
                count,
                t,
                root,
                cs.0[dev as usize],
                d.stream.cu_stream() as *mut c_void,
            );
            if res.is_ok() {
                res = check(a, "ncclBroadcast", r);
            }
        }
        check(a, "ncclGroupEnd", (a.group_end)())?;
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_map_to_ncclc_codes_and_bool_is_refused() {
        assert_eq!(nccl_type(DType::F32).unwrap(), 7);
        assert_eq!(nccl_type(DType::F16).unwrap(), 6);
        assert!(nccl_type(DType::Bool).is_err());
    }
}
