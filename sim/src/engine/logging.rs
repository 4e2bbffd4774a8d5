//! Diagnostic logs: `tracing` lines on stderr, filtered by `RUST_LOG` (default: none).
//!
//! Each line starts with the *simulated* time since the run began (inside madsim,
//! `std::time::Instant` reads the simulated clock) and carries madsim's node span, which names the
//! actor (`node{name=client}`, `lb`, `server`, a shared store's `store`; the runner and fault
//! injector are `madsim-main`).
//! madsim numbers tasks with a process-wide counter, so log text differs between runs of one
//! seed: compare traces, never logs.

use std::cell::Cell;
#[cfg(feature = "cli")]
use tracing_subscriber::fmt::format::Writer;
#[cfg(feature = "cli")]
use tracing_subscriber::fmt::time::FormatTime;
#[cfg(feature = "cli")]
use tracing_subscriber::EnvFilter;

thread_local! {
    /// When the run on this thread began, on the simulated clock.
    static RUN_START: Cell<Option<std::time::Instant>> = const { Cell::new(None) };
}

/// Marks the start of the run on this thread. Call from inside the simulation.
pub(crate) fn mark_run_start() {
    RUN_START.with(|start| start.set(Some(std::time::Instant::now())));
}

/// Marks the end of the run on this thread: lines logged between runs carry no time.
pub(crate) fn mark_run_end() {
    RUN_START.with(|start| start.set(None));
}

#[cfg(feature = "cli")]
/// Prints simulated seconds since the run began, or `-` outside a run.
struct SimulatedTime;

#[cfg(feature = "cli")]
impl FormatTime for SimulatedTime {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        match RUN_START.with(Cell::get) {
            Some(start) => {
                let us = start.elapsed().as_micros();
                write!(w, "{:>4}.{:06}s", us / 1_000_000, us % 1_000_000)
            }
            None => w.write_str("-"),
        }
    }
}

#[cfg(feature = "cli")]
/// Silences madsim's warning that it could not seed std's hasher.
const MADSIM_HASHER_WARNING: &str = "madsim::sim::rand=error";

#[cfg(feature = "cli")]
/// Installs the global subscriber once, when `RUST_LOG` asks for logs; later calls (and a
/// subscriber already set by someone else) are left alone.
///
/// Without `RUST_LOG` no subscriber is installed at all: madsim wraps every task and node in
/// error-level spans, and a subscriber, even one that prints nothing, pays for entering and
/// leaving each of them — about a tenth of a run's time. mcpsim's own logs are info and debug.
pub fn init_logging() {
    if std::env::var_os("RUST_LOG").is_none_or(|v| v.is_empty()) {
        return;
    }
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    // madsim warns at every runtime that std's hasher is already seeded on this thread: expected,
    // since runs reuse their thread, and harmless (see `crate::engine::run_thread`).
    let filter = filter.add_directive(MADSIM_HASHER_WARNING.parse().expect("a valid directive"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(SimulatedTime)
        .with_writer(std::io::stderr)
        .with_ansi(colour(std::io::IsTerminal::is_terminal(&std::io::stderr()), std::env::var_os("NO_COLOR")))
        .try_init();
}

/// Whether log lines carry ANSI colour codes: only on a terminal, and not when `NO_COLOR` is set
/// to anything but the empty string (no-color.org). Piped or redirected logs are plain text.
pub fn colour(stderr_is_terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}
