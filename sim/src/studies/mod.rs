//! Studies built from many runs: the case search and shrinking ([`search`]), parameter sweeps
//! ([`sweep`]), the retention advice ([`advise`]), the compatibility matrix ([`matrix`]) and the
//! benchmark ([`bench`]).
//!
//! Depends on [`crate::report`], [`crate::engine`] and [`crate::scenario`]; nothing in those
//! imports a study.

pub mod advise;
pub mod bench;
pub mod determinism;
pub mod guided;
pub mod matrix;
pub mod search;
pub mod stats;
pub mod sweep;
