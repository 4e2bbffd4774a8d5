//! Policies as plain data: each client and server profile is a value of these types, never a
//! code path of its own. `profiles.rs` names the values; `sim` lets `--set` change single fields.

use crate::time::{serde_duration, serde_opt_duration};
use serde::{Deserialize, Serialize};
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

/// Everything that decides how a server behaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerPolicy {
    /// The profile's name.
    pub name: String,
    /// How event ids are written, and so how the stream is found from a `Last-Event-ID`.
    pub event_ids: EventIdScheme,
    /// Whether sessions have stores of their own or share one.
    pub store: StoreScope,
    /// How much of each stream is kept for replay.
    pub retention: Retention,
    /// Which events a resumption replays.
    pub replay: ReplayRule,
    /// The answer to a `Last-Event-ID` the server never issued (or whose stream is gone).
    pub unknown_id: Unhonourable,
    /// The answer to a `Last-Event-ID` that was issued but evicted from a bounded buffer.
    pub evicted_id: Unhonourable,
    /// Where the server sends a priming event (an id and empty data).
    pub priming: Priming,
    /// The `retry:` field sent with priming events, in milliseconds.
    pub retry_ms: Option<u64>,
    /// Interval of `: keepalive` comments on open SSE streams.
    #[serde(with = "serde_opt_duration")]
    pub keepalive: Option<Duration>,
    /// Idle time after which a session is expired (404 from then on).
    #[serde(with = "serde_opt_duration")]
    pub idle_ttl: Option<Duration>,
    /// Which activity holds a session alive.
    pub idle_rule: IdleRule,
    /// What `DELETE` does to a running tool.
    pub delete_running_tool: DeleteRule,
    /// The status `DELETE` answers for a session the server does not know.
    pub delete_unknown_status: u16,
    /// The status `DELETE` answers when it ends a session (200, rmcp 202). Written into traces
    /// only when it is not 200, so traces recorded before the field existed keep their bytes.
    #[serde(default = "ok_status", skip_serializing_if = "is_ok_status")]
    pub delete_status: u16,
    /// What a second concurrent standalone GET gets.
    pub second_get: SecondGet,
    /// Honour `ToolCall::idempotency_key` across sessions: a repeated key returns the first
    /// execution's result instead of running the side effect again (an extension; a mitigation).
    pub honour_idempotency_keys: bool,
    /// Whether the server keeps protocol sessions (every revision up to 2025-11-25). `false` is the
    /// 2026-07-28 revision: `initialize` is answered without a session id (and no session is
    /// created), requests are served whatever `Mcp-Session-Id` they carry or lack (never a 400 or
    /// 404 for the session), and there is neither a standalone stream nor resumption, so every
    /// `GET` and `DELETE` is answered `405 Method Not Allowed` (the answer the earlier revisions
    /// already allow for a server without them; a 404 would tell a session-ful client its session
    /// died). Its event ids are prefixed with the process epoch: with no session to scope them,
    /// that keeps them unique across restarts.
    #[serde(default = "yes")]
    pub sessions: bool,
    /// Whether the end of the connection carrying a request's stream cancels the request's tool
    /// (`ToolEnded { end: Cancelled }`; the side effect, executed at the start, stays). The
    /// 2026-07-28 revision's rule ("closing a response stream is cancellation"); the earlier ones
    /// say the opposite, so `false` for every session-ful profile.
    #[serde(default)]
    pub disconnect_cancels: bool,
}

/// Serde default of the fields that are `true` unless a profile says otherwise.
const fn yes() -> bool {
    true
}

/// Serde default of [`ServerPolicy::delete_status`].
const fn ok_status() -> u16 {
    200
}

fn is_ok_status(status: &u16) -> bool {
    *status == ok_status()
}

/// Event-id encodings of the real servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventIdScheme {
    /// `<stream>-<seq>`: the stream is explicit, the seq counts from 0 per stream.
    Reference,
    /// TypeScript SDK: `<streamId>_<ms clock>_<8 random chars>`, stream found by splitting at the
    /// first `_`, order by string comparison.
    TsSdk,
    /// Python SDK: a random uuid; the stream is found by looking the id up in the store.
    PySdk,
    /// rmcp: `<index>/<http request no.>` on request streams, `<index>` on the standalone one.
    Rmcp,
}

/// Who shares an event store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoreScope {
    /// Every session has its own store.
    PerSession,
    /// One store for the whole server, keyed by the JSON-RPC request id of the POST (Python SDK):
    /// two sessions using the same request id share a stream.
    SharedByRequestId,
}

/// What a stream's event log keeps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Retention {
    /// Keep at most this many events per stream (oldest evicted first); `None` for unbounded.
    pub max_events: Option<u32>,
    /// Evict events older than this; `None` for no time limit.
    #[serde(with = "serde_opt_duration")]
    pub window: Option<Duration>,
    /// Drop a request stream's whole log as soon as its response has been sent (rmcp).
    pub drop_on_response: bool,
}

impl Retention {
    /// Keeps everything.
    pub const UNBOUNDED: Retention = Retention { max_events: None, window: None, drop_on_response: false };

    /// Keeps the last `n` events per stream.
    pub const fn last(n: u32) -> Retention {
        Retention { max_events: Some(n), window: None, drop_on_response: false }
    }
}

/// Which events a resumption with `Last-Event-ID: x` replays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayRule {
    /// Those after `x` (the spec's reading).
    After,
    /// Those from `x`, `x` included (rmcp): the client sees `x` twice.
    From,
}

/// What a server does with a `Last-Event-ID` it cannot honour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unhonourable {
    /// `410 Gone` with a machine-readable body naming the current head id (the note's condition 3).
    Gone410,
    /// `409 Conflict` with the same body.
    Conflict409,
    /// Attach the client at the current head and say nothing (the note's second incident).
    SilentHead,
    /// Replay from the oldest event still buffered, without saying events were skipped (rmcp).
    FromOldest,
    /// `200 text/event-stream` with no events, closed at once (Python SDK).
    EmptyClosed,
    /// `200 text/event-stream` with no events, left open (TypeScript SDK).
    EmptyOpen,
}

/// Where priming events (an id and empty data) are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Priming {
    /// At the start of each POST SSE stream.
    pub post: bool,
    /// At the start of the standalone GET stream.
    pub standalone: bool,
    /// At the start of every successful resumption.
    pub resume: bool,
}

/// Which activity holds a session alive against `idle_ttl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdleRule {
    /// The countdown restarts at every request received for the session (rmcp).
    LastRequest,
    /// The countdown runs whenever no HTTP request of the session is open (Python SDK): an open
    /// GET holds the session, a tool whose POST was cut does not.
    NoOpenRequest,
    /// The countdown runs only while no tool runs and no stream is attached (the `reference`
    /// server: it never expires a session that still owes the client something).
    NeverWhileBusy,
}

/// What `DELETE` does to a tool still running for the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeleteRule {
    /// Cancel it: no result, and the side effect stays as far as it got.
    Cancel,
    /// Let it run to completion; its result goes nowhere.
    RunOn,
}

/// What a second concurrent standalone GET gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SecondGet {
    /// `409 Conflict`.
    Reject409,
    /// Accepted as a second stream; the newest one receives the events.
    Accept,
}

// ---------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------

/// A tool the server offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// How long one execution runs before its result is ready.
    #[serde(with = "serde_duration")]
    pub duration: Duration,
    /// Interval of progress notifications while it runs; `None` for a silent tool.
    #[serde(with = "serde_opt_duration")]
    pub event_interval: Option<Duration>,
    /// Whether running it twice is harmless. The side effect is executed when the call starts.
    pub idempotent: bool,
}

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

/// Everything that decides how a client library behaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientPolicy {
    /// The profile's name.
    pub name: String,
    /// How a stream that ended before its response is handled.
    pub close_handling: CloseHandling,
    /// Where the session id, the last event id of each stream and the in-flight calls are kept.
    pub persistence: Persistence,
    /// Backoff and attempts for reconnections.
    pub reconnect: ReconnectPolicy,
    /// Give up on a request after this long (then send `notifications/cancelled`).
    #[serde(with = "serde_opt_duration")]
    pub request_timeout: Option<Duration>,
    /// Open the standalone GET stream after initializing.
    pub open_standalone_stream: bool,
    /// Send an idempotency key with every tool call (an extension; a mitigation).
    pub send_idempotency_keys: bool,
    /// Whether the client runs the session handshake (every revision up to 2025-11-25). `false` is
    /// the 2026-07-28 revision: no `initialize` is needed, so the client is ready at once and sends
    /// every request without `Mcp-Session-Id`. Against a server that requires sessions each
    /// request then gets 400, which fails its call.
    #[serde(default = "yes")]
    pub sessions: bool,
    /// Whether a progress notification for a call restarts its request timeout (TypeScript's
    /// opt-in `resetTimeoutOnProgress`, off by default). Written into traces only when set.
    #[serde(default, skip_serializing_if = "is_false")]
    pub timeout_resets_on_progress: bool,
    /// After this many unhonourable resumes of a call's stream in a row (a 409/410, or a 200 that
    /// ends without a single message) the call is resolved as unknown outcome instead of being
    /// resumed again; `None` for no limit. Written into traces only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unhonoured_resumes: Option<u32>,
    /// When the client gives up its standalone stream (attempts spent), it tells the application
    /// that the stream was lost (an `AppStreamLost` step) instead of dropping it silently. Written
    /// into traces only when set.
    #[serde(default, skip_serializing_if = "is_false")]
    pub report_stream_given_up: bool,
}

/// Serde's `skip_serializing_if` for flags that are off by default.
fn is_false(b: &bool) -> bool {
    !*b
}

fn is_true(b: &bool) -> bool {
    *b
}

/// How a client reacts to a stream that ends before its response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CloseHandling {
    /// The design note's procedure (`decision::next_action`): resume on transport faults,
    /// re-initialize on 404 and report in-flight calls as unknown outcome, report a gap and resume
    /// at the head on 409/410, stop on `event: close`, refuse any other status.
    DecisionProcedure,
    /// The first incident's client: any break is fatal; drop the session, initialize again and
    /// re-send every in-flight call.
    ReinitializeAndResend,
    /// The real SDKs' rules, each a field.
    Sdk(SdkRules),
    /// The 2026-07-28 revision's client: a stream is never resumed. When a call's stream ends
    /// before its response (a reset, a refused connection, a 5xx, a close without the response),
    /// the request is issued again as a new POST with a new JSON-RPC id and the same call key,
    /// after the reconnect backoff and within its attempts; when they are spent, a non-idempotent
    /// call ends as unknown outcome (it ran at least once, maybe more), an idempotent one as an
    /// error. Any other status fails the call. Execution is at-least-once.
    ReissueWithNewId,
}

/// The close rules of the real SDK clients.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SdkRules {
    /// What a 404 to a POST or a resume does.
    pub on_404: On404,
    /// What an empty 200 answer to a resume (no events, closed) leads to.
    pub on_empty_resume: OnEmptyResume,
    /// Resume a POST stream only if an event id arrived on it; otherwise the call fails locally.
    pub resume_post_needs_event_id: bool,
    /// What a call whose stream the client gave up on (attempts spent) gets. Written into traces
    /// only when it is not `fail-call`.
    #[serde(default, skip_serializing_if = "OnGiveUp::is_default")]
    pub on_give_up: OnGiveUp,
    /// Whether the `Last-Event-ID` a stream was resumed with survives a second break that comes
    /// before any id-bearing event arrived on the resumed connection. `false` is
    /// typescript-sdk#2499: the next reconnect goes without `Last-Event-ID`. Written into traces
    /// only when `false`.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub resume_token_survives_recut: bool,
}

/// What an SDK client does with a call whose stream it gave up reconnecting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnGiveUp {
    /// Fail the call at once with a local error (Python: "connection closed").
    #[default]
    FailCall,
    /// Leave the call pending: it resolves only by its request timeout, if it has one (TypeScript).
    LeavePending,
}

impl OnGiveUp {
    fn is_default(&self) -> bool {
        *self == OnGiveUp::FailCall
    }
}

/// What an SDK client does with a 404 on its session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum On404 {
    /// Fail the request, keep the (dead) session id, never re-initialize (TypeScript, Python).
    FailKeepSession,
    /// Re-initialize and re-send each POST that got 404 once; fail the other pending ones (rmcp).
    ReinitializeResendOnce,
    /// Re-initialize; every call in flight becomes unknown outcome (an idempotent one is re-sent),
    /// as the design note's procedure does.
    ReinitializeUnknownOutcome,
}

/// What an SDK client does when a resume gets 200 and an empty stream that ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnEmptyResume {
    /// Reconnect again with the same `Last-Event-ID` (Python).
    SameId,
    /// Reconnect again without `Last-Event-ID` (TypeScript).
    WithoutId,
    /// Treat it as a clean end of the stream: a call whose stream it was fails with "stream ended
    /// without a response".
    CleanClose,
    /// A graceful close of a successful reconnect (rmcp, `SseAutoReconnectStream`): reconnect with
    /// the same `Last-Event-ID` after the clean-close delay, the attempt counter reset to 0
    /// (rust-sdk#958: against a server that answers every failed resume so, a loop for good).
    GracefulClose,
}

/// Where client state lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Persistence {
    /// In memory: lost when the client process restarts.
    Volatile,
    /// Written through to durable storage on every change: kept across a process restart (the
    /// design note's condition 1).
    Durable,
}

/// Reconnection backoff and attempts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReconnectPolicy {
    #[serde(with = "serde_duration")]
    /// The delay before the first reconnect attempt (`n = 0`).
    pub initial: Duration,
    /// Growth per attempt: attempt `n` waits `initial * factor^n`.
    pub factor: f64,
    #[serde(with = "serde_duration")]
    /// The cap on the grown delay.
    pub max: Duration,
    /// Consecutive failed attempts before giving up; `None` for unlimited.
    pub max_attempts: Option<u32>,
    /// When the attempt counter goes back to zero.
    pub counter_reset: CounterReset,
    /// How the server's `retry:` field changes the delay.
    pub retry_field: RetryField,
    /// The first reconnection after a stream error is immediate (rmcp).
    pub first_immediate: bool,
    /// Each delay is multiplied by a factor drawn uniformly from `[1 - jitter, 1]` (the caller
    /// supplies the draw, so the model stays free of randomness).
    pub jitter: f64,
}

/// When a client's reconnect attempt counter resets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CounterReset {
    /// After a reconnect that got a 200 answer (TypeScript).
    OnSuccessfulReconnect,
    /// When a reconnect that got 200 later ends (Python).
    WhenSuccessfulReconnectEnds,
    /// When an event arrives on the reconnected stream.
    OnEvent,
}

/// How the server's `retry:` field enters the delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RetryField {
    /// Ignored.
    Ignore,
    /// Once seen, used instead of the backoff for good (TypeScript, Python).
    Replaces,
    /// The delay is at least the server's `retry` (rmcp).
    AtLeast,
}

// ---------------------------------------------------------------------------------------------
// Load balancer
// ---------------------------------------------------------------------------------------------

/// The load balancer between client and server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LbConfig {
    /// Close a connection that carried no bytes (either way) for this long; `None` for never.
    #[serde(with = "serde_opt_duration")]
    pub idle_timeout: Option<Duration>,
}
