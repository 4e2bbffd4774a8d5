//! One run: the model's machines as madsim actors on the project's own transport (`wire`), the fault injector,
//! the step recorder, and the runner that seeds, drives and judges a run.
//!
//! Depends on [`crate::scenario`] (what to run) and on `mcpsim-model`; nothing above it.

pub(crate) mod actors;
pub(crate) mod addr;
pub mod logging;
pub(crate) mod net;
pub(crate) mod pool;
pub(crate) mod recorder;
pub mod run_thread;
pub mod runner;
pub(crate) mod wire;
