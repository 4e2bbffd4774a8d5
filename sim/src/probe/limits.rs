//! The probe's bounds on what a server can make it hold or write. A server under test may send
//! anything (one event of a gigabyte, an endless stream): each bound, when hit, stops the reading
//! it bounds and leaves one line in the scenario's notes saying which bound and where.

/// The largest event kept: the fields of one event (`id`, `event`, `data` lines) beyond this
/// are dropped and the event is marked `oversize` (`recorder::sse::RawEvent`).
pub const MAX_EVENT_BYTES: usize = 1 << 20;

/// Events read in one scenario (every exchange of its script together): beyond this the
/// exchange that reads the next one is closed by the probe.
pub const MAX_EVENTS_PER_SCENARIO: usize = 20_000;

/// Bytes of event fields recorded in one scenario's trace: beyond this the exchange that reads
/// the next event is closed by the probe. A trace holds each event a few times (the client's
/// `event`, the application's view, the inferred `event-stored`), so its file stays within a
/// few times this.
pub const MAX_TRACE_EVENT_BYTES: usize = 4 << 20;

/// Bytes of one non-event body kept (a JSON answer), and read at all by the keep-alive
/// measurement.
pub const MAX_BODY_BYTES: usize = 1 << 20;
