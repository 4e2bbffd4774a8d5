//! What a person reads: traces as a timeline ([`timeline`]), sequence diagrams ([`diagram`]) and
//! plots ([`plot`]).
//!
//! Depends on [`crate::scenario`], [`crate::engine`] and the model's trace schema only.

pub mod artifacts;
pub mod diagram;
#[cfg(feature = "cli")]
pub mod plot;
pub mod timeline;
