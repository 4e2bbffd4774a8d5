//! The reconnect delay of a [`ReconnectPolicy`]: one pure function, so that every rule (growth,
//! cap, jitter, the server's `retry:` field, an immediate first attempt) is testable on its own.

use crate::config::{ReconnectPolicy, RetryField};
use std::time::Duration;

/// The delay before reconnect attempt `n` (0 for the first reconnect after a success).
///
/// `backoff = min(initial * factor^n, max) * (1 - jitter * u)` with `u` uniform in `[0, 1)`
/// supplied by the caller; then the server's `retry:` value (if one was seen) enters per
/// `retry_field`. Jitter only shortens the client's own backoff, never the server's `retry`,
/// because the spec says the client must wait *that many* milliseconds. `after_error` is false
/// for a clean (server-initiated) close, where `first_immediate` does not apply.
pub fn reconnect_delay(
    policy: &ReconnectPolicy,
    n: u32,
    server_retry_ms: Option<u64>,
    after_error: bool,
    u: f64,
) -> Duration {
    if policy.first_immediate && after_error && n == 0 {
        return Duration::ZERO;
    }
    let backoff = jittered(capped_exponential(policy, n), policy.jitter, u);
    match (policy.retry_field, server_retry_ms) {
        (RetryField::Ignore, _) | (_, None) => backoff,
        (RetryField::Replaces, Some(ms)) => Duration::from_millis(ms),
        (RetryField::AtLeast, Some(ms)) => backoff.max(Duration::from_millis(ms)),
    }
}

/// `min(initial * factor^n, max)`, saturating instead of overflowing for large `n`.
fn capped_exponential(policy: &ReconnectPolicy, n: u32) -> Duration {
    let exponent = i32::try_from(n).unwrap_or(i32::MAX);
    let us = policy.initial.as_micros() as f64 * policy.factor.powi(exponent);
    let cap = policy.max.as_micros() as f64;
    let us = if us.is_finite() { us.min(cap) } else { cap };
    Duration::from_micros(us.max(0.0) as u64)
}

/// Multiplies by a factor in `(1 - jitter, 1]`.
fn jittered(d: Duration, jitter: f64, u: f64) -> Duration {
    let jitter = if jitter.is_finite() { jitter.clamp(0.0, 1.0) } else { 0.0 };
    let u = if u.is_finite() { u.clamp(0.0, 1.0) } else { 0.0 };
    Duration::from_micros((d.as_micros() as f64 * (1.0 - jitter * u)) as u64)
}
