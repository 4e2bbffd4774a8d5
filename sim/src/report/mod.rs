//! What a person reads: traces as a timeline ([`timeline`]), sequence diagrams ([`diagram`]), an
//! HTML page ([`html`]) and plots (`plot`, with the `cli` feature).
//!
//! Depends on [`crate::scenario`], [`crate::engine`] and the model's trace schema only.

pub mod artifacts;
pub mod cause;
pub mod diagram;
pub mod escape;
#[cfg(feature = "cli")]
pub(crate) mod explain;
pub mod html;
#[cfg(feature = "cli")]
pub(crate) mod plot;
pub mod timeline;
