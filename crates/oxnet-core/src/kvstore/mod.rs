//! The key-value store (MXNet's KVStore), `local` and `device` kinds.
//!
//! Keys are ints or strings (one kind per store). Each key holds a stored array.
//! `push` sums the arrays given for a key (an engine operation over the pooled
//! memory, parallel inside) and either replaces the stored value with the sum or
//! hands it to an update: a registry op (the fused optimizer updates, run here with
//! `out=stored`) or, through [`KVStore::reduce`], the caller's own updater. `pull`
//! copies the stored value into every given array in one engine operation. Every
//! operation returns at once; the engine orders them by the vars they touch.
//!
//! The key table is papaya's lock-free hash map: threads pushing and pulling
//! different keys share no lock (each key's own state sits behind its entry).
//! Every check (unknown key, duplicate init, shape or dtype mismatch, mixed key
//! kinds) happens before anything is pushed, so a bad call changes nothing.
//!
//! This module owns the table and the aggregation; it never parses optimizer
//! parameters (callers hand it a parsed op call) and knows nothing of Python.

mod kernels;

use crate::context::Context;
use crate::engine;
use crate::error::{Error, Result};
use crate::ndarray::{Chunk, NDArray};
use crate::op::{self, Blob, OpDef, Params, Value};
use crate::shape::{fmt_shape, Shape};
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

/// A key: an int or a string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    Int(i64),
    Str(Box<str>),
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Int(i) => write!(f, "{i}"),
            Key::Str(s) => write!(f, "'{s}'"),
        }
    }
}

impl Key {
    fn kind(&self) -> u8 {
        match self {
            Key::Int(_) => 1,
            Key::Str(_) => 2,
        }
    }
}

/// The store's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Local,
    Device,
    /// `device` with the sums and broadcasts between GPUs done by NCCL.
    Nccl,
}

/// One key's state.
struct Entry {
    stored: NDArray,
    /// The buffer the pushed arrays are summed into for a caller's updater or a
    /// compressed push with an update (reused).
    merge: OnceLock<NDArray>,
    /// A two-phase update's intermediate (LAMB's direction `g`), reused.
    scratch: OnceLock<NDArray>,
    /// 2-bit compression residuals, one per source position.
    residuals: Mutex<Vec<NDArray>>,
}

/// An update applied to the stored value after the sum: `op(stored, merged,
/// states...)` written back into `stored`. With `second` (LAMB), the first op's
/// result is the direction `g` and `second(stored, g, norm(stored), norm(g))` is
/// written back into `stored`.
pub struct Update {
    pub op: &'static OpDef,
    pub params: Params,
    pub states: Vec<NDArray>,
    pub second: Option<(&'static OpDef, Params)>,
}

/// MXNet's kvstore names that belong to other parts of oxnet.
const NOT_BUILT: &[&str] =
    &["dist_sync", "dist_async", "dist_device_sync", "dist_sync_device", "dist_async_device", "dist", "horovod", "byteps"];

pub struct KVStore {
    kind: Kind,
    table: papaya::HashMap<Key, Arc<Entry>>,
    /// 0: no key yet, 1: int keys, 2: str keys.
    key_kind: AtomicU8,
    /// 2-bit compression threshold as f32 bits; 0 when off.
    threshold: AtomicU32,
}

fn kind_name(k: u8) -> &'static str {
    if k == 1 {
        "int"
    } else {
        "str"
    }
}

impl KVStore {
    /// `local` or `device`; the distributed and NCCL kinds are refused with an error
    /// saying they are not built yet.
    pub fn create(name: &str) -> Result<KVStore> {
        let kind = match name {
            "local" | "local_update_cpu" | "local_allreduce_cpu" => Kind::Local,
            "device" | "local_allreduce_device" => Kind::Device,
            "nccl" => Kind::Nccl,
            n if NOT_BUILT.contains(&n) || n.starts_with("dist") => {
                return Err(Error::new(format!(
                    "kvstore type '{n}' is not built yet in oxnet (it comes with its own issue); use 'local' or 'device'"
                )))
            }
            n => return Err(Error::new(format!("unknown kvstore type '{n}'; oxnet provides 'local' and 'device'"))),
        };
        Ok(KVStore { kind, table: papaya::HashMap::new(), key_kind: AtomicU8::new(0), threshold: AtomicU32::new(0) })
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// MXNet's type string.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Local => "local",
            Kind::Device => "device",
            Kind::Nccl => "nccl",
        }
    }

    /// Number of keys initialised.
    pub fn len(&self) -> usize {
        self.table.len()
    }
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Turns on MXNet's 2-bit gradient compression (`device` stores only).
    pub fn set_gradient_compression(&self, kind: &str, threshold: f64) -> Result<()> {
        if self.kind == Kind::Local {
            return Err(Error::new("Gradient compression is not supported for this type of kvstore"));
        }
        match kind {
            "2bit" => {}
            "none" => {
                self.threshold.store(0, Ordering::Release);
                return Ok(());
            }
            other => return Err(Error::new(format!("Unknown type for gradient compression {other}"))),
        }
        if threshold.is_nan() || threshold <= 0.0 || !threshold.is_finite() {
            return Err(Error::new(format!("gradient compression threshold must be a positive number, got {threshold}")));
        }
        self.threshold.store((threshold as f32).to_bits(), Ordering::Release);
        Ok(())
    }

    /// The compression threshold, if compression is on.
    pub fn compression(&self) -> Option<f32> {
        match self.threshold.load(Ordering::Acquire) {
            0 => None,
            b => Some(f32::from_bits(b)),
        }
    }

    fn check_kind(&self, key: &Key) -> Result<()> {
        let k = key.kind();
        match self.key_kind.compare_exchange(0, k, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Ok(()),
            Err(cur) if cur == k => Ok(()),
            Err(cur) => Err(Error::new(format!(
                "Mixed key types are not allowed: this kvstore holds {} keys, got the {} key {key}",
                kind_name(cur),
                kind_name(k)
            ))),
        }
    }

    fn entry(&self, key: &Key, what: &str) -> Result<Arc<Entry>> {
        if let Some(k) = match self.key_kind.load(Ordering::Acquire) {
            0 => None,
            k => Some(k),
        } {
            if k != key.kind() {
                return Err(Error::new(format!(
                    "Mixed key types are not allowed: this kvstore holds {} keys, got the {} key {key}",
                    kind_name(k),
                    kind_name(key.kind())
                )));
            }
        }
        self.table.pin().get(key).cloned().ok_or_else(|| Error::new(format!("{what}: key {key} has not been inited")))
    }

    /// The stored array of `key` (shares memory with the store).
    pub fn stored(&self, key: &Key) -> Result<NDArray> {
        Ok(self.entry(key, "kvstore")?.stored.clone())
    }

    /// Initialises keys with copies of the values. A key given twice, or already
    /// initialised, is an error and nothing is initialised.
    pub fn init(&self, items: &[(Key, NDArray)]) -> Result<()> {
        let pinned = self.table.pin();
        for (i, (k, _)) in items.iter().enumerate() {
            self.check_kind(k)?;
            if pinned.contains_key(k) || items[..i].iter().any(|(k2, _)| k2 == k) {
                return Err(Error::new(format!(
                    "init: duplicate init of key {k}. Please double check if you called kv.init or kv.broadcast with this key multiple times"
                )));
            }
        }
        for (k, v) in items {
            let ctx = if v.ctx().is_host() { Context::default() } else { v.ctx() };
            let stored = NDArray::empty(v.shape(), ctx, v.dtype())?;
            push_sum(&stored, std::slice::from_ref(v), None)?;
            let e = Arc::new(Entry { stored, merge: OnceLock::new(), scratch: OnceLock::new(), residuals: Mutex::new(Vec::new()) });
            if pinned.try_insert(k.clone(), e).is_err() {
                return Err(Error::new(format!("init: duplicate init of key {k} (initialised by another thread meanwhile)")));
            }
        }
        Ok(())
    }

    fn check_values(&self, what: &str, key: &Key, e: &Entry, values: &[NDArray]) -> Result<()> {
        if values.is_empty() {
            return Err(Error::new(format!("{what}: no arrays given for key {key}")));
        }
        let s = &e.stored;
        for (i, v) in values.iter().enumerate() {
            if v.shape() != s.shape() {
                return Err(Error::new(format!(
                    "{what}: shape mismatch for key {key}: array {i} has shape {} but the stored value has shape {}",
                    fmt_shape(v.shape()),
                    fmt_shape(s.shape())
                )));
            }
            if v.dtype() != s.dtype() {
                return Err(Error::new(format!(
                    "{what}: dtype mismatch for key {key}: array {i} is {} but the stored value is {}",
                    v.dtype().name(),
                    s.dtype().name()
                )));
            }
        }
        Ok(())
    }

    /// Sums the values of every key and replaces the stored value with the sum, or
    /// applies `updates[i]` (when given) to the stored value of key `i`. Every key and
    /// value is checked before anything runs.
    pub fn push(&self, items: &[(Key, Vec<NDArray>)], updates: Option<Vec<Update>>) -> Result<()> {
        let mut entries = Vec::with_capacity(items.len());
        for (k, vals) in items {
            let e = self.entry(k, "push")?;
            self.check_values("push", k, &e, vals)?;
            entries.push(e);
        }
        if let Some(u) = &updates {
            if u.len() != items.len() {
                return Err(Error::new(format!("push: {} updates for {} keys", u.len(), items.len())));
            }
            for (((k, _), e), u) in items.iter().zip(&entries).zip(u) {
                check_update(k, &e.stored, u)?;
            }
        }
        let mut updates = updates.map(|u| u.into_iter());
        for ((_, vals), e) in items.iter().zip(&entries) {
            match updates.as_mut().and_then(|u| u.next()) {
                None => {
                    let res = self.residuals(e, vals.len())?;
                    if self.nccl_ok(&e.stored, vals) {
                        nccl_sum(&e.stored, vals)?;
                    } else {
                        push_sum(&e.stored, vals, self.compression().map(|t| (t, &res[..])))?;
                    }
                }
                Some(u) => self.push_update(e, vals, u)?,
            }
        }
        Ok(())
    }

    /// Runs `u` on the stored value of `e` with the sum of `vals` as its gradient.
    /// Without compression the sum is fused into the update (one pass, no merged
    /// array); with it the merged array is summed first.
    fn push_update(&self, e: &Entry, vals: &[NDArray], u: Update) -> Result<()> {
        let stored = &e.stored;
        let fused = self.compression().is_none() && op::blockwise_update(u.op.name);
        let out = match &u.second {
            None => stored.clone(),
            Some(_) => scratch(e)?,
        };
        if fused && self.nccl_ok(stored, vals) {
            let grad = self.merged(e, vals)?;
            push_fused(u.op, u.params, stored, &out, std::slice::from_ref(&grad), &u.states)?;
        } else if fused {
            push_fused(u.op, u.params, stored, &out, vals, &u.states)?;
        } else {
            let grad = self.merged(e, vals)?;
            let mut ins = Vec::with_capacity(2 + u.states.len());
            ins.push(stored.clone());
            ins.push(grad);
            ins.extend(u.states);
            op::invoke(u.op, &ins, u.params, Some(std::slice::from_ref(&out)), None)?;
        }
        if let Some((op2, p2)) = u.second {
            let norm = op::lookup("norm")?;
            let r1 = op::invoke(norm, std::slice::from_ref(stored), norm.parse(Vec::new())?, None, None)?.remove(0);
            let r2 = op::invoke(norm, std::slice::from_ref(&out), norm.parse(Vec::new())?, None, None)?.remove(0);
            op::invoke(op2, &[stored.clone(), out, r1, r2], p2, Some(std::slice::from_ref(stored)), None)?;
        }
        Ok(())
    }

    /// Sums the values of `key` into the key's merge buffer and returns it (for an
    /// updater run by the caller: `updater(key, merged, stored)`).
    pub fn reduce(&self, key: &Key, values: &[NDArray]) -> Result<NDArray> {
        let e = self.entry(key, "push")?;
        self.check_values("push", key, &e, values)?;
        self.merged(&e, values)
    }

    fn residuals(&self, e: &Entry, n: usize) -> Result<Vec<NDArray>> {
        if self.compression().is_none() {
            return Ok(Vec::new());
        }
        if e.stored.dtype() != crate::DType::F32 {
            return Err(Error::new(format!("gradient compression needs float32 arrays, the key holds {}", e.stored.dtype().name())));
        }
        let mut r = e.residuals.lock();
        while r.len() < n {
            let z = NDArray::empty(e.stored.shape(), e.stored.ctx(), e.stored.dtype())?;
            push_fill_zero(&z)?;
            r.push(z);
        }
        Ok(r[..n].to_vec())
    }

    /// The sum of `values` (the value itself when there is one and no compression).
    fn merged(&self, e: &Entry, values: &[NDArray]) -> Result<NDArray> {
        let comp = self.compression();
        if values.len() == 1 && comp.is_none() && values[0].ctx() == e.stored.ctx() {
            return Ok(values[0].clone());
        }
        let m = match e.merge.get() {
            Some(m) => m.clone(),
            None => {
                let m = NDArray::empty(e.stored.shape(), e.stored.ctx(), e.stored.dtype())?;
                e.merge.get_or_init(|| m).clone()
            }
        };
        if self.nccl_ok(&m, values) {
            nccl_sum(&m, values)?;
            return Ok(m);
        }
        let res = self.residuals(e, values.len())?;
        push_sum(&m, values, comp.map(|t| (t, &res[..])))?;
        Ok(m)
    }

    /// Whether a sum into (or a copy from) `target` goes through NCCL: an `nccl`
    /// store, no compression, every array on a GPU.
    fn nccl_ok(&self, target: &NDArray, arrays: &[NDArray]) -> bool {
        self.kind == Kind::Nccl && self.compression().is_none() && !target.ctx().is_host() && arrays.iter().all(|a| !a.ctx().is_host())
    }

    /// Copies the stored value of each key into every array given for it.
    pub fn pull(&self, items: &[(Key, Vec<NDArray>)]) -> Result<()> {
        let mut entries = Vec::with_capacity(items.len());
        for (k, outs) in items {
            let e = self.entry(k, "pull")?;
            self.check_values("pull", k, &e, outs)?;
            for o in outs {
                if o.overlaps(&e.stored) {
                    return Err(Error::new(format!("pull: an output array of key {k} is the stored value itself")));
                }
            }
            entries.push(e);
        }
        for ((_, outs), e) in items.iter().zip(&entries) {
            if self.nccl_ok(&e.stored, outs) {
                nccl_broadcast(&e.stored, outs)?;
            } else {
                push_broadcast(&e.stored, outs)?;
            }
        }
        Ok(())
    }
}

fn blob(a: &NDArray) -> Blob {
    Blob { ptr: a.data_ptr(), shape: Shape::from_slice(a.shape()), dtype: a.dtype() }
}

/// Below this many bytes touched, a ready operation runs on the calling thread.
const INLINE_BYTES: usize = 1 << 17;

/// LAMB's direction buffer of a key (made once, reused by every push).
fn scratch(e: &Entry) -> Result<NDArray> {
    if let Some(g) = e.scratch.get() {
        return Ok(g.clone());
    }
    let g = NDArray::empty(e.stored.shape(), e.stored.ctx(), e.stored.dtype())?;
    Ok(e.scratch.get_or_init(|| g).clone())
}

/// Checks an update against the stored value of `key` before anything is pushed:
/// the op's arity, its states' shapes and dtypes (through the op's inference) and
/// that the result has the stored value's shape and dtype.
fn check_update(key: &Key, stored: &NDArray, u: &Update) -> Result<()> {
    let want = u.op.num_inputs(&u.params);
    if want != 2 + u.states.len() {
        return Err(Error::op(
            u.op.name,
            format!("push: key {key}: the update takes {want} inputs, got the weight, the gradient and {} state(s)", u.states.len()),
        ));
    }
    let mut shapes: SmallVec<[&[usize]; 6]> = SmallVec::new();
    let mut dtypes: SmallVec<[crate::DType; 6]> = SmallVec::new();
    shapes.push(stored.shape());
    shapes.push(stored.shape());
    dtypes.push(stored.dtype());
    dtypes.push(stored.dtype());
    for st in &u.states {
        shapes.push(st.shape());
        dtypes.push(st.dtype());
        if !st.ctx().is_host() && st.ctx() != stored.ctx() {
            return Err(Error::op(
                u.op.name,
                format!("push: key {key}: a state is on {} but the stored value is on {}", st.ctx(), stored.ctx()),
            ));
        }
        if st.overlaps(stored) {
            return Err(Error::op(u.op.name, format!("push: key {key}: a state is the stored value itself")));
        }
    }
    let outs = u.op.infer(&u.params, &shapes, &dtypes).map_err(|e| {
        let prefix = format!("Error in operator {}: ", u.op.name);
        Error::op(u.op.name, format!("push: key {key}: {}", e.message().strip_prefix(&prefix).unwrap_or(e.message())))
    })?;
    match outs.first() {
        Some((s, d)) if &s[..] == stored.shape() && *d == stored.dtype() => {}
        _ => return Err(Error::op(u.op.name, format!("push: key {key}: the update does not give an array like the stored value"))),
    }
    if let Some((op2, p2)) = &u.second {
        if op2.num_inputs(p2) != 4 {
            return Err(Error::op(op2.name, format!("push: key {key}: a second update phase takes (weight, g, r1, r2)")));
        }
    }
    Ok(())
}

/// Pushes `out = op(weight, sum(srcs), states...)`, the sum fused into the update
/// (see [`kernels::fused_update`]). `out` is `weight` or a buffer of its shape.
fn push_fused(op: &'static OpDef, params: Params, weight: &NDArray, out: &NDArray, srcs: &[NDArray], states: &[NDArray]) -> Result<()> {
    let host = |a: &NDArray| a.ctx().is_host();
    for s in srcs {
        if s.overlaps(weight) || s.overlaps(out) || states.iter().any(|st| st.overlaps(s)) {
            return Err(Error::op(op.name, "kvstore: a pushed array is the store's own buffer or an optimizer state"));
        }
    }
    if !host(weight) || !srcs.iter().all(host) || !states.iter().all(host) {
        return device_update(op, params, weight, out, srcs, states);
    }
    let same = Arc::ptr_eq(weight.var(), out.var());
    let mut reads: SmallVec<[Arc<engine::Var>; 6]> = srcs.iter().map(|a| a.var().clone()).collect();
    if !same {
        reads.push(weight.var().clone());
    }
    let mut writes: SmallVec<[Arc<engine::Var>; 4]> = SmallVec::new();
    writes.push(out.var().clone());
    let mut keep: SmallVec<[Arc<Chunk>; 8]> = srcs.iter().map(|a| a.chunk().clone()).collect();
    keep.push(weight.chunk().clone());
    keep.push(out.chunk().clone());
    for st in states {
        writes.push(st.var().clone());
        keep.push(st.chunk().clone());
    }
    let src_b: SmallVec<[Blob; 4]> = srcs.iter().map(blob).collect();
    let st_b: SmallVec<[Blob; 4]> = states.iter().map(blob).collect();
    let (w_b, o_b) = (blob(weight), blob(out));
    let ctx = weight.ctx();
    let inline_ok = weight.nbytes() * (srcs.len() + 2 + states.len()) <= INLINE_BYTES;
    engine::push(
        move || {
            let _keep = keep;
            kernels::fused_update(op, &params, ctx, &w_b, &o_b, &src_b, &st_b)
        },
        &reads,
        &writes,
        inline_ok,
    )
}

/// `a` on `ctx`: itself, or a copy made there.
fn on_ctx(a: &NDArray, ctx: Context) -> Result<NDArray> {
    if a.ctx() == ctx {
        return Ok(a.clone());
    }
    let t = NDArray::empty(a.shape(), ctx, a.dtype())?;
    op::invoke(op::lookup("_copyto")?, std::slice::from_ref(a), Params::default(), Some(std::slice::from_ref(&t)), None)?;
    Ok(t)
}

/// `dst = sum(srcs)` where some array lives on a GPU: the sources are copied to
/// `dst`'s device and summed there by registry ops (`add_n`), so the sum runs on
/// the device holding the store's buffer.
fn device_sum(dst: &NDArray, srcs: &[NDArray]) -> Result<()> {
    let local: Vec<NDArray> = srcs.iter().map(|s| on_ctx(s, dst.ctx())).collect::<Result<_>>()?;
    if local.len() == 1 {
        return op::invoke(op::lookup("_copyto")?, &local, Params::default(), Some(std::slice::from_ref(dst)), None).map(|_| ());
    }
    let add = op::lookup("add_n")?;
    let params = add.parse(vec![("num_args".into(), Value::Int(local.len() as i64))])?;
    op::invoke(add, &local, params, Some(std::slice::from_ref(dst)), None).map(|_| ())
}

/// `out = op(weight, sum(srcs), states...)` where some array lives on a GPU: the sum
/// on the weight's device, then the update op there (its CUDA kernel).
fn device_update(op: &'static OpDef, params: Params, weight: &NDArray, out: &NDArray, srcs: &[NDArray], states: &[NDArray]) -> Result<()> {
    let grad = NDArray::empty(weight.shape(), weight.ctx(), weight.dtype())?;
    device_sum(&grad, srcs)?;
    let local: Vec<NDArray> = states.iter().map(|s| on_ctx(s, weight.ctx())).collect::<Result<_>>()?;
    let mut inputs = vec![weight.clone(), grad];
    inputs.extend(local.iter().cloned());
    op::invoke(op, &inputs, params, Some(std::slice::from_ref(out)), None)?;
    // States kept on another device than the weight get their updated values back.
    let copy = op::lookup("_copyto")?;
    for (orig, l) in states.iter().zip(&local) {
        if orig.ctx() != l.ctx() {
            op::invoke(copy, std::slice::from_ref(l), Params::default(), Some(std::slice::from_ref(orig)), None)?;
        }
    }
    Ok(())
}

/// One buffer per GPU of this process for an NCCL collective: for each device, the
/// sum of `arrays` there (the array itself when there is one), or `fill` made there.
fn per_device(arrays: &[NDArray], like: &NDArray, zeros: bool) -> Result<Vec<NDArray>> {
    let n = crate::storage::cuda::num_gpus();
    let mut parts = Vec::with_capacity(n.max(0) as usize);
    for dev in 0..n {
        let ctx = Context::gpu(dev);
        let mine: Vec<NDArray> = arrays.iter().filter(|a| a.ctx() == ctx).cloned().collect();
        let p = match mine.len() {
            1 => mine[0].clone(),
            _ => {
                let t = NDArray::empty(like.shape(), ctx, like.dtype())?;
                if mine.is_empty() {
                    if zeros {
                        push_fill_zero(&t)?;
                    }
                } else {
                    device_sum(&t, &mine)?;
                }
                t
            }
        };
        parts.push(p);
    }
    Ok(parts)
}

/// `dst = sum(srcs)`, every array on a GPU: each device's sources summed there,
/// then one NCCL reduce onto `dst`'s device (every GPU takes part; those without
/// a source give zeros).
fn nccl_sum(dst: &NDArray, srcs: &[NDArray]) -> Result<()> {
    let parts = per_device(srcs, dst, true)?;
    let reads: SmallVec<[Arc<engine::Var>; 4]> =
        parts.iter().filter(|p| !Arc::ptr_eq(p.var(), dst.var())).map(|a| a.var().clone()).collect();
    let mut keep: Vec<Arc<Chunk>> = parts.iter().map(|a| a.chunk().clone()).collect();
    keep.push(dst.chunk().clone());
    let ps: Vec<crate::storage::cuda::nccl::Part> = parts.iter().map(|a| (a.ctx().dev_id, a.data_ptr() as u64)).collect();
    let (root, d, n, dt) = (dst.ctx().dev_id, dst.data_ptr() as u64, dst.size(), dst.dtype());
    engine::push(
        move || {
            let _keep = keep;
            crate::storage::cuda::nccl::reduce_sum(root, d, &ps, n, dt)
        },
        &reads,
        std::slice::from_ref(dst.var()),
        false,
    )
}

/// Copies `src` (on a GPU) into every array of `dsts` (on GPUs) by one NCCL
/// broadcast per round (each GPU receives into at most one array per round).
fn nccl_broadcast(src: &NDArray, dsts: &[NDArray]) -> Result<()> {
    let mut rest: Vec<NDArray> = dsts.to_vec();
    while !rest.is_empty() {
        // This round: the first remaining output of each device; scratch elsewhere.
        let mut round: Vec<NDArray> = Vec::new();
        let mut later: Vec<NDArray> = Vec::new();
        for d in rest {
            if round.iter().any(|r| r.ctx() == d.ctx()) {
                later.push(d);
            } else {
                round.push(d);
            }
        }
        let parts = per_device(&round, src, false)?;
        let mut writes: SmallVec<[Arc<engine::Var>; 4]> = parts.iter().map(|a| a.var().clone()).collect();
        writes.retain(|w| !Arc::ptr_eq(w, src.var()));
        let mut keep: Vec<Arc<Chunk>> = parts.iter().map(|a| a.chunk().clone()).collect();
        keep.push(src.chunk().clone());
        let ps: Vec<crate::storage::cuda::nccl::Part> = parts.iter().map(|a| (a.ctx().dev_id, a.data_ptr() as u64)).collect();
        let (root, sp, n, dt) = (src.ctx().dev_id, src.data_ptr() as u64, src.size(), src.dtype());
        engine::push(
            move || {
                let _keep = keep;
                crate::storage::cuda::nccl::broadcast(root, sp, &ps, n, dt)
            },
            std::slice::from_ref(src.var()),
            &writes,
            false,
        )?;
        rest = later;
    }
    Ok(())
}

/// Pushes `dst = sum(srcs)` (through 2-bit compression when given).
fn push_sum(dst: &NDArray, srcs: &[NDArray], comp: Option<(f32, &[NDArray])>) -> Result<()> {
    for s in srcs {
        if s.overlaps(dst) {
            return Err(Error::new("kvstore: a pushed array is the store's own buffer"));
        }
    }
    if !dst.ctx().is_host() || srcs.iter().any(|s| !s.ctx().is_host()) {
        if comp.is_some() {
            let c = if dst.ctx().is_host() { srcs.iter().map(|s| s.ctx()).find(|c| !c.is_host()).unwrap_or(dst.ctx()) } else { dst.ctx() };
            return Err(Error::new(format!("kvstore: 2-bit gradient compression of arrays on {c} is not supported")));
        }
        return device_sum(dst, srcs);
    }
    let reads: SmallVec<[Arc<engine::Var>; 4]> = srcs.iter().map(|a| a.var().clone()).collect();
    let mut writes: SmallVec<[Arc<engine::Var>; 4]> = SmallVec::new();
    writes.push(dst.var().clone());
    let mut keep: SmallVec<[Arc<Chunk>; 6]> = srcs.iter().map(|a| a.chunk().clone()).collect();
    keep.push(dst.chunk().clone());
    let src_b: SmallVec<[Blob; 4]> = srcs.iter().map(blob).collect();
    let dst_b = blob(dst);
    let inline_ok = dst.nbytes() * (srcs.len() + 1) <= INLINE_BYTES;
    match comp {
        None => engine::push(
            move || {
                let _keep = keep;
                kernels::sum(&dst_b, &src_b)
            },
            &reads,
            &writes,
            inline_ok,
        ),
        Some((t, res)) => {
            for r in res {
                writes.push(r.var().clone());
                keep.push(r.chunk().clone());
            }
            let res_b: SmallVec<[Blob; 4]> = res.iter().map(blob).collect();
            engine::push(
                move || {
                    let _keep = keep;
                    kernels::sum_2bit(&dst_b, &src_b, &res_b, t);
                    Ok(())
                },
                &reads,
                &writes,
                inline_ok,
            )
        }
    }
}

fn push_fill_zero(a: &NDArray) -> Result<()> {
    if !a.ctx().is_host() {
        let op = op::lookup("_zeros")?;
        let shape = Value::Tuple(a.shape().iter().map(|&d| d as i64).collect());
        let params = op.parse(vec![("shape".into(), shape), ("dtype".into(), Value::Str(a.dtype().name().into()))])?;
        op::invoke(op, &[], params, Some(std::slice::from_ref(a)), Some(a.ctx()))?;
        return Ok(());
    }
    let b = blob(a);
    let keep = a.chunk().clone();
    let n = a.nbytes();
    engine::push(
        move || {
            let _keep = keep;
            // SAFETY: the engine holds the array's var for writing.
            unsafe { std::ptr::write_bytes(b.ptr_as::<u8>(), 0, n) };
            Ok(())
        },
        &[],
        std::slice::from_ref(a.var()),
        n <= INLINE_BYTES,
    )
}

/// Pushes the copy of `src` into every array of `dsts`.
fn push_broadcast(src: &NDArray, dsts: &[NDArray]) -> Result<()> {
    if !src.ctx().is_host() || dsts.iter().any(|d| !d.ctx().is_host()) {
        let copy = op::lookup("_copyto")?;
        for d in dsts {
            op::invoke(copy, std::slice::from_ref(src), Params::default(), Some(std::slice::from_ref(d)), None)?;
        }
        return Ok(());
    }
    let mut writes: SmallVec<[Arc<engine::Var>; 4]> = SmallVec::new();
    let mut keep: SmallVec<[Arc<Chunk>; 6]> = SmallVec::new();
    let mut dst_b: SmallVec<[Blob; 4]> = SmallVec::new();
    for d in dsts {
        writes.push(d.var().clone());
        keep.push(d.chunk().clone());
        dst_b.push(blob(d));
    }
    keep.push(src.chunk().clone());
    let src_b = blob(src);
    let inline_ok = src.nbytes() * (dsts.len() + 1) <= INLINE_BYTES;
    engine::push(
        move || {
            let _keep = keep;
            kernels::broadcast(&src_b, &dst_b);
            Ok(())
        },
        std::slice::from_ref(src.var()),
        &writes,
        inline_ok,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Value;

    fn arr(v: &[f32]) -> NDArray {
        NDArray::from_vec(&[v.len()], v, Context::default()).unwrap()
    }

    #[test]
    fn push_sums_and_pull_copies() {
        let kv = KVStore::create("local").unwrap();
        kv.init(&[(Key::Int(3), arr(&[2.0, 2.0]))]).unwrap();
        kv.push(&[(Key::Int(3), vec![arr(&[1.0, 2.0]), arr(&[3.0, 4.0])])], None).unwrap();
        let (a, b) = (arr(&[0.0, 0.0]), arr(&[0.0, 0.0]));
        kv.pull(&[(Key::Int(3), vec![a.clone(), b.clone()])]).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![4.0, 6.0]);
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![4.0, 6.0]);
    }

    #[test]
    fn update_op_runs_in_the_store() {
        let kv = KVStore::create("device").unwrap();
        kv.init(&[(Key::Str("w".into()), arr(&[1.0]))]).unwrap();
        let op = op::lookup("sgd_update").unwrap();
        let params = op.parse(vec![("lr".into(), Value::Float(0.5))]).unwrap();
        kv.push(&[(Key::Str("w".into()), vec![arr(&[1.0]), arr(&[1.0])])], Some(vec![Update { op, params, states: vec![], second: None }]))
            .unwrap();
        assert_eq!(kv.stored(&Key::Str("w".into())).unwrap().to_vec::<f32>().unwrap(), vec![0.0]);
    }

    #[test]
    fn fused_update_reads_every_source_across_blocks() {
        // several 8192-element blocks and a partial one; 1, 3 and 6 sources
        let n = 3 * 8192 + 100;
        for k in [1usize, 3, 6] {
            let kv = KVStore::create("local").unwrap();
            let w0: Vec<f32> = (0..n).map(|j| (j % 13) as f32 * 0.1).collect();
            kv.init(&[(Key::Int(0), NDArray::from_vec(&[n], &w0, Context::default()).unwrap())]).unwrap();
            let srcs: Vec<NDArray> = (0..k)
                .map(|i| NDArray::from_vec(&[n], &(0..n).map(|j| ((j + i) % 5) as f32).collect::<Vec<_>>(), Context::default()).unwrap())
                .collect();
            let mom = NDArray::from_vec(&[n], &vec![0.5f32; n], Context::default()).unwrap();
            let op = op::lookup("sgd_mom_update").unwrap();
            let params = op.parse(vec![("lr".into(), Value::Float(0.5)), ("momentum".into(), Value::Float(0.9))]).unwrap();
            kv.push(&[(Key::Int(0), srcs)], Some(vec![Update { op, params, states: vec![mom.clone()], second: None }])).unwrap();
            let w = kv.stored(&Key::Int(0)).unwrap().to_vec::<f32>().unwrap();
            let m = mom.to_vec::<f32>().unwrap();
            for j in (0..n).step_by(101).chain([n - 1]) {
                let g: f32 = (0..k).map(|i| ((j + i) % 5) as f32).sum();
                let mv = 0.9 * 0.5 - 0.5 * g;
                assert_eq!(m[j], mv, "k={k} j={j}");
                assert_eq!(w[j], w0[j] + mv, "k={k} j={j}");
            }
        }
    }

    #[test]
    fn bad_calls_change_nothing() {
        let kv = KVStore::create("local").unwrap();
        kv.init(&[(Key::Int(1), arr(&[1.0]))]).unwrap();
        let e = kv.init(&[(Key::Int(2), arr(&[1.0])), (Key::Int(1), arr(&[5.0]))]).unwrap_err();
        assert!(e.message().contains("duplicate init of key 1"));
        assert!(kv.stored(&Key::Int(2)).is_err());
        let e = kv.push(&[(Key::Int(1), vec![arr(&[7.0])]), (Key::Int(9), vec![arr(&[1.0])])], None).unwrap_err();
        assert!(e.message().contains("key 9 has not been inited"), "{}", e.message());
        let e = kv.push(&[(Key::Int(1), vec![arr(&[7.0, 1.0])])], None).unwrap_err();
        assert!(e.message().contains("shape mismatch for key 1"));
        let e = kv.pull(&[(Key::Str("x".into()), vec![arr(&[0.0])])]).unwrap_err();
        assert!(e.message().contains("Mixed key types"));
        assert_eq!(kv.stored(&Key::Int(1)).unwrap().to_vec::<f32>().unwrap(), vec![1.0]);
        assert_eq!(KVStore::create("nccl").unwrap().type_name(), "nccl");
        assert!(KVStore::create("dist_sync").err().expect("dist_sync is the MPI store's").message().contains("not built yet"));
        assert!(kv.set_gradient_compression("2bit", 0.5).is_err());
    }
}
