//! The host path of ops that have no CUDA kernel yet: on a GPU context such an op
//! copies its arrays to the host, runs its CPU kernel there and copies the results
//! (outputs and the inputs it writes) back, inside its engine operation, so the
//! engine's ordering holds. It is slow (the device is synchronised twice) and says
//! so once per op on stderr; `OXNET_CUDA_HOST_FALLBACK=0` turns it off, and such an
//! op is then a clear error. [`ops_without_cuda`] lists the ops that take it.

use super::{Blob, ComputeFn, OpCall};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::storage::cuda::device;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::collections::HashSet;

/// Whether ops without a CUDA kernel run on the host (default) instead of failing.
pub fn enabled() -> bool {
    !std::env::var("OXNET_CUDA_HOST_FALLBACK").is_ok_and(|v| matches!(v.trim(), "0" | "false" | "False" | "off"))
}

/// Names of the registry ops with neither a CUDA kernel nor a host implementation
/// of their own (they run through [`host_compute`] on a GPU), sorted.
pub fn ops_without_cuda() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = super::all_ops().iter().filter(|o| o.cuda.is_none() && o.host.is_none()).map(|o| o.name).collect();
    v.sort_unstable();
    v
}

static WARNED: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

fn warn_once(name: &'static str, ctx: Context) {
    let mut w = WARNED.lock();
    if w.get_or_insert_with(HashSet::new).insert(name) {
        eprintln!("oxnet: operator {name} has no CUDA kernel yet; on {ctx} it runs on the host (its arrays are copied out and back)");
    }
}

/// 8-byte aligned host memory for one array (CPU kernels read typed pointers).
fn host_buf(bytes: usize) -> Vec<u64> {
    vec![0u64; bytes.div_ceil(8).max(1)]
}

fn as_bytes(v: &mut [u64], bytes: usize) -> &mut [u8] {
    // SAFETY: a u64 slice is at least `bytes` bytes long (host_buf) and any byte
    // pattern is a valid u8.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, bytes) }
}

/// The compute of an op without a CUDA kernel on a GPU context.
pub fn host_compute(c: &mut OpCall) -> Result<()> {
    let name = c.op.name;
    let d = device(c.ctx).map_err(|e| Error::op(name, e))?;
    warn_once(name, c.ctx);
    let bytes = |b: &Blob| b.size() * b.dtype.size();
    let mut bufs: Vec<Vec<u64>> = Vec::with_capacity(c.inputs.len() + c.outputs.len());
    // Outputs are copied too: an op may keep part of an output it was given.
    for b in c.inputs.iter().chain(c.outputs.iter()) {
        let n = bytes(b);
        let mut v = host_buf(n);
        d.copy_dtoh(as_bytes(&mut v, n), b.ptr as u64).map_err(|e| Error::op(name, e))?;
        bufs.push(v);
    }
    let mut host: SmallVec<[Blob; 6]> = SmallVec::new();
    for (b, v) in c.inputs.iter().chain(c.outputs.iter()).zip(bufs.iter_mut()) {
        host.push(Blob { ptr: v.as_mut_ptr() as *mut u8, shape: b.shape.clone(), dtype: b.dtype });
    }
    let (hin, hout) = host.split_at(c.inputs.len());
    let mut call = OpCall {
        op: c.op,
        params: c.params,
        inputs: hin,
        outputs: hout,
        ctx: Context::cpu(0),
        rng: c.rng.as_deref_mut(),
        is_train: c.is_train,
    };
    (c.op.cpu)(&mut call)?;
    let mut back: Vec<usize> = (c.inputs.len()..c.inputs.len() + c.outputs.len()).collect();
    back.extend(c.op.mutated(c.params));
    if let (true, Some(f)) = (c.is_train, c.op.train_writes) {
        back.extend_from_slice(f(c.params));
    }
    back.sort_unstable();
    back.dedup();
    for i in back {
        let (Some(dev_blob), Some(v)) = (c.inputs.iter().chain(c.outputs.iter()).nth(i), bufs.get_mut(i)) else { continue };
        let n = bytes(dev_blob);
        d.copy_htod(dev_blob.ptr as u64, as_bytes(v, n)).map_err(|e| Error::op(name, e))?;
    }
    Ok(())
}

/// The compute of `op` on a GPU: its CUDA kernel, else the host path when enabled.
pub fn select(op: &'static super::OpDef) -> Option<ComputeFn> {
    op.cuda.or_else(|| enabled().then_some(host_compute as ComputeFn))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_names_real_ops_without_kernels() {
        let v = ops_without_cuda();
        assert!(!v.is_empty());
        for n in &v {
            let op = super::super::lookup(n).unwrap();
            assert!(op.cuda.is_none() && op.host.is_none(), "{n}");
        }
        for n in ["Convolution", "FullyConnected", "elemwise_add", "_copyto"] {
            assert!(!v.contains(&n), "{n} has a CUDA kernel");
        }
    }
}
