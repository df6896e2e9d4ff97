//! Autograd state: whether ops are being recorded and whether they run in training
//! mode. Both are per thread, as in MXNet (`autograd.record()` on one thread does
//! not record another thread's ops). [`crate::op::invoke`] reads the training flag
//! when it pushes an op and hands it to the compute as `OpCall::is_train`.
//!
//! The tape itself (recording invoked ops and running their registry gradients
//! backward) lives here too.

use std::cell::Cell;

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
    static TRAINING: Cell<bool> = const { Cell::new(false) };
}

/// True while ops on this thread are recorded for backward.
pub fn is_recording() -> bool {
    RECORDING.with(|c| c.get())
}

/// True while ops on this thread run in training mode.
pub fn is_training() -> bool {
    TRAINING.with(|c| c.get())
}

/// Sets the recording flag; returns the previous value.
pub fn set_recording(on: bool) -> bool {
    RECORDING.with(|c| c.replace(on))
}

/// Sets the training flag; returns the previous value.
pub fn set_training(on: bool) -> bool {
    TRAINING.with(|c| c.replace(on))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_per_thread_and_return_previous() {
        assert!(!is_recording());
        assert!(!set_recording(true));
        assert!(!set_training(true));
        assert!(set_training(true));
        assert!(is_recording() && is_training());
        std::thread::spawn(|| assert!(!is_recording() && !is_training())).join().unwrap();
        set_recording(false);
        set_training(false);
    }
}
