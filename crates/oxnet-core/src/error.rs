//! The one error type of the core. Every fallible operation returns [`Result`];
//! the Python glue turns an [`Error`] into `mx.base.MXNetError`. Nothing here panics.

use std::fmt;

/// An oxnet error: a message that names the operator (when there is one) and what
/// was wrong, in the spirit of MXNet's `MXNetError` texts.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    msg: String,
    kind: ErrorKind,
}

/// Which Python exception an error is besides `MXNetError`, where MXNet 1.9.1 raises
/// a built-in type (its C++ errors that start with `IndexError:` become Python's
/// `IndexError`); the Python glue picks the class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ErrorKind {
    #[default]
    General,
    /// An index out of range (`gather_nd`): Python's `IndexError` too.
    Index,
}

impl Error {
    pub fn new(msg: impl Into<String>) -> Self {
        Error { msg: msg.into(), kind: ErrorKind::General }
    }
    /// An error raised while running operator `op`.
    pub fn op(op: &str, msg: impl fmt::Display) -> Self {
        Error { msg: format!("Error in operator {op}: {msg}"), kind: ErrorKind::General }
    }
    /// An index out of range in operator `op` (an `IndexError` in Python).
    pub fn index(op: &str, msg: impl fmt::Display) -> Self {
        Error { kind: ErrorKind::Index, ..Error::op(op, msg) }
    }
    pub fn message(&self) -> &str {
        &self.msg
    }
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({:?})", self.msg)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// `bail!("...")` returns an [`Error`] built with `format!`.
#[macro_export]
macro_rules! bail {
    ($($t:tt)*) => { return Err($crate::error::Error::new(format!($($t)*))) };
}

/// `ensure!(cond, "...")` returns an error when `cond` is false.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($t:tt)*) => { if !$cond { $crate::bail!($($t)*) } };
}
