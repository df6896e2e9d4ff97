//! Random generators: one per device, each with an engine var so that random ops
//! on a device run in program order and a seed gives the same numbers every run.
//! Numbers come from a counter-based generator (SplitMix64 of key and index): every
//! op takes a fresh key, and its elements can be drawn in parallel.

use crate::context::Context;
use crate::engine::{self, Var};
use crate::error::Result;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

pub struct Generator {
    seed: u64,
    counter: u64,
}

pub struct DeviceGenerator {
    pub state: Mutex<Generator>,
    pub var: Arc<Var>,
}

#[inline(always)]
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn device_seed(seed: u64, ctx: Context) -> u64 {
    splitmix64(seed ^ splitmix64(((ctx.dev_type as u64) << 32) | ctx.dev_id as u32 as u64))
}

impl Generator {
    /// A fresh key for one op.
    pub fn next_key(&mut self) -> u64 {
        self.counter += 1;
        splitmix64(self.seed ^ splitmix64(self.counter))
    }
}

/// Uniform in [0, 1) from key and index, with 53 random bits.
#[inline(always)]
pub fn uniform01(key: u64, i: u64) -> f64 {
    (splitmix64(key ^ splitmix64(i)) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Raw 64 random bits from key and index.
#[inline(always)]
pub fn bits(key: u64, i: u64) -> u64 {
    splitmix64(key ^ splitmix64(i))
}

static GENS: OnceLock<Mutex<HashMap<Context, Arc<DeviceGenerator>>>> = OnceLock::new();
const DEFAULT_SEED: u64 = 0x005e_ed0f_0ae7;

/// The generator of `ctx`.
pub fn generator(ctx: Context) -> Arc<DeviceGenerator> {
    let mut g = GENS.get_or_init(|| Mutex::new(HashMap::new())).lock();
    g.entry(ctx)
        .or_insert_with(|| {
            Arc::new(DeviceGenerator { state: Mutex::new(Generator { seed: current_seed_for(ctx), counter: 0 }), var: Var::new() })
        })
        .clone()
}

/// Seeds the generator of `ctx` (every device's when `ctx` is None), in engine order
/// after the random ops already pushed.
pub fn seed(seed: u64, ctx: Option<Context>) -> Result<()> {
    let ctxs: Vec<Context> = match ctx {
        Some(c) => vec![c],
        None => {
            let mut v: Vec<Context> = GENS.get_or_init(|| Mutex::new(HashMap::new())).lock().keys().copied().collect();
            if !v.contains(&Context::cpu(0)) {
                v.push(Context::cpu(0));
            }
            v
        }
    };
    for c in ctxs {
        let g = generator(c);
        let g2 = g.clone();
        engine::push(
            Box::new(move || {
                let mut s = g2.state.lock();
                s.seed = device_seed(seed, c);
                s.counter = 0;
                Ok(())
            }),
            &[],
            std::slice::from_ref(&g.var),
            true,
        )?;
    }
    // Devices first used after this call start from the same seed.
    *PENDING_SEED.lock() = Some(seed);
    Ok(())
}

static PENDING_SEED: Mutex<Option<u64>> = Mutex::new(None);

/// Seed a newly created generator gets (the last global seed, if any).
pub fn current_seed_for(ctx: Context) -> u64 {
    device_seed(PENDING_SEED.lock().unwrap_or(DEFAULT_SEED), ctx)
}
