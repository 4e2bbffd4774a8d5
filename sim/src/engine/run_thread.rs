//! Where simulations run: on the thread that asks for them.
//!
//! Starting an OS thread for every run cost about a third of a `long-tool` run (thread start and
//! exit, a cold allocator heap, stack and signal-stack unmaps with their TLB shootdowns), and
//! handing runs to one long-lived thread still cost a quarter (two context switches per run, and
//! every step allocated on one core and freed on the other). So a run happens on the calling
//! thread, its panic caught there. A caller already inside a madsim runtime gets an error: a second
//! runtime cannot start there, and madsim forbids spawning an OS thread from a simulation.
//!
//! Why a reused thread gives the same bytes as a fresh one. madsim seeds std's `RandomState` from
//! the run's seed only for the first runtime on a thread; later runtimes on that thread get other
//! `HashMap` hash keys. Hash keys change iteration order, and nothing a run records depends on the
//! iteration order of a std hash map:
//! - mcpsim's crates use none (`clippy.toml` forbids `std::collections::HashMap`/`HashSet`);
//! - madsim 0.2 iterates its own maps only where order cannot show: registering a node with each
//!   simulator plugin, finding a node by its (unique) name, counting tasks, and closing a killed
//!   node's sockets, of which only the listener does anything when dropped (one per node here).
//!
//! madsim's other per-thread state (the current runtime and task) is set by guards that restore
//! it when dropped, unwinding included, so a run that panicked leaves the thread as it found it.
//!
//! `tests/determinism.rs` holds this to account: it runs seeds of every scenario family on fresh
//! threads and on one thread that ran other seeds (and a panicking run) before, and compares the
//! traces byte for byte.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a run's panic carried.
pub type Panic = Box<dyn Any + Send>;

/// Runs `simulation` on the calling thread and catches its panic. Err: the caller is inside a
/// madsim runtime.
pub fn on_calling_thread<T: Send + 'static>(
    simulation: impl FnOnce() -> T + Send + 'static,
) -> Result<Result<T, Panic>, std::io::Error> {
    if madsim::runtime::Handle::try_current().is_ok() {
        return Err(std::io::Error::other("a simulation cannot start inside another madsim runtime"));
    }
    Ok(catch_unwind(AssertUnwindSafe(simulation)))
}

/// Runs `simulation` on a brand-new OS thread, the way every run used to happen: what the
/// determinism tests compare calling-thread runs against.
pub(crate) fn on_fresh_thread<T: Send + 'static>(
    simulation: impl FnOnce() -> T + Send + 'static,
) -> Result<Result<T, Panic>, std::io::Error> {
    Ok(std::thread::Builder::new().name("mcpsim-fresh".to_string()).spawn(simulation)?.join())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread::ThreadId;

    fn thread_id() -> ThreadId {
        std::thread::current().id()
    }

    #[test]
    fn a_run_happens_on_the_calling_thread_and_its_panic_comes_back() {
        assert_eq!(on_calling_thread(thread_id).unwrap().unwrap(), thread_id());
        let panic = on_calling_thread(|| -> u8 { panic!("boom") }).unwrap().unwrap_err();
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"boom"));
    }

    #[test]
    fn inside_a_madsim_runtime_a_run_is_refused_not_nested() {
        let refused = madsim::runtime::Runtime::new().block_on(async { on_calling_thread(thread_id).is_err() });
        assert!(refused);
    }

    #[test]
    fn a_fresh_thread_is_new_every_time() {
        let a = on_fresh_thread(thread_id).unwrap().unwrap();
        let b = on_fresh_thread(thread_id).unwrap().unwrap();
        assert!(a != b && a != thread_id());
    }
}
