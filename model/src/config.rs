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
#[serde(deny_unknown_fields)]
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
    /// `DELETE` is answered `405 Method Not Allowed` (the answer the earlier revisions already
    /// allow for a server without them; a 404 would tell a session-ful client its session died),
    /// and so is every `GET` unless `sessionless_get` holds it open. Its event ids are prefixed with
    /// the process epoch: with no session to scope them, that keeps them unique across restarts.
    #[serde(default = "yes")]
    pub sessions: bool,
    /// Whether the end of the connection carrying a request's stream cancels the request's tool
    /// (`ToolEnded { end: Cancelled }`; the side effect, executed at the start, stays). The
    /// 2026-07-28 revision's rule ("closing a response stream is cancellation"); the earlier ones
    /// say the opposite, so `false` for every session-ful profile.
    #[serde(default)]
    pub disconnect_cancels: bool,

    // Fields below were read from the real servers on the wire (`sim/probe/fixtures/OBSERVED.md`)
    // or from their source. Each defaults to the behaviour the model had before it existed and is
    // written into traces only when it differs, so traces recorded earlier keep their bytes.
    /// When keep-alive comments are written: at a fixed interval, or only after `keepalive` of
    /// silence on the connection (rmcp).
    #[serde(default, skip_serializing_if = "is_default")]
    pub keepalive_timer: KeepaliveTimer,
    /// How the priming event of the standalone GET stream (`priming.standalone`) is named.
    #[serde(default, skip_serializing_if = "is_default")]
    pub standalone_priming: StandalonePriming,
    /// What a fresh standalone GET (no `Last-Event-ID`) receives besides new notifications.
    #[serde(default, skip_serializing_if = "is_default")]
    pub fresh_get: FreshGet,
    /// What a resumption of a stream whose response was already sent does after the replay.
    #[serde(default, skip_serializing_if = "is_default")]
    pub finished_resume: ConnAfterResponse,
    /// What a resumed connection of a live stream does once the stream's response is sent.
    #[serde(default, skip_serializing_if = "is_default")]
    pub resumed_on_response: ConnAfterResponse,
    /// What a resumption gets while the stream still has a connection of its own registered.
    #[serde(default, skip_serializing_if = "is_default")]
    pub resume_while_attached: ResumeWhileAttached,
    /// Whether events of a request stream produced while no connection is attached are stored
    /// (typescript-sdk#2151: after `closeSSEStream` they are not, so the result is lost).
    #[serde(default, skip_serializing_if = "is_default")]
    pub detached_request_events: DetachedEvents,
    /// The server ends each request's SSE connection itself this long after it opened (after the
    /// priming event, whose `retry:` tells the client when to come back): SEP-1699 polling with
    /// `0s`, TypeScript `closeSSEStream` from a tool after a while. `None`: never.
    #[serde(default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub close_request_streams: Option<Duration>,
    /// The server ends the standalone GET connection itself after this long with no event on it
    /// (a graceful idle close). `None`: never.
    #[serde(default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub close_idle_standalone: Option<Duration>,
    /// How the server learns that a connection's client side is gone when its own side was not
    /// told (`Server::handle_client_gone`: a proxy that cut only the client side).
    #[serde(default, skip_serializing_if = "is_default")]
    pub dead_stream: DeadStream,
    /// The answer to a request naming a session the server does not know (or no longer knows).
    #[serde(default, skip_serializing_if = "is_default")]
    pub unknown_session: UnknownSession,
    /// The JSON-RPC error code of the body `rpc-error200` answers an unknown session with
    /// (`-32001` "Session not found", or JSON-RPC's `-32600` Invalid Request).
    #[serde(default = "session_not_found_code", skip_serializing_if = "is_session_not_found_code")]
    pub unknown_session_code: i64,
    /// The status a server without sessions answers to `DELETE`, and to `GET` when it refuses it
    /// (`sessionless_get = refuse`): 405, 400 or 404.
    #[serde(default = "method_not_allowed", skip_serializing_if = "is_method_not_allowed")]
    pub sessionless_get_status: u16,
    /// What a server without sessions does with a `GET` (the standalone stream): refuses it with
    /// `sessionless_get_status` (the default, left out of traces), or answers `200
    /// text/event-stream` and holds the stream open with nothing ever written on it but
    /// keep-alives (Python's stateless mode).
    #[serde(default, skip_serializing_if = "is_default")]
    pub sessionless_get: SessionlessGet,
    /// What a `notifications/cancelled` does on a server without sessions, whose requests carry
    /// ids unique only to each client: nothing (each request served apart, as all three SDKs'
    /// stateless modes do), or it cancels every request in flight with that id, whichever
    /// client's (one instance serving every client: a hand-written server's in-flight map).
    #[serde(default, skip_serializing_if = "is_default")]
    pub sessionless_cancel: SessionlessCancel,
    /// What restarts the idle countdown besides the session's requests.
    #[serde(default, skip_serializing_if = "is_default")]
    pub idle_reset: IdleReset,
    /// What idle expiry does to a tool still running for the session (as `delete_running_tool`
    /// for `DELETE`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub expire_running_tool: DeleteRule,
    /// Which clock an event id with a time in it (TypeScript) is stamped with.
    #[serde(default, skip_serializing_if = "is_default")]
    pub id_stamp: IdStamp,
    /// The most live sessions one replica (one server state machine) holds: past it `initialize`
    /// is answered `503 Service Unavailable` and no session is created. `None`: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sessions: Option<u32>,
    /// How long the HTTP server keeps a kept-alive connection open with no request on it before
    /// closing it (between requests only; a response in progress is never cut by it). `None`:
    /// never. It matters only behind a balancer that keeps upstream connections alive
    /// (`LbConfig::upstream_keep_alive`).
    #[serde(default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub keep_alive_timeout: Option<Duration>,
    /// The protocol eras the server serves (`crate::era`): `["2025-11-25"]` legacy only,
    /// `["2026-07-28"]` modern only, both for a dual-era server that picks the era per request.
    /// `None` (the default, left out of traces): what `sessions` implied before the field existed,
    /// legacy with sessions and modern without, so every earlier trace reads as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eras: Option<Vec<crate::era::Era>>,
    /// How a session-ful dual-era server serves a modern request (`crate::era::ModernSession`):
    /// `sessionless` (the spec, and the default, left out of traces), or `minted` in a new
    /// legacy session (a misconfiguration `era-consistent` catches).
    #[serde(default, skip_serializing_if = "is_default")]
    pub modern_session: crate::era::ModernSession,
    /// The eras a process of this server serves once it was restarted (a rolling upgrade: the
    /// deploy's restarted replicas come back with the new build's eras, the others keep `eras`
    /// until their turn). `None` (the default, left out of traces): the same as the first process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eras_after_restart: Option<Vec<crate::era::Era>>,
    /// The Tasks extension (SEP-2663, `crate::tasks`): when a call is answered with a task, its
    /// TTL, poll interval, expiry rule, store and routing. The default (left out of traces)
    /// creates no task.
    #[serde(default, skip_serializing_if = "is_default")]
    pub tasks: crate::tasks::ServerTasks,
    /// Change notifications published to `subscriptions/listen` streams
    /// (`crate::subscriptions::ServerSubscriptions`). The default (left out of traces) publishes
    /// none.
    #[serde(default, skip_serializing_if = "is_default")]
    pub subscriptions: crate::subscriptions::ServerSubscriptions,
    /// Whether the server has an event store at all (`none`: the Python SDK's and FastMCP's
    /// default, and the TypeScript transport's without `eventStore`): events carry no `id:`, no
    /// priming event is sent, nothing is kept for a replay, and a `GET` with `Last-Event-ID` is
    /// answered as `resume_without_store` says.
    #[serde(default, skip_serializing_if = "is_default")]
    pub event_store: EventStoreMode,
    /// The answer of a server without an event store to a `GET` with `Last-Event-ID`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub resume_without_store: NoStoreResume,
    /// How a `tools/call` POST is answered: an SSE stream (the default), or one JSON body once
    /// the result is ready (`enableJsonResponse`, `json_response=True`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub response_mode: ResponseMode,
    /// What a resumed connection receives after its replay: the stream's live events (the
    /// default), or nothing more (a store that replays, then goes quiet).
    #[serde(default, skip_serializing_if = "is_default")]
    pub after_replay: AfterReplay,
    /// Which events an honourable resume replays, by stream: those of the stream the
    /// `Last-Event-ID` belongs to (the default, left out of traces), or every event of the store
    /// the id was found in that came after it, whatever stream it was written for (a store
    /// whose replay forgot the stream filter: servers#4087's `InMemoryEventStore`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub replay_scope: ReplayScope,
    /// With `disconnect_cancels` (what the server claims, and what its clients and the oracles
    /// rely on): `true` when the claim is not kept, the cancellation is signalled but the
    /// request's handler ignores it and runs on to its result (a handler that never checks its
    /// cancellation token or abort signal). Without `disconnect_cancels` it changes nothing.
    #[serde(default, skip_serializing_if = "is_default")]
    pub disconnect_cancel_ignored: bool,
    /// What a write that fails on an SSE connection whose client is gone (`dead_stream`) does
    /// besides dropping that connection: nothing more (the default, left out of traces), or the
    /// whole session is forgotten (Java SDK's servlet transport).
    #[serde(default, skip_serializing_if = "is_default")]
    pub on_failed_write: FailedWrite,
    /// What a request the server cannot parse (a POST whose body does not parse, `fault.malformed`)
    /// does: answered `400` (the default, left out of traces), or the process exits and its
    /// supervisor starts a fresh one at once (every session, event log and running tool lost).
    #[serde(default, skip_serializing_if = "is_default")]
    pub on_protocol_error: ProtocolErrorReaction,
}

/// What a failed write on an SSE connection does (`ServerPolicy::on_failed_write`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailedWrite {
    /// Only the connection goes: the session, its streams and its running tools live on, and the
    /// client may resume (the three SDKs modelled).
    #[default]
    DropStream,
    /// The session is forgotten as well (`SessionEnded { reason: write-failed }`): its next
    /// request is answered as an unknown session's; its running tools run on with nowhere to
    /// send their results (java-sdk#952).
    EndSession,
}

/// What a request the server cannot parse does (`ServerPolicy::on_protocol_error`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProtocolErrorReaction {
    /// `400 Bad Request` with a JSON-RPC parse error; nothing else changes (the three SDKs).
    #[default]
    AnswerError,
    /// The process exits (an exception nobody catches): every session, event log and running tool
    /// is lost, every connection reset, and a supervisor starts the next process at once
    /// (`SessionEnded { reason: process-exit }`).
    RestartProcess,
}

/// What a resumed connection gets once the missed events were replayed
/// (`ServerPolicy::after_replay`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AfterReplay {
    /// It becomes the stream's receiver: live events and the result follow.
    #[default]
    Live,
    /// It stays open but receives nothing more: no live event, no result (the stream's events
    /// are still stored, so a later resumption replays them).
    Quiet,
}

/// Which streams' events an honourable resume replays (`ServerPolicy::replay_scope`). `replay`
/// says where the replay starts; this says what it is drawn from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayScope {
    /// The events of the stream the `Last-Event-ID` belongs to (the spec: "replay messages that
    /// would have been sent after the last event ID *on the stream that was disconnected*"; the
    /// three SDKs' example stores).
    #[default]
    Stream,
    /// Every event the store holds after the given one, of any stream, in the store's order: the
    /// session's other streams in a store of its own, every session's in a store shared by all
    /// (an event store whose replay walks all its events and never compares the stream).
    Store,
}

/// How a server answers a request that a tool serves (`ServerPolicy::response_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResponseMode {
    /// `200 text/event-stream` at once; progress and the result as events.
    #[default]
    Sse,
    /// Nothing until the result is ready, then `200 application/json` with the result alone:
    /// progress notifications are dropped, no event id is ever handed out, and a connection that
    /// ends before the result takes the result with it.
    Json,
}

/// Whether a server keeps an event store (`ServerPolicy::event_store`). Written `kept` or
/// `none`; since profile files and `--set` turn the word `none` into an absent value, an absent
/// value reads as `none` too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventStoreMode {
    /// Events are stored (under `store`, `retention`) and carry ids.
    #[default]
    Kept,
    /// No store: no ids, no priming, no replay.
    #[serde(rename = "none")]
    NoStore,
}

impl<'de> Deserialize<'de> for EventStoreMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Option::<String>::deserialize(d)?.as_deref() {
            None | Some("none") => Ok(EventStoreMode::NoStore),
            Some("kept") => Ok(EventStoreMode::Kept),
            Some(other) => Err(serde::de::Error::unknown_variant(other, &["kept", "none"])),
        }
    }
}

/// What a server without an event store answers to a `GET` with `Last-Event-ID`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoStoreResume {
    /// The header is ignored: the `GET` is served as a fresh standalone GET (a `409` while one is
    /// open), so the client gets new events only (TypeScript).
    #[default]
    Ignored,
    /// `500 Internal Server Error`: the handler returns without answering (Python).
    Error500,
    /// `400 Bad Request` ("stream replay unsupported": the Go SDK).
    Error400,
}

/// Whether a field holds its default (then it is left out of traces).
fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Serde default of [`ServerPolicy::unknown_session_code`]: `-32001`, "Session not found".
const fn session_not_found_code() -> i64 {
    -32001
}

fn is_session_not_found_code(code: &i64) -> bool {
    *code == session_not_found_code()
}

/// Serde default of [`ServerPolicy::sessionless_get_status`].
const fn method_not_allowed() -> u16 {
    405
}

fn is_method_not_allowed(status: &u16) -> bool {
    *status == method_not_allowed()
}

/// When keep-alive comments are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeepaliveTimer {
    /// Every `keepalive`, whatever else was sent (TypeScript, Python).
    #[default]
    Fixed,
    /// After `keepalive` with nothing written on the connection: each event restarts it (rmcp).
    AfterSilence,
}

/// How the standalone stream's priming event is named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StandalonePriming {
    /// Stored like any event, with an id of its own.
    #[default]
    Stored,
    /// Sent with the id the stream's next event will take and not stored: the first real event
    /// repeats it (rmcp: `id: 0` twice).
    ReusedId,
}

/// What a fresh standalone GET receives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FreshGet {
    /// Only what is sent from now on: notifications stored while no GET was open stay in the
    /// store, reachable by a resumption only (TypeScript, Python).
    #[default]
    NewOnly,
    /// The notifications still buffered for the standalone stream first (rmcp: its ring from
    /// index 0), then new ones.
    Buffered,
}

/// What a connection does after its stream's response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnAfterResponse {
    /// The server ends it.
    #[default]
    Close,
    /// It stays open (only keep-alives arrive) until the client closes it.
    StayOpen,
}

/// What a resumption gets while the stream's own connection is still registered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResumeWhileAttached {
    /// The resuming connection takes the stream over; the old one is ended.
    #[default]
    TakeOver,
    /// The replay is sent and the resuming connection is closed at once; the old one keeps the
    /// stream (Python: `stream_id not in self._request_streams`).
    ReplayAndClose,
    /// `409 Conflict` before any replay; the old connection keeps the stream (the Go SDK: "stream
    /// ID conflicts with ongoing stream").
    Reject409,
}

/// What happens to a request stream's events while no connection is attached to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DetachedEvents {
    /// Stored for a later resumption (the spec: disconnection is not cancellation).
    #[default]
    Store,
    /// Neither stored nor sent (typescript-sdk#2151); the standalone stream still stores.
    Drop,
}

/// How the server notices a connection whose client side is gone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeadStream {
    /// At once, as if its own side had been closed.
    #[default]
    Immediate,
    /// When it next writes on it, an event or a keep-alive comment (the write fails).
    OnWrite,
    /// Only when a keep-alive comment is written (events are queued without an error).
    OnKeepalive,
}

/// The answer to a request for a session the server does not know.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnknownSession {
    /// `404 Not Found` (the spec; all three SDKs).
    #[default]
    NotFound404,
    /// `400 Bad Request`.
    BadRequest400,
    /// `200` with a JSON-RPC error body (`-32600` or `-32001`, "Session not found").
    RpcError200,
    /// `503 Service Unavailable` (gateways that cannot route a session they do not know).
    Unavailable503,
}

/// What restarts a session's idle countdown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdleReset {
    /// The session's requests only.
    #[default]
    Requests,
    /// Its requests and every event the session itself sends (rmcp: the session worker's idle
    /// sleep restarts at each message in or out).
    RequestsAndEvents,
}

/// Which clock a time-stamped event id carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdStamp {
    /// When the server handled the timer that produced it.
    #[default]
    Handled,
    /// When the event was due: a burst in one millisecond shares its stamp, and the store orders
    /// it by the random suffix as the real store does.
    Due,
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
#[serde(deny_unknown_fields)]
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
    /// `400 Bad Request` naming no head (the Go SDK: "failed to replay events", chosen so that the
    /// client does not read a 404 as a lost session).
    BadRequest400,
}

/// Where priming events (an id and empty data) are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// The countdown runs whenever no `POST` of the session is open (the Go SDK: `startPOST` and
    /// `endPOST` pause and restart it): an open `GET` does not hold the session, a tool whose
    /// `POST` was cut does not either.
    NoOpenPost,
    /// The countdown runs only while no tool runs and no stream is attached (the `reference`
    /// server: it never expires a session that still owes the client something).
    NeverWhileBusy,
}

/// What a server without sessions does with a `GET` (`ServerPolicy::sessionless_get`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionlessGet {
    /// Answered `sessionless_get_status` (405: the server offers no stream at this endpoint).
    #[default]
    Refuse,
    /// `200 text/event-stream`, held open until its connection ends, with keep-alives (per
    /// `keepalive`) and never a message: no session, so no notification has a way onto it. The
    /// client believes it listens. Only a fresh `GET`: one with `Last-Event-ID` is refused as
    /// under `refuse` when the server keeps an event store (no session, no resumption), and
    /// answered as `resume_without_store` says when it keeps none.
    HoldOpen,
}

/// What a server without sessions does with a `notifications/cancelled`
/// (`ServerPolicy::sessionless_cancel`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionlessCancel {
    /// Answers it and cancels nothing: the cancel's own request is served apart from the one it
    /// names, which runs on (the SDKs' stateless modes).
    #[default]
    Ignore,
    /// Cancels every request in flight with that id, whichever client sent it: request ids are
    /// unique only to each client, so one client's cancel can end another's tool.
    ByRequestId,
}

/// What `DELETE` (or idle expiry) does to a tool still running for the session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeleteRule {
    /// Cancel it: no result, and the side effect stays as far as it got.
    #[default]
    Cancel,
    /// Let it run to completion; its result goes nowhere.
    RunOn,
    /// Fire the handler's abort signal (TypeScript `extra.signal`): a tool that checks it
    /// (`ToolSpec::on_abort = stop`) is cancelled, one that ignores it runs on.
    AbortSignal,
}

/// What a second concurrent standalone GET gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SecondGet {
    /// `409 Conflict`.
    Reject409,
    /// Accepted as a second stream; the newest one receives the events and the earlier one
    /// stays open receiving nothing (rmcp before 0.17: the common sender was replaced).
    Accept,
    /// `400 Bad Request`.
    Reject400,
    /// Accepted; the earlier connection is ended and the new one receives the events.
    Replace,
    /// Accepted as a shadow stream that receives nothing but keep-alives; the earlier one keeps
    /// the events (rmcp 0.17 and later, while the earlier one's receiver is alive).
    Shadow,
    /// `200 text/event-stream` that ends at once with no event; the earlier connection stays
    /// registered (Ktor's `sse {}` commits the 200 before the server's 409 check runs:
    /// kotlin-sdk#715). The client sees a clean, empty end and comes back.
    EmptyClosed,
    /// `409 Conflict`, and the whole session is ended with it, its running tools cancelled (an
    /// application that tears the session down when the transport's `onerror` reports the
    /// conflict: kaeawc/auto-mobile#1942).
    EndSession,
    /// `409 Conflict`, and then the process exits (an application that kills its process when
    /// `onerror` reports the conflict: supercorp-ai/supergateway#126), losing every session, event
    /// log and running tool; its supervisor starts the next at once (as `on_protocol_error =
    /// restart-process`).
    RestartProcess,
}

// ---------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------

/// A tool the server offers. (`Default` is a nameless instant tool, to fill in with `..`.)
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
    /// Whether running it twice is harmless.
    pub idempotent: bool,
    /// When its side effect happens: at the start (default) or when it completes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub side_effect: SideEffectAt,
    /// What it does when its handler's abort signal fires (`DeleteRule::AbortSignal`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub on_abort: OnAbort,
    /// How many progress events each tick of `event_interval` emits, all at one instant (a tool
    /// that sends a batch): ids and store order are then as the server's scheme stamps events of
    /// one millisecond. `1` (the default, left out of traces) is one event a tick.
    #[serde(default = "one_event", skip_serializing_if = "is_one_event")]
    pub burst: u32,
    /// Run as a task, it asks its client for input after this much of its work: the task turns
    /// `input_required` and the work waits until a `tasks/update` brings the answer (ext-tasks
    /// tasks.md "Task Status": `input_required`, "Input" by `tasks/update`). The wait counts
    /// against the task's TTL, which runs from creation. `None` (the default, left out of
    /// traces): it asks for nothing. A call not made a task asks for nothing either.
    #[serde(default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub input_after: Option<Duration>,
}

impl ToolSpec {
    /// Whether, run as a task for `duration` (its own, or stretched by a run's jitter), it asks
    /// for input before its work ends (`input_after`).
    pub fn asks_for_input_within(&self, duration: Duration) -> bool {
        self.input_after.is_some_and(|after| after < duration)
    }
}

impl Default for ToolSpec {
    /// A nameless instant tool: silent, not idempotent, one event a tick.
    fn default() -> Self {
        ToolSpec {
            name: String::new(),
            duration: Duration::ZERO,
            event_interval: None,
            idempotent: false,
            side_effect: SideEffectAt::default(),
            on_abort: OnAbort::default(),
            burst: one_event(),
            input_after: None,
        }
    }
}

/// The most events one tick of a tool may emit (`ToolSpec::burst`).
pub const MAX_BURST: u32 = 1000;

const fn one_event() -> u32 {
    1
}

fn is_one_event(n: &u32) -> bool {
    *n == 1
}

/// When a tool's side effect happens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SideEffectAt {
    /// When the call starts: a cancelled run has already done it.
    #[default]
    Start,
    /// When it completes: a cancelled run never does it, one left running after its session
    /// ended still does.
    Completion,
}

/// What a tool does when its handler's abort signal fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnAbort {
    /// Ignores it and runs on.
    #[default]
    Ignore,
    /// Checks it and stops (cancelled).
    Stop,
}

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

/// Everything that decides how a client library behaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// The HTTP library under the client: whether it keeps connections alive and reuses them, and
    /// what it re-sends by itself when a kept-alive connection fails. Left out of traces at its
    /// default (one connection per exchange), so traces recorded before it existed keep their
    /// bytes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub http: HttpPolicy,
    /// How the client chooses its protocol era (`crate::era::ClientEra`: legacy, modern, or
    /// auto with its cache and fallback rules). `None` (the default, left out of traces): what
    /// `sessions` implied before the field existed, legacy with sessions and modern without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub era: Option<crate::era::ClientEra>,
    /// The Tasks extension on the client side (`crate::tasks::ClientTasks`: poll policy, durable
    /// task ids, `Mcp-Name`). The default (left out of traces) does not declare the extension.
    #[serde(default, skip_serializing_if = "is_default")]
    pub tasks: crate::tasks::ClientTasks,
    /// `subscriptions/listen` in the modern era (`crate::subscriptions::ClientSubscriptions`:
    /// whether the application listens, and what an abrupt end does). Left out of traces at its
    /// default (no listen stream; an abrupt end told to the application).
    #[serde(default, skip_serializing_if = "is_default")]
    pub subscriptions: crate::subscriptions::ClientSubscriptions,
    /// What losing the standalone `GET` stream does to the client: nothing but the stream
    /// (`survive`, the three SDKs), or the whole transport closes (`close-transport`, the Go SDK).
    /// Written into traces only when it is not `survive`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub standalone_loss: StandaloneLoss,
    /// What a `405` to the standalone `GET` means: the server offers no such stream (`accept`),
    /// or one failed attempt, retried within the reconnect attempts (`retry`). Written into
    /// traces only when it is not `accept`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub standalone_405: Standalone405,
    /// Calls wait until the standalone `GET` has its response head (or failed) before the first
    /// is sent: the client's connect returns only then (the Go SDK). Written only when set.
    #[serde(default, skip_serializing_if = "is_false")]
    pub await_standalone_head: bool,
}

/// What losing the standalone stream does (`ClientPolicy::standalone_loss`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StandaloneLoss {
    /// Only the stream is lost; calls go on.
    #[default]
    Survive,
    /// The transport closes: a first standalone `GET` whose connection broke before an answer, a
    /// reconnect refused with any status, or a stream given up fails every call in flight, and
    /// every later call at once ("not connected"); one refused before the first call fails the
    /// initialization. Any status to the first `GET` counts as `405` (its body is no event
    /// stream).
    CloseTransport,
}

/// What a `405` to the standalone `GET` means (`ClientPolicy::standalone_405`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standalone405 {
    /// The server offers no standalone stream: none is opened again.
    #[default]
    Accept,
    /// One failed attempt: retried after the backoff, within the reconnect attempts.
    Retry,
}

/// The client's HTTP connection pool (`ClientPolicy::http`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpPolicy {
    /// Keep a connection open after a complete response and send a later request on it (HTTP/1.1
    /// keep-alive); `false`: every exchange opens its own connection and closes it at its end.
    #[serde(default)]
    pub keep_alive: bool,
    /// The client closes a pooled connection that stayed idle this long; `None` for never.
    #[serde(default, with = "serde_opt_duration")]
    pub idle_expiry: Option<Duration>,
    /// What the library re-sends by itself, on a fresh connection, when a kept-alive connection
    /// fails under a request.
    #[serde(default)]
    pub retry: HttpRetry,
    /// Which complete responses leave their connection reusable (with `keep_alive`). Written
    /// only when it is not `any`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub reuse_after: ReuseAfter,
    /// The library gives up a request whose response head has not come this long after it was
    /// sent (Node's `fetch`: undici's `headersTimeout`); `None` for never. Written only when set.
    #[serde(default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub headers_timeout: Option<Duration>,
    /// The library gives up a response whose body carried no byte this long, an SSE comment
    /// counting as one (undici's `bodyTimeout`, httpx's read timeout): it closes its side and the
    /// SDK sees a broken stream, while the server learns of it only as its `dead_stream` rule
    /// says. `None` for never. Written only when set.
    #[serde(default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub body_timeout: Option<Duration>,
}

/// Which complete responses leave a kept-alive connection reusable (`HttpPolicy::reuse_after`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReuseAfter {
    /// Every response that came to its end.
    #[default]
    Any,
    /// Only a response with a JSON body, which the library reads to its end; a client that stops
    /// reading an event stream once it has its answer, or leaves a bodiless 202 unread, leaves the
    /// pool a connection it must close (mcp 2.3.0's Python client over httpx2).
    JsonBody,
}

/// What a client's HTTP library re-sends by itself when a reused (kept-alive) connection fails
/// before any byte of the response came back. A connection whose close the library had already
/// seen is never reused (every pool drops it), so this is about a close still on its way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HttpRetry {
    /// Only a request that could not be written (the connection was found closed as it was
    /// sent): it never left, so sending it again is safe. A request that was written and then
    /// met the close fails to the caller.
    #[default]
    Unsent,
    /// Also a request that was written: any request on a reused connection that ended before a
    /// response byte is sent again once, whatever its method (a POST included).
    ReusedBeforeResponse,
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
#[serde(deny_unknown_fields)]
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
    /// What a call gets whose POST stream (answered 200, an event stream) ended, cleanly or
    /// broken, before its response and before any event id arrived on it, so that
    /// `resume_post_needs_event_id` does not resume it: `fail-call`, an error at once (Python,
    /// rmcp), or `leave-pending`, only its request timeout resolves it (TypeScript). A POST that
    /// broke before its head fails at once either way. Written into traces only when it is not
    /// `fail-call`.
    #[serde(default, skip_serializing_if = "OnGiveUp::is_default")]
    pub on_unresumable_post: OnGiveUp,
    /// Whether the `Last-Event-ID` a stream was resumed with survives a second break that comes
    /// before any id-bearing event arrived on the resumed connection. `false` is
    /// typescript-sdk#2499: the next reconnect goes without `Last-Event-ID`. Written into traces
    /// only when `false`.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub resume_token_survives_recut: bool,
    /// Which answers to a request carrying the session the SDK reads as "session not found",
    /// and so handles by `on_404` (any other failed answer fails the call, or counts as a failed
    /// reconnect). Written into traces only when it is not `["404"]`.
    #[serde(default = "lost_404", skip_serializing_if = "is_lost_404")]
    pub lost_session_answers: Vec<LostSessionAnswer>,
    /// Whether such an answer to a resume `GET` is handled by `on_404` too; `false`: it is one
    /// failed reconnect attempt (all three SDKs). Written into traces only when set.
    #[serde(default, skip_serializing_if = "is_false")]
    pub lost_session_on_resume: bool,
    /// Whether a `405` to a call's resume `GET` ends that stream's reconnecting (the server
    /// offers no GET stream, so no resume can succeed), the call then as `on_give_up` says;
    /// `false`: one failed attempt like any other refusal (Python). Written into traces only
    /// when set.
    #[serde(default, skip_serializing_if = "is_false")]
    pub resume_405_ends_stream: bool,
    /// Whether any refusal of a call's resume `GET` (an answer that is not 2xx: a `400`, `409`,
    /// `410`, `5xx`, or a `404` when `lost_session_on_resume` is not set) ends that stream's
    /// reconnecting, the call then as `on_give_up` says; `false`: one failed attempt (TypeScript,
    /// Python, rmcp). The Go SDK v1.7.0 fails its whole connection on any such answer
    /// (`handleSSE`'s `checkResponse`). Written into traces only when set.
    #[serde(default, skip_serializing_if = "is_false")]
    pub refused_resume_ends_stream: bool,
    /// Whether a call's resumed connection (a `GET` with `Last-Event-ID` answered 200) that ends,
    /// cleanly or broken, before an event id arrived on it is given up as an unresumable `POST`
    /// is (`on_unresumable_post`): the SDK keeps its cursor per connection and, finding none, ends
    /// the call (the Go SDK v1.7.0: "request terminated without response"). `false`: it is
    /// resumed again as `resume_token_survives_recut` and `on_empty_resume` say. Written into
    /// traces only when set.
    #[serde(default, skip_serializing_if = "is_false")]
    pub resumed_needs_event_id: bool,
    /// In the modern era (2026-07-28): whether a call whose stream broke is re-issued with a new
    /// id (`true`, the revision's rule, changelog.mdx:28) or handled by these rules like a legacy
    /// stream (`false`: the Go SDK v1.7.0, whose modern streams carry no event id, so a break
    /// ends the call as `on_unresumable_post` says). Written into traces only when `false`.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub modern_reissue: bool,
}

/// An answer a client may read as "session not found" (`SdkRules::lost_session_answers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LostSessionAnswer {
    /// `404 Not Found` (the spec).
    #[serde(rename = "404")]
    NotFound404,
    /// `400 Bad Request`.
    #[serde(rename = "400")]
    BadRequest400,
    /// `503 Service Unavailable`.
    #[serde(rename = "503")]
    Unavailable503,
    /// A JSON-RPC error with code `-32001` ("Session not found"), whatever the status.
    #[serde(rename = "rpc-error")]
    RpcError,
}

impl LostSessionAnswer {
    /// The status this answer is, if it is one.
    pub fn status(self) -> Option<u16> {
        match self {
            LostSessionAnswer::NotFound404 => Some(404),
            LostSessionAnswer::BadRequest400 => Some(400),
            LostSessionAnswer::Unavailable503 => Some(503),
            LostSessionAnswer::RpcError => None,
        }
    }
}

/// The JSON-RPC error code servers use for "Session not found".
pub const SESSION_NOT_FOUND_CODE: i64 = -32001;

fn lost_404() -> Vec<LostSessionAnswer> {
    vec![LostSessionAnswer::NotFound404]
}

fn is_lost_404(answers: &Vec<LostSessionAnswer>) -> bool {
    *answers == lost_404()
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
    /// The whole transport closes: this call and every other in flight fail, every later call
    /// fails at once ("not connected"), the session is forgotten without a `DELETE` (the Go SDK
    /// v1.7.0: `streamableClientConn.fail`, as `StandaloneLoss::CloseTransport` for the `GET`).
    CloseTransport,
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
    /// The whole transport closes: every call in flight fails, every later call fails at once
    /// ("not connected"), the dead id is forgotten and nothing re-initializes; the application
    /// must connect anew (the Go SDK v1.7.0: `ErrSessionMissing` fails the connection).
    CloseTransport,
}

impl On404 {
    /// The rule as a profile spells it (`client.close_handling.on_404`), for the trace's notes.
    pub fn name(self) -> &'static str {
        match self {
            On404::FailKeepSession => "fail-keep-session",
            On404::ReinitializeResendOnce => "reinitialize-resend-once",
            On404::ReinitializeUnknownOutcome => "reinitialize-unknown-outcome",
            On404::CloseTransport => "close-transport",
        }
    }
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
#[serde(deny_unknown_fields)]
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

/// The load balancer between client and server, and the replicas behind it: the part of "your
/// own system" between the client library and the MCP server, as data. Every field but
/// `idle_timeout` is written into traces only when it differs from its default (one replica,
/// today's balancer), so traces recorded before the fields existed keep their bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LbConfig {
    /// Close a connection that carried no bytes (either way) for this long; `None` for never.
    #[serde(with = "serde_opt_duration")]
    pub idle_timeout: Option<Duration>,
    /// Close a connection this long after it opened, however busy (a CDN's maximum response
    /// time, e.g. 100 s); `None` for never.
    #[serde(default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub max_lifetime: Option<Duration>,
    /// Which sides a cut (idle or lifetime) closes.
    #[serde(default, skip_serializing_if = "CutMode::is_default")]
    pub cut_mode: CutMode,
    /// Hold a response's head until its first body frame (an SSE event or comment, a JSON body)
    /// has come, as some CDNs do; a cut before any body frame was relayed then answers the client
    /// `502` instead of ending a `200` (agentdeals#1098, TryGhost/ghst#118).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hold_headers: bool,
    /// Server replicas behind the balancer (1 to [`MAX_REPLICAS`]).
    #[serde(default = "one_replica", skip_serializing_if = "is_one_replica")]
    pub replicas: u32,
    /// How a new connection picks its replica.
    #[serde(default, skip_serializing_if = "Routing::is_default")]
    pub routing: Routing,
    /// Where the replicas keep sessions and event logs.
    #[serde(default, skip_serializing_if = "ReplicaStore::is_default")]
    pub store: ReplicaStore,
    /// Intermediaries in front of the balancer, the client's side first (`hops[0]` is the one the
    /// client connects to, e.g. a CDN). Each connection passes every hop, then the balancer. In
    /// traces and fault targets the hops are `hop0`, `hop1`, … and the balancer itself is the last
    /// one, `hopN` (N = the number of hops).
    #[serde(default, deserialize_with = "hops_or_none", skip_serializing_if = "Vec::is_empty")]
    pub hops: Vec<HopConfig>,
    /// Keep upstream connections to the replicas alive and send later requests on them (a pool
    /// per replica, each idle connection closed after `idle_timeout`); `false`: one upstream
    /// connection per request. A client connection is kept alive whenever the client asks for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub upstream_keep_alive: bool,
    /// Which requests the balancer sends again, once, on a fresh upstream connection when the
    /// upstream connection ends before any byte of the response.
    #[serde(default, skip_serializing_if = "UpstreamRetry::is_default")]
    pub retry_upstream: UpstreamRetry,
    /// The balancer's idle rule for a client connection kept alive between two exchanges (no
    /// request on it): `idle` (the default) applies `idle_timeout` there too; a duration or
    /// `none` makes `idle_timeout` a rule of open responses only, as nginx's
    /// `proxy_read_timeout` and HAProxy's `timeout server` are (measured: `docs/reality.md`,
    /// 'Proxies').
    #[serde(default, skip_serializing_if = "KeepAliveIdle::is_default")]
    pub keep_alive_timeout: KeepAliveIdle,
}

/// How an intermediary closes a client connection kept alive between two exchanges
/// ([`LbConfig::keep_alive_timeout`], [`HopConfig::keep_alive_timeout`]). Written `"idle"`,
/// `"none"` or a duration (`"75s"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeepAliveIdle {
    /// The hop's `idle_timeout` applies between exchanges too (today's model: one idle clock).
    #[default]
    Idle,
    /// Closed after this long without a request (nginx `keepalive_timeout`, 75 s by default).
    After(Duration),
    /// Never closed for idleness between exchanges.
    Never,
}

impl KeepAliveIdle {
    fn is_default(&self) -> bool {
        *self == KeepAliveIdle::Idle
    }

    /// The timeout between exchanges, given the hop's `idle_timeout`.
    pub fn between(self, idle_timeout: Option<Duration>) -> Option<Duration> {
        match self {
            KeepAliveIdle::Idle => idle_timeout,
            KeepAliveIdle::After(d) => Some(d),
            KeepAliveIdle::Never => None,
        }
    }
}

impl Serialize for KeepAliveIdle {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            KeepAliveIdle::Idle => s.serialize_str("idle"),
            KeepAliveIdle::Never => s.serialize_str("none"),
            KeepAliveIdle::After(d) => s.serialize_str(&crate::time::format_duration(*d)),
        }
    }
}

impl<'de> Deserialize<'de> for KeepAliveIdle {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.as_str() {
            "idle" => Ok(KeepAliveIdle::Idle),
            "none" => Ok(KeepAliveIdle::Never),
            t => crate::time::parse_duration(t).map(KeepAliveIdle::After).map_err(|e| {
                serde::de::Error::custom(format!("keep_alive_timeout: {e} (expected \"idle\", \"none\" or a duration)"))
            }),
        }
    }
}

/// What a balancer re-sends when an upstream connection ends before any byte of the response
/// (`LbConfig::retry_upstream`). Without a re-send, a request that went out on a reused upstream
/// connection is answered `502`; one on a fresh connection has its client connection closed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpstreamRetry {
    /// Nothing (an ALB).
    #[default]
    Never,
    /// `GET` and `DELETE` (nginx's `proxy_next_upstream error`: a `POST` already sent is not
    /// passed on since 1.9.13).
    Idempotent,
    /// Every request, a `POST` included (nginx with `non_idempotent`, Envoy's `retry_on: reset`).
    Any,
}

impl UpstreamRetry {
    fn is_default(&self) -> bool {
        *self == UpstreamRetry::default()
    }
}

/// The most hops a chain may have in front of the balancer.
pub const MAX_HOPS: usize = 4;

fn hops_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<HopConfig>, D::Error> {
    Ok(Option::<Vec<HopConfig>>::deserialize(d)?.unwrap_or_default())
}

/// One intermediary of the chain in front of the balancer (a CDN, a reverse proxy): it proxies
/// every connection, cuts those silent or old, and may hold back what the server sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopConfig {
    /// Close a connection that carried no bytes through this hop for this long; `None` for never.
    #[serde(default, with = "serde_opt_duration")]
    pub idle_timeout: Option<Duration>,
    /// Close a connection this long after it opened, however busy (CDNs: 100 s); `None` for never.
    #[serde(default, with = "serde_opt_duration")]
    pub max_lifetime: Option<Duration>,
    /// Whether SSE comments (`: keepalive`) count as bytes for the idle timeout. A proxy that
    /// parses the stream may only count events.
    #[serde(default = "yes")]
    pub comments_count: bool,
    /// Which sides a cut closes.
    #[serde(default)]
    pub cut_mode: CutMode,
    /// Hold each response's head until its first body frame (a cut before it answers 502).
    #[serde(default)]
    pub hold_headers: bool,
    /// Answer `timeout_status` and cut when no response head came through this long after the
    /// request (a first-byte timeout); `None` for never.
    #[serde(default, with = "serde_opt_duration")]
    pub first_byte_timeout: Option<Duration>,
    /// The status of a first-byte timeout: 504 (most proxies) or 524 (Cloudflare).
    #[serde(default = "gateway_timeout")]
    pub timeout_status: u16,
    /// Response buffering: body frames are held back until this many bytes are waiting (then all
    /// go at once), e.g. `"4KiB"`; `None` for no size threshold.
    #[serde(default, with = "serde_opt_bytes")]
    pub buffer: Option<u64>,
    /// Response buffering: what is held back goes out at the latest this long after its first
    /// frame arrived; `None` for no time limit (only the size threshold or the end of the
    /// response release it).
    #[serde(default, with = "serde_opt_duration")]
    pub flush_interval: Option<Duration>,
    /// The hop keeps back the last frame it got (an event, a comment) until the next frame, or
    /// the end of the response, pushes it out: a gateway whose buffer always holds the tail of
    /// the stream (a compressing proxy that flushes only when more comes). On a stream that stays
    /// open its final frame is never flushed; a cut loses it. Left out when `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hold_tail: bool,
    /// Response buffering: the head waits in the buffer with the body and goes out with the first
    /// release (size threshold, flush interval or the end), as nginx's `proxy_buffering` does
    /// (measured: `docs/reality.md`, 'Proxies'); `false` (the default): the head goes on at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub buffer_head: bool,
    /// This hop's idle rule between two exchanges on a kept-alive client connection (see
    /// [`KeepAliveIdle`]); `idle` (the default): `idle_timeout` applies there too.
    #[serde(default, skip_serializing_if = "KeepAliveIdle::is_default")]
    pub keep_alive_timeout: KeepAliveIdle,
    /// Request headers this hop does not pass on (a header allowlist, a gateway that rebuilds
    /// each request): the server gets the request without them and cannot know it was sent
    /// with them. Left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_request_headers: Vec<RequestHeader>,
    /// Response headers this hop does not pass on (a gateway that rebuilds each response from
    /// its body, status and content type): the client gets the answer without them. Left out
    /// when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_response_headers: Vec<ResponseHeader>,
}

/// A response header of the transport that a hop may drop (`HopConfig::drop_response_headers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResponseHeader {
    /// `Mcp-Session-Id`: the answer to `initialize` reaches the client without its session, so
    /// the client goes on without one while the server keeps the session it created.
    McpSessionId,
}

impl ResponseHeader {
    /// The header's name on the wire.
    pub fn wire_name(self) -> &'static str {
        match self {
            ResponseHeader::McpSessionId => "Mcp-Session-Id",
        }
    }
}

/// A request header of the transport that a hop may drop (`HopConfig::drop_request_headers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RequestHeader {
    /// `Last-Event-ID`: a resume reaches the server as a fresh `GET`. The server opens a new
    /// stream and replays nothing, and it cannot refuse an id it never saw.
    LastEventId,
    /// `Mcp-Session-Id`: every request reaches the server without its session.
    McpSessionId,
}

impl RequestHeader {
    /// The header's name on the wire.
    pub fn wire_name(self) -> &'static str {
        match self {
            RequestHeader::LastEventId => "Last-Event-ID",
            RequestHeader::McpSessionId => "Mcp-Session-Id",
        }
    }
}

const fn gateway_timeout() -> u16 {
    504
}

impl Default for HopConfig {
    /// A transparent hop: no timeouts, no buffering.
    fn default() -> Self {
        HopConfig {
            idle_timeout: None,
            max_lifetime: None,
            comments_count: true,
            cut_mode: CutMode::default(),
            hold_headers: false,
            first_byte_timeout: None,
            timeout_status: gateway_timeout(),
            buffer: None,
            flush_interval: None,
            hold_tail: false,
            buffer_head: false,
            keep_alive_timeout: KeepAliveIdle::Idle,
            drop_request_headers: Vec::new(),
            drop_response_headers: Vec::new(),
        }
    }
}

impl HopConfig {
    /// Whether this hop holds response frames back.
    pub fn buffers(&self) -> bool {
        self.buffer.is_some() || self.flush_interval.is_some()
    }
}

/// Serde helper for an optional byte count: `"4KiB"`, `"512B"`, `"1MiB"` or a plain integer;
/// `null` (or `"none"`) for none. Written back in the largest unit that divides it.
pub mod serde_opt_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes a byte count as text (`4KiB`), or null.
    pub fn serialize<S: Serializer>(b: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match b {
            Some(b) => s.serialize_str(&format_bytes(*b)),
            None => s.serialize_none(),
        }
    }

    /// Reads a byte count written as text or as an integer, or null.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Option::<Raw>::deserialize(d)? {
            None => Ok(None),
            Some(Raw::N(n)) => Ok(Some(n)),
            Some(Raw::S(t)) if t == "none" => Ok(None),
            Some(Raw::S(t)) => parse_bytes(&t).map(Some).map_err(serde::de::Error::custom),
        }
    }

    /// Parses `4KiB`, `512B`, `1MiB`, `4096`.
    pub fn parse_bytes(text: &str) -> Result<u64, String> {
        let t = text.trim();
        let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let n: u64 = t[..digits].parse().map_err(|_| format!("{text:?} is not a size (e.g. 4KiB, 512B)"))?;
        let unit = match t[digits..].trim() {
            "" | "B" => 1,
            "KiB" | "K" | "KB" => 1024,
            "MiB" | "M" | "MB" => 1024 * 1024,
            other => return Err(format!("{text:?}: unknown unit {other:?} (B, KiB, MiB)")),
        };
        n.checked_mul(unit).ok_or_else(|| format!("{text:?} is too large"))
    }

    /// `4096` → `4KiB`.
    pub fn format_bytes(b: u64) -> String {
        match b {
            0 => "0B".to_string(),
            b if b % (1024 * 1024) == 0 => format!("{}MiB", b / (1024 * 1024)),
            b if b % 1024 == 0 => format!("{}KiB", b / 1024),
            b => format!("{b}B"),
        }
    }
}

/// The most server replicas a balancer may have.
pub const MAX_REPLICAS: u32 = 16;

const fn one_replica() -> u32 {
    1
}

fn is_one_replica(n: &u32) -> bool {
    *n == 1
}

impl Default for LbConfig {
    /// No idle timeout, no lifetime, one replica.
    fn default() -> Self {
        LbConfig {
            idle_timeout: None,
            max_lifetime: None,
            cut_mode: CutMode::default(),
            hold_headers: false,
            replicas: 1,
            routing: Routing::default(),
            store: ReplicaStore::default(),
            hops: Vec::new(),
            upstream_keep_alive: false,
            retry_upstream: UpstreamRetry::default(),
            keep_alive_timeout: KeepAliveIdle::Idle,
        }
    }
}

/// Which sides of a proxied connection a cut closes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CutMode {
    /// Both: the client sees its stream end, the server a disconnect.
    #[default]
    Both,
    /// The client side only: the upstream connection stays open, so the server never learns the
    /// stream died and keeps it registered (writing events nobody reads).
    ClientSide,
}

impl CutMode {
    fn is_default(&self) -> bool {
        *self == CutMode::default()
    }
}

/// How the balancer picks a replica for a new connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Routing {
    /// Each new connection goes to the next replica in turn.
    #[default]
    RoundRobin,
    /// By `Mcp-Session-Id`: the balancer learns a session's replica from the answer that
    /// created it (the header on the `initialize` response) and sends every later request of
    /// the session there; requests without a known session go round-robin.
    StickySession,
    /// By client address: one client always reaches the same replica.
    StickyClient,
    /// A replica drawn at random for each connection (the draws come from the run's seed).
    Random,
}

impl Routing {
    fn is_default(&self) -> bool {
        *self == Routing::default()
    }
}

/// Where the replicas keep sessions and event logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplicaStore {
    /// Each replica its own: a session lives on the replica that created it and dies with it.
    #[default]
    Local,
    /// One store all replicas consult (modelled as one server state machine behind every
    /// replica): a session survives the restart of a replica, which only cuts that replica's
    /// connections.
    Shared,
}

impl ReplicaStore {
    fn is_default(&self) -> bool {
        *self == ReplicaStore::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::{self, Role};

    /// The serialized form of a policy is the `scenario` of every trace header: a field left at
    /// its default is not written (so traces recorded before it existed keep their bytes), and a
    /// field written is read back as it was.
    const REFERENCE_SERVER: &str = r#"{"name":"reference","event_ids":"reference","store":"per-session","retention":{"max_events":100,"window":null,"drop_on_response":false},"replay":"after","unknown_id":"gone410","evicted_id":"gone410","priming":{"post":true,"standalone":true,"resume":true},"retry_ms":null,"keepalive":null,"idle_ttl":"30m","idle_rule":"never-while-busy","delete_running_tool":"cancel","delete_unknown_status":404,"second_get":"reject409","honour_idempotency_keys":false,"sessions":true,"disconnect_cancels":false,"fresh_get":"buffered"}"#;
    const REFERENCE_CLIENT: &str = r#"{"name":"reference","close_handling":{"kind":"decision-procedure"},"persistence":"durable","reconnect":{"initial":"1s","factor":2.0,"max":"30s","max_attempts":20,"counter_reset":"on-successful-reconnect","retry_field":"at-least","first_immediate":false,"jitter":0.2},"request_timeout":null,"open_standalone_stream":false,"send_idempotency_keys":false,"sessions":true,"max_unhonoured_resumes":3,"report_stream_given_up":true,"tasks":{"declares":false,"honour_poll_interval":true,"poll_every":"1s","persist_ids":true,"sends_mcp_name":true,"not_found":"lost"}}"#;
    const DEFAULT_LB: &str = r#"{"idle_timeout":null}"#;
    const DEFAULT_HOP: &str = r#"{"idle_timeout":null,"max_lifetime":null,"comments_count":true,"cut_mode":"both","hold_headers":false,"first_byte_timeout":null,"timeout_status":504,"buffer":null,"flush_interval":null}"#;

    /// The name a note prints is the one a profile file reads.
    #[test]
    fn on_404_names_are_the_profile_spelling() {
        for rule in [
            On404::FailKeepSession,
            On404::ReinitializeResendOnce,
            On404::ReinitializeUnknownOutcome,
            On404::CloseTransport,
        ] {
            assert_eq!(serde_json::to_value(rule).expect("a unit variant serializes"), rule.name(), "{rule:?}");
        }
    }

    #[test]
    fn fields_at_their_default_are_left_out_of_the_serialized_form() {
        assert_eq!(json(&profiles::server("reference").unwrap()), REFERENCE_SERVER);
        assert_eq!(json(&profiles::client("reference").unwrap()), REFERENCE_CLIENT);
        assert_eq!(json(&LbConfig::default()), DEFAULT_LB);
        assert_eq!(json(&HopConfig::default()), DEFAULT_HOP);
        // What the left-out fields read as: "Session not found" is -32001 (the TypeScript SDK's
        // code), a GET without a session is answered 405.
        let reference = profiles::server("reference").unwrap();
        assert_eq!((reference.unknown_session_code, reference.sessionless_get_status), (-32001, 405));
        // A server without sessions refuses a GET unless it says it holds it open; only then is
        // the field written, so traces recorded before it keep their bytes.
        assert_eq!(reference.sessionless_get, SessionlessGet::Refuse);
        let holds = ServerPolicy { sessionless_get: SessionlessGet::HoldOpen, ..reference.clone() };
        assert!(json(&holds).contains(r#""sessionless_get":"hold-open""#), "{}", json(&holds));
        for (value, second_get) in [
            ("empty-closed", SecondGet::EmptyClosed),
            ("end-session", SecondGet::EndSession),
            ("restart-process", SecondGet::RestartProcess),
        ] {
            let p = ServerPolicy { second_get, ..reference.clone() };
            assert!(json(&p).contains(&format!(r#""second_get":"{value}""#)), "{}", json(&p));
            let back: ServerPolicy = serde_json::from_str(&json(&p)).expect("reads back");
            assert_eq!(back.second_get, second_get);
        }
        // A hop written with nothing but its name of a field times out with 504.
        let hop: HopConfig = serde_json::from_str("{}").expect("every hop field has a default");
        assert_eq!(hop.timeout_status, 504);
        // An SDK client that fails the call when it gives up a stream (the default) does not say so.
        for name in ["ts-sdk", "py-sdk", "rmcp"] {
            let client = profiles::client(name).unwrap();
            let CloseHandling::Sdk(rules) = &client.close_handling else { panic!("{name} has SDK rules") };
            assert_eq!(json(&client).contains("on_give_up"), rules.on_give_up != OnGiveUp::FailCall, "{name}");
            // Each reads only a 404 as "session not found", the default, which is not written.
            assert_eq!(rules.lost_session_answers, vec![LostSessionAnswer::NotFound404], "{name}");
            assert!(!json(&client).contains("lost_session_answers"), "{name}");
        }
        // A tool emits one event a tick unless its burst says more, and the default is not written.
        let tool = ToolSpec::default();
        assert_eq!(tool.burst, 1);
        assert!(!json(&tool).contains("burst"), "{}", json(&tool));
        round_trip(&ToolSpec { burst: 5, ..ToolSpec::default() });
    }

    #[test]
    fn a_resume_token_that_survives_a_recut_is_left_out_and_only_the_ts_bug_is_written() {
        for (name, written) in [("py-sdk", false), ("rmcp", false), ("ts-sdk", true)] {
            let client = profiles::client(name).unwrap();
            let CloseHandling::Sdk(rules) = &client.close_handling else { panic!("{name} has SDK rules") };
            assert_eq!(rules.resume_token_survives_recut, !written, "{name}");
            let text = json(&client);
            assert_eq!(text.contains(r#""resume_token_survives_recut":false"#), written, "{name}: {text}");
            assert!(!text.contains(r#""resume_token_survives_recut":true"#), "{name}: {text}");
            round_trip(&client);
        }
    }

    #[test]
    fn an_event_store_reads_kept_or_none_and_an_absent_value_as_none() {
        let read = |v: serde_json::Value| serde_json::from_value::<EventStoreMode>(v).map_err(|e| e.to_string());
        assert_eq!(read(serde_json::json!("kept")), Ok(EventStoreMode::Kept));
        assert_eq!(read(serde_json::json!("none")), Ok(EventStoreMode::NoStore));
        assert_eq!(read(serde_json::Value::Null), Ok(EventStoreMode::NoStore));
        assert_eq!(
            read(serde_json::json!("teapot")),
            Err("unknown variant `teapot`, expected `kept` or `none`".into())
        );
        let server = ServerPolicy { event_store: EventStoreMode::NoStore, ..profiles::server("reference").unwrap() };
        assert!(json(&server).contains(r#""event_store":"none""#), "{}", json(&server));
        round_trip(&server);
    }

    #[test]
    fn a_sessionless_server_answering_get_with_another_status_than_405_says_so() {
        let mut server = profiles::server("stateless-2026").unwrap();
        assert_eq!(server.sessionless_get_status, 405);
        assert!(!json(&server).contains("sessionless_get_status"), "{}", json(&server));
        server.sessionless_get_status = 400;
        assert!(json(&server).contains(r#""sessionless_get_status":400"#), "{}", json(&server));
        round_trip(&server);
    }

    fn json<T: Serialize>(value: &T) -> String {
        serde_json::to_string(value).expect("policies are plain data")
    }

    fn round_trip<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
        let text = json(value);
        let back: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(&back, value, "{text}");
    }

    #[test]
    fn every_builtin_policy_reads_back_from_its_serialized_form() {
        for n in Role::Client.names() {
            round_trip(&profiles::client(n).unwrap());
        }
        for n in Role::Server.names() {
            round_trip(&profiles::server(n).unwrap());
        }
        for n in Role::Lb.names() {
            round_trip(&profiles::lb(n).unwrap());
        }
        // A server whose "session not found" is another code than the default -32001.
        let mut server = profiles::server("reference").unwrap();
        server.unknown_session_code = -32600;
        round_trip(&server);
        // Change notifications on, over the default bus (left out) and over a shared one.
        server.subscriptions.changes = true;
        round_trip(&server);
        assert!(json(&server).contains(r#""subscriptions":{"changes":true}"#), "{}", json(&server));
        server.subscriptions.bus = crate::subscriptions::Bus::Shared;
        round_trip(&server);
        // A client that reads a 400 as "session not found" too (the default is the 404 alone).
        let mut client = profiles::client("ts-sdk").unwrap();
        let CloseHandling::Sdk(rules) = &mut client.close_handling else { panic!("ts-sdk has SDK rules") };
        rules.lost_session_answers.push(LostSessionAnswer::BadRequest400);
        round_trip(&client);
    }

    #[test]
    fn a_balancer_with_no_field_at_its_default_reads_back() {
        let hop = HopConfig {
            hold_tail: true,
            buffer_head: true,
            buffer: Some(1500),
            keep_alive_timeout: KeepAliveIdle::After(Duration::from_secs(5)),
            drop_request_headers: vec![RequestHeader::LastEventId],
            drop_response_headers: vec![ResponseHeader::McpSessionId],
            ..HopConfig::default()
        };
        let lb = LbConfig {
            idle_timeout: Some(Duration::from_secs(60)),
            max_lifetime: Some(Duration::from_secs(100)),
            cut_mode: CutMode::ClientSide,
            hold_headers: true,
            replicas: 3,
            routing: Routing::StickySession,
            store: ReplicaStore::Shared,
            hops: vec![hop],
            upstream_keep_alive: true,
            retry_upstream: UpstreamRetry::Idempotent,
            keep_alive_timeout: KeepAliveIdle::Never,
        };
        round_trip(&lb);
        let text = serde_json::to_string(&lb).unwrap();
        assert!(text.contains(r#""buffer":"1500B""#) && text.contains(r#""replicas":3"#), "{text}");
    }

    #[test]
    fn sizes_read_and_write_in_bytes_kib_and_mib() {
        use serde_opt_bytes::{format_bytes, parse_bytes};
        assert_eq!(format_bytes(1500), "1500B");
        assert_eq!(format_bytes(4096), "4KiB");
        assert_eq!(format_bytes(3 * 1024 * 1024), "3MiB");
        assert_eq!(format_bytes(0), "0B");
        assert_eq!(parse_bytes(" 4KiB "), Ok(4096));
        assert_eq!(parse_bytes("512B"), Ok(512));
        assert_eq!(parse_bytes("2M"), Ok(2 * 1024 * 1024));
        assert!(parse_bytes("4GiB").unwrap_err().contains("unknown unit"));
        assert!(parse_bytes("KiB").unwrap_err().contains("not a size"));
        assert!(parse_bytes(&format!("{}MiB", u64::MAX)).is_err());
        let hop =
            |buffer: &str| serde_json::from_str::<HopConfig>(&format!(r#"{{"buffer":{buffer}}}"#)).map(|h| h.buffer);
        assert_eq!(hop(r#""none""#).unwrap(), None);
        assert_eq!(hop(r#""4KiB""#).unwrap(), Some(4096));
        assert_eq!(hop("100").unwrap(), Some(100));
        assert!(hop(r#""lots""#).is_err());
    }

    #[test]
    fn dropped_headers_are_named_as_on_the_wire() {
        assert_eq!(RequestHeader::LastEventId.wire_name(), "Last-Event-ID");
        assert_eq!(RequestHeader::McpSessionId.wire_name(), "Mcp-Session-Id");
        assert_eq!(ResponseHeader::McpSessionId.wire_name(), "Mcp-Session-Id");
    }
}
