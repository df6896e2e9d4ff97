//! Devices. `cpu(i)` are distinct logical devices that share host memory (and its
//! pool); `gpu(i)` are CUDA devices, usable only where the CUDA driver is present.

use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum DeviceType {
    Cpu = 1,
    Gpu = 2,
    CpuPinned = 3,
    CpuShared = 5,
}

impl DeviceType {
    pub fn from_i32(v: i32) -> Option<Self> {
        Some(match v {
            1 => DeviceType::Cpu,
            2 => DeviceType::Gpu,
            3 => DeviceType::CpuPinned,
            5 => DeviceType::CpuShared,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            DeviceType::Cpu => "cpu",
            DeviceType::Gpu => "gpu",
            DeviceType::CpuPinned => "cpu_pinned",
            DeviceType::CpuShared => "cpu_shared",
        }
    }
}

/// A device: type and id, printed as MXNet prints it (`cpu(0)`, `gpu(1)`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Context {
    pub dev_type: DeviceType,
    pub dev_id: i32,
}

impl Context {
    pub const fn cpu(id: i32) -> Self {
        Context { dev_type: DeviceType::Cpu, dev_id: id }
    }
    pub const fn gpu(id: i32) -> Self {
        Context { dev_type: DeviceType::Gpu, dev_id: id }
    }
    /// True for every host-memory device (cpu, cpu_pinned, cpu_shared).
    pub fn is_host(&self) -> bool {
        self.dev_type != DeviceType::Gpu
    }
}

impl Default for Context {
    fn default() -> Self {
        Context::cpu(0)
    }
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.dev_type.name(), self.dev_id)
    }
}
