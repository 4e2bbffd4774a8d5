//! Turns what the probe saw on the wire into the simulator's trace schema, stamped with
//! wall-clock microseconds since the probe scenario started.
//!
//! Client-side steps (`send`, `response`, `event`, `comment`, `json`, `conn-end`) and the
//! application's view (`app-*`) are what was observed. Server-side steps cannot be observed from
//! outside; the few the oracles need are *inferred* and marked so in the header: `session-created`
//! from an `Mcp-Session-Id` answer, `event-stored` from an event that arrived (and, for progress
//! ticks the tool's own counter says it sent but that never arrived, with an `unseen:` id), and
//! `side-effect` from the probe tool's execution counter (`probe_count`).

use mcpsim_model::http::ServerMessage;
use mcpsim_model::ids::{CallKey, EventId, RequestId, SessionId, StreamNo};
use mcpsim_model::trace::{Actor, Step, StepKind, Trace};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// The steps of one probe scenario.
#[derive(Debug)]
pub struct Recorder {
    start: Instant,
    steps: Vec<Step>,
    /// JSON-RPC id → the call it carries (tools/call of the scripted application).
    calls: BTreeMap<u64, CallKey>,
    /// JSON-RPC ids of `initialize` requests.
    inits: BTreeSet<u64>,
    /// `(session, id)` already written as `event-stored`, with the message stored under it.
    stored: BTreeMap<(String, String), Option<ServerMessage>>,
    /// Event ids the server used for two different events of one session.
    reused: Vec<String>,
    /// Events read by the scenario's exchanges, and the bytes of their fields.
    events_read: usize,
    event_bytes: usize,
    /// One line per bound of [`crate::probe::limits`] that was hit.
    caps: Vec<String>,
}

/// A recorder shared by the tasks of one scenario.
#[derive(Clone, Debug)]
pub struct Rec(Arc<Mutex<Recorder>>);

impl Rec {
    /// An empty recorder.
    pub fn new() -> Self {
        Rec(Arc::new(Mutex::new(Recorder {
            start: Instant::now(),
            steps: Vec::new(),
            calls: BTreeMap::new(),
            inits: BTreeSet::new(),
            stored: BTreeMap::new(),
            reused: Vec::new(),
            events_read: 0,
            event_bytes: 0,
            caps: Vec::new(),
        })))
    }

    /// Counts an event read by one of the scenario's exchanges against the scenario's bounds;
    /// the line to report when this event passes one (the exchange then stops reading).
    pub fn count_event(&self, e: &crate::probe::recorder::sse::RawEvent) -> Option<String> {
        use crate::probe::limits::{MAX_EVENTS_PER_SCENARIO, MAX_TRACE_EVENT_BYTES};
        let mut r = self.lock();
        r.events_read += 1;
        r.event_bytes += e.id.as_ref().map_or(0, String::len)
            + e.event.as_ref().map_or(0, String::len)
            + e.data.as_ref().map_or(0, String::len);
        let line = if r.events_read > MAX_EVENTS_PER_SCENARIO {
            format!("cap: more than {MAX_EVENTS_PER_SCENARIO} events in one scenario; the probe closed the stream and kept the events before")
        } else if r.event_bytes > MAX_TRACE_EVENT_BYTES {
            format!("cap: more than {MAX_TRACE_EVENT_BYTES} bytes of events in one scenario's trace; the probe closed the stream and kept the events before")
        } else {
            return None;
        };
        drop(r);
        self.note_cap(line.clone());
        Some(line)
    }

    /// Notes a bound that was hit (once per line).
    pub fn note_cap(&self, line: String) {
        let mut r = self.lock();
        if !r.caps.contains(&line) {
            r.caps.push(line);
        }
    }

    /// The bounds hit, one line each.
    pub fn caps(&self) -> Vec<String> {
        self.lock().caps.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Recorder> {
        // A panic while holding the lock cannot leave a half-written step: recover the data.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Microseconds since the scenario started.
    pub fn now_us(&self) -> u64 {
        u64::try_from(self.lock().start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Appends a step stamped now.
    pub fn push(&self, actor: Actor, kind: StepKind) {
        let mut r = self.lock();
        let t = u64::try_from(r.start.elapsed().as_micros()).unwrap_or(u64::MAX);
        let seq = r.steps.len() as u64;
        r.steps.push(Step { seq, t, actor, client: None, replica: None, conn_client: None, kind });
    }

    /// Notes that JSON-RPC id `id` carries `call`.
    pub fn bind_call(&self, id: u64, call: CallKey) {
        self.lock().calls.insert(id, call);
    }

    /// Notes that JSON-RPC id `id` is an `initialize`.
    pub fn bind_init(&self, id: u64) {
        self.lock().inits.insert(id);
    }

    /// The call a JSON-RPC id carries.
    pub fn call_of(&self, id: u64) -> Option<CallKey> {
        self.lock().calls.get(&id).copied()
    }

    /// Records `event-stored` (inferred) once per `(session, id)` and message; returns whether
    /// it was new. A replayed event (same id, same message) is not stored again; an id the server
    /// gave to a *different* event is stored again (the later one wins in the oracles' log) and
    /// remembered as reused.
    pub fn stored(
        &self,
        session: &SessionId,
        stream: StreamNo,
        seq: u32,
        id: &EventId,
        message: Option<ServerMessage>,
    ) -> bool {
        {
            let mut r = self.lock();
            let key = (session.0.to_string(), id.0.to_string());
            match r.stored.get(&key) {
                Some(m) if *m == message => return false,
                Some(_) => r.reused.push(id.0.to_string()),
                None => {}
            }
            r.stored.insert(key, message.clone());
        }
        let call = message.as_ref().and_then(|m| m.request()).and_then(|r| self.call_of(r.0));
        self.push(
            Actor::Server,
            StepKind::EventStored { session: session.clone(), stream, seq, id: id.clone(), call, message },
        );
        true
    }

    /// The model's reading of a JSON-RPC message from the server, if it has one.
    pub fn message(&self, v: &Value) -> Option<ServerMessage> {
        let id = v.get("id").and_then(Value::as_u64);
        if v.get("error").is_some() && (id.is_some() || v.get("id").is_some_and(Value::is_null)) {
            let message = v["error"]["message"].as_str().unwrap_or("error").to_string();
            let code = v["error"]["code"].as_i64();
            return Some(ServerMessage::Error { request: id.map(RequestId), message, code });
        }
        if let Some(id) = id {
            if v.get("result").is_some() {
                if self.lock().inits.contains(&id) {
                    return Some(ServerMessage::InitializeResult { request: RequestId(id) });
                }
                let call = self.call_of(id)?;
                return Some(ServerMessage::ToolResult { request: RequestId(id), call });
            }
            return None;
        }
        let method = v.get("method").and_then(Value::as_str)?;
        let params = v.get("params").cloned().unwrap_or(Value::Null);
        match method {
            "notifications/progress" => {
                let request = params.get("progressToken").and_then(token_id)?;
                let call = self.call_of(request)?;
                let step = params.get("progress").and_then(Value::as_f64).unwrap_or(0.0) as u32;
                Some(ServerMessage::Progress { request: RequestId(request), call, step })
            }
            // `probe_notify` ends with a list_changed after its numbered messages; any other
            // notification is numbered after those too.
            _ => Some(ServerMessage::Notification { seq: notify_seq(&params).unwrap_or(OTHER_NOTIFICATION_SEQ) }),
        }
    }

    /// Progress ticks of `call` the tool's own counter says were sent (`1..=total`) but that
    /// never arrived: written as `event-stored` with an `unseen:` id, so the loss oracle can judge.
    pub fn infer_unseen(&self, session: &SessionId, stream: StreamNo, request: RequestId, call: CallKey, total: u32) {
        for tick in self.missing_ticks(call, total) {
            let id = EventId::from(format!("unseen:{call}:{tick}"));
            self.stored(session, stream, tick, &id, Some(ServerMessage::Progress { request, call, step: tick }));
        }
    }

    /// How many of ticks `1..=total` of `call` never arrived.
    pub fn unseen_ticks(&self, call: CallKey, total: u32) -> usize {
        self.missing_ticks(call, total).len()
    }

    /// How many of notifications `1..=total` of the standalone stream never arrived.
    pub fn unseen_notifications(&self, session: &SessionId, total: u32) -> usize {
        self.missing_notifications(session, total).len()
    }

    fn missing_ticks(&self, call: CallKey, total: u32) -> Vec<u32> {
        let seen: BTreeSet<u32> = self
            .lock()
            .steps
            .iter()
            .filter_map(|s| match &s.kind {
                StepKind::EventStored { message: Some(ServerMessage::Progress { call: c, step, .. }), .. }
                    if *c == call =>
                {
                    Some(*step)
                }
                _ => None,
            })
            .collect();
        (1..=total.min(100_000)).filter(|t| !seen.contains(t)).collect()
    }

    /// Notifications `1..=total` of the standalone stream that never arrived (see `infer_unseen`).
    pub fn infer_unseen_notifications(&self, session: &SessionId, total: u32) {
        for seq in self.missing_notifications(session, total) {
            let id = EventId::from(format!("unseen:notification:{seq}"));
            self.stored(session, StreamNo::STANDALONE, seq, &id, Some(ServerMessage::Notification { seq }));
        }
    }

    fn missing_notifications(&self, session: &SessionId, total: u32) -> Vec<u32> {
        let seen: BTreeSet<u32> =
            self.lock()
                .steps
                .iter()
                .filter_map(|s| match &s.kind {
                    StepKind::EventStored {
                        session: s2, message: Some(ServerMessage::Notification { seq }), ..
                    } if s2 == session => Some(*seq),
                    _ => None,
                })
                .collect();
        (1..=total.min(100_000)).filter(|t| !seen.contains(t)).collect()
    }

    /// Event ids the server gave to two different events of one session.
    pub fn reused_ids(&self) -> Vec<String> {
        self.lock().reused.clone()
    }

    /// The finished trace: header marked as a wall-clock recording of a real server.
    pub fn into_trace(self, scenario: Value) -> Trace {
        let steps = std::mem::take(&mut self.lock().steps);
        let mut trace = Trace::new(0, scenario);
        trace.steps = steps;
        trace
    }
}

impl Default for Rec {
    fn default() -> Self {
        Self::new()
    }
}

/// A progress token as the probe sends it: the request's JSON-RPC id, as a number or a string.
fn token_id(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

/// Where notifications that are not `probe_notify i/n` sit in their stream.
pub const OTHER_NOTIFICATION_SEQ: u32 = 1_000_000;

/// `probe_notify i/n` → i.
pub fn notify_seq(params: &Value) -> Option<u32> {
    let data = params.get("data")?.as_str()?;
    let rest = data.strip_prefix("probe_notify ")?;
    rest.split('/').next()?.parse().ok()
}
