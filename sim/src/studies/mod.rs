//! Studies built from many runs: the case search and shrinking ([`search`]), parameter sweeps
//! ([`sweep`]), the retention advice ([`advise`]), the compatibility matrix ([`matrix`]) and the
//! benchmark (`bench`), and `check` of a user's own deployment ([`check`]).
//!
//! Sweeps, the matrix and `advise --verify` run their cells through one worker pool ([`pool`])
//! and count them in one tally ([`tally`]). Within studies, `sweep` uses `advise` (for its
//! predicted boundaries), never the other way round.
//!
//! Depends on [`crate::report`], [`crate::engine`] and [`crate::scenario`]; nothing in those
//! imports a study.

pub mod advise;
#[cfg(feature = "cli")]
pub(crate) mod bench;
pub mod check;
pub mod determinism;
pub mod guided;
pub mod matrix;
pub mod pool;
pub mod search;
pub mod shard;
pub(crate) mod stats;
pub mod sweep;
pub mod tally;
