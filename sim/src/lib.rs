//! mcpsim: the sans-IO machines of `mcpsim-model` run as actors on madsim, with fault plans,
//! traces, studies over many runs, and the command line.
//!
//! The folders are the architecture; dependencies point one way:
//! `cli` → [`studies`] / [`report`] → [`engine`] / [`scenario`] → `mcpsim-model`.
//!
//! - [`scenario`]: what a run is: families, profiles, settable keys and their validation, and
//!   the fault plan ([`scenario::faults`]).
//! - [`engine`]: one seeded run on the calling thread ([`run`]), returning its trace and verdict.
//! - [`studies`]: search and shrinking, sweeps, advice, the compatibility matrix, the benchmark.
//! - [`report`]: timelines, sequence diagrams and plots of traces and studies.
//! - `cli`: the commands of the `mcpsim` binary.
//!
//! ## Using mcpsim as a library
//!
//! A crate that tests its own settings against the simulator adds mcpsim as a dev-dependency
//! without the command line (`default-features = false`: the `cli` feature brings clap, plots and
//! logs), and builds in madsim's simulation mode: `[build] rustflags = ["--cfg", "madsim"]` in its
//! `.cargo/config.toml` (without it the build stops with one message saying so). Then a seeded run
//! is a function call, and a failing seed prints the command that replays it:
//!
//! ```
//! let mut s = mcpsim::Scenario::build("long-tool", "naive", "reference")?;
//! s.apply_overrides(&[("server.keepalive".into(), "15s".into())])?;
//! for seed in 0..20 {
//!     assert!(mcpsim::run(&s, seed)?.violations.is_empty(), "replay: mcpsim run {} --seed {seed}", s.cli_args());
//! }
//! # Ok::<(), mcpsim::SimError>(())
//! ```
//!
//! What a downstream crate uses (`sim/examples/downstream/` is one):
//! - a run: [`Scenario`] (built from names, or from command-line words with
//!   [`scenario::ScenarioArgs`]), [`run`], [`RunOutcome`], [`SimError`]; the profiles, the trace
//!   schema and the oracles are `mcpsim-model`'s (`profiles`, `trace`, `oracle`);
//! - trace files: [`report::artifacts`] (read, parse, compare, the replay command);
//! - studies: [`studies::search`] ([`search`](studies::search::search) and its
//!   [`Found`](studies::search::Found) counterexamples), [`studies::sweep`], [`studies::matrix`],
//!   [`studies::advise`];
//! - reports: [`report::timeline`], [`report::diagram`], [`report::html`].

#![warn(missing_docs)]

#[cfg(not(madsim))]
compile_error!(
    "mcpsim simulates on madsim and must be built with `--cfg madsim`: put `[build] rustflags = [\"--cfg\", \"madsim\"]` in your .cargo/config.toml (see mcpsim's README, \"mcpsim as a library\")"
);

#[cfg(all(madsim, feature = "cli"))]
pub mod cli;
#[cfg(madsim)]
pub mod engine;
#[cfg(madsim)]
pub mod error;
#[cfg(all(madsim, feature = "probe"))]
pub mod probe;
#[cfg(madsim)]
pub mod report;
#[cfg(madsim)]
pub mod scenario;
#[cfg(madsim)]
pub mod studies;

#[cfg(madsim)]
pub use engine::runner::{run, RunOutcome};
#[cfg(madsim)]
pub use error::SimError;
#[cfg(madsim)]
pub use scenario::Scenario;
