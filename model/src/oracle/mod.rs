//! The invariants, named and checked in one place, offline over a recorded trace. (Being written.)

use crate::time::Instant;
use crate::trace::{Trace, ViolationRecord};

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The invariant's stable name, e.g. `no-duplicate-execution`.
    pub invariant: &'static str,
    /// When the step that broke it happened.
    pub at: Instant,
    /// The call, stream, event or session concerned.
    pub subject: String,
    pub detail: String,
}

impl From<&Violation> for ViolationRecord {
    fn from(v: &Violation) -> Self {
        ViolationRecord {
            invariant: v.invariant.to_string(),
            t: v.at.0,
            subject: v.subject.clone(),
            detail: v.detail.clone(),
        }
    }
}

/// A named invariant.
pub struct Invariant {
    pub name: &'static str,
    pub description: &'static str,
    pub check: fn(&Trace) -> Vec<Violation>,
}

/// Every invariant, in the order reports list them.
pub const INVARIANTS: &[Invariant] = &[];

/// Checks every invariant.
pub fn check_all(trace: &Trace) -> Vec<Violation> {
    INVARIANTS.iter().flat_map(|i| (i.check)(trace)).collect()
}
