//! The client driven directly with hand-written frames.

use super::*;
use crate::config::{CloseHandling, CounterReset, OnEmptyResume, Persistence};
use crate::config::{ReconnectPolicy, RetryField};
use crate::decision::DecisionError;
use crate::http::{Body, ErrorBody, ErrorCode, Method};
use crate::http::{ClientMessage, EventKind, ServerMessage, SseEvent, Status, ToolCall};
use crate::profiles;
use crate::time::micros;
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

const S1: &str = "s1";
const S2: &str = "s2";

/// A client, a clock, and everything it has output so far.
struct Driver {
    c: Client,
    now: Instant,
    log: Vec<ClientOutput>,
}

impl Driver {
    fn new(profile: &str) -> Self {
        Driver::with(profiles::client(profile).expect("a listed profile"), None, 7)
    }

    fn with(policy: ClientPolicy, restored: Option<DurableState>, seed: u64) -> Self {
        Driver { c: Client::new(policy, "app", restored, seed), now: Instant::ZERO, log: Vec::new() }
    }

    fn drain(&mut self) -> Vec<ClientOutput> {
        let mut out = Vec::new();
        while let Some(o) = self.c.poll_output() {
            out.push(o);
        }
        self.log.extend(out.iter().cloned());
        out
    }

    fn at_ms(&mut self, ms: u64) -> &mut Self {
        self.now = Instant(ms * 1_000);
        self
    }

    fn start(&mut self) -> Vec<ClientOutput> {
        self.c.start(self.now);
        self.drain()
    }

    fn call(&mut self, key: u32, idempotent: bool) -> Vec<ClientOutput> {
        self.c.call_tool(self.now, CallKey(key), "pay", idempotent);
        self.drain()
    }

    fn frame(&mut self, conn: ConnId, frame: Frame) -> Vec<ClientOutput> {
        self.c.handle_frame(self.now, conn, frame);
        self.drain()
    }

    fn frames(&mut self, conn: ConnId, frames: Vec<Frame>) -> Vec<ClientOutput> {
        frames.into_iter().flat_map(|f| self.frame(conn, f)).collect()
    }

    fn end(&mut self, conn: ConnId, end: ConnEnd) -> Vec<ClientOutput> {
        self.c.handle_conn_end(self.now, conn, end);
        self.drain()
    }

    /// A complete answer: the frames, `End`, and a clean end.
    fn answer(&mut self, conn: ConnId, mut frames: Vec<Frame>) -> Vec<ClientOutput> {
        frames.push(Frame::End);
        let mut out = self.frames(conn, frames);
        out.extend(self.end(conn, ConnEnd::Clean));
        out
    }

    /// Moves the clock to the next timer and runs it.
    fn fire(&mut self) -> Vec<ClientOutput> {
        let t = self.c.poll_timeout().expect("a timer is pending");
        assert!(t >= self.now, "timers never lie in the past");
        self.now = t;
        self.c.handle_timeout(t);
        self.drain()
    }

    /// [`Driver::fire`] when a timer is pending, else `None`.
    fn try_fire(&mut self) -> Option<Vec<ClientOutput>> {
        self.c.poll_timeout().is_some().then(|| self.fire())
    }

    /// Ready as `profile`, with call 1's stream (events 1-0 priming, 1-3 progress) broken.
    fn broken_call(profile: &str) -> (Self, RequestId) {
        let mut d = Driver::ready(profile);
        let (conn, request, _) = tool_call(&d.call(1, false));
        d.frames(conn, vec![sse(), priming("1-0"), progress("1-3", request, 1, 3)]);
        d.end(conn, ConnEnd::Reset);
        (d, request)
    }

    /// Answers the open `initialize` (minting `session`) and the `initialized` notification.
    fn complete_handshake(&mut self, init_out: &[ClientOutput], session: &str) -> Vec<ClientOutput> {
        let (init, req) = only_open(init_out, |r| matches!(r.body, Some(ClientMessage::Initialize { .. })));
        assert_eq!(req.session, None, "initialize carries no session id");
        let id = req.body.as_ref().and_then(|b| b.request_id()).expect("initialize has an id");
        let head = ResponseHead { session: Some(SessionId::from(session)), ..json_head() };
        let out =
            self.answer(init, vec![Frame::Head(head), Frame::Json(ServerMessage::InitializeResult { request: id })]);
        let (ack, req) = only_open(&out, |r| r.body == Some(ClientMessage::Initialized));
        assert_eq!(req.session, Some(SessionId::from(session)));
        self.answer(ack, vec![Frame::Head(ResponseHead::status(Status::ACCEPTED))])
    }

    /// Started, with a ready session `s1`.
    fn ready(profile: &str) -> Self {
        let mut d = Driver::new(profile);
        let out = d.start();
        d.complete_handshake(&out, S1);
        d
    }

    fn app_view(&self) -> Vec<StepKind> {
        steps(&self.log).into_iter().filter(StepKind::is_app).collect()
    }
}

fn json_head() -> ResponseHead {
    ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None }
}

fn sse() -> Frame {
    Frame::Head(ResponseHead::event_stream())
}

fn status(code: u16) -> Frame {
    Frame::Head(ResponseHead::status(Status(code)))
}

fn gone(head: &str) -> Frame {
    let error = ErrorBody { code: ErrorCode::ResumeWindowExceeded, head_event_id: Some(EventId::from(head)) };
    Frame::Head(ResponseHead::error(Status::GONE, error))
}

fn event(id: Option<&str>, data: Option<ServerMessage>) -> Frame {
    Frame::Event(SseEvent { id: id.map(EventId::from), retry_ms: None, kind: EventKind::Message, data })
}

fn priming(id: &str) -> Frame {
    event(Some(id), None)
}

fn progress(id: &str, request: RequestId, call: u32, step: u32) -> Frame {
    event(Some(id), Some(ServerMessage::Progress { request, call: CallKey(call), step }))
}

fn result(id: &str, request: RequestId, call: u32) -> Frame {
    event(Some(id), Some(ServerMessage::ToolResult { request, call: CallKey(call) }))
}

fn opens(out: &[ClientOutput]) -> Vec<(ConnId, Request)> {
    out.iter()
        .filter_map(|o| match o {
            ClientOutput::Open { conn, request } => Some((*conn, request.clone())),
            _ => None,
        })
        .collect()
}

fn only_open(out: &[ClientOutput], which: impl Fn(&Request) -> bool) -> (ConnId, Request) {
    let found: Vec<_> = opens(out).into_iter().filter(|(_, r)| which(r)).collect();
    assert_eq!(found.len(), 1, "expected exactly one such request in {out:#?}");
    found.into_iter().next().expect("checked above")
}

fn tool_call(out: &[ClientOutput]) -> (ConnId, RequestId, ToolCall) {
    let (conn, req) = only_open(out, |r| matches!(r.body, Some(ClientMessage::CallTool { .. })));
    let Some(ClientMessage::CallTool { id, call }) = req.body else { unreachable!("filtered above") };
    (conn, id, call)
}

fn resume(out: &[ClientOutput]) -> (ConnId, Request) {
    only_open(out, |r| r.method == Method::Get)
}

fn steps(out: &[ClientOutput]) -> Vec<StepKind> {
    out.iter()
        .filter_map(|o| match o {
            ClientOutput::Record(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn app(out: &[ClientOutput]) -> Vec<StepKind> {
    steps(out).into_iter().filter(StepKind::is_app).collect()
}

fn decisions(out: &[ClientOutput]) -> Vec<StepKind> {
    steps(out).into_iter().filter(|s| matches!(s, StepKind::Decision { .. })).collect()
}

fn backoffs(out: &[ClientOutput]) -> Vec<(u32, u64)> {
    steps(out)
        .into_iter()
        .filter_map(|s| match s {
            StepKind::Backoff { attempt, delay_us, .. } | StepKind::InitializeBackoff { attempt, delay_us } => {
                Some((attempt, delay_us))
            }
            _ => None,
        })
        .collect()
}

fn persists(out: &[ClientOutput]) -> Vec<DurableState> {
    out.iter()
        .filter_map(|o| match o {
            ClientOutput::Persist(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn posts_of_call(log: &[ClientOutput]) -> Vec<RequestId> {
    opens(log)
        .into_iter()
        .filter_map(|(_, r)| match r.body {
            Some(ClientMessage::CallTool { id, .. }) => Some(id),
            _ => None,
        })
        .collect()
}

fn ev(id: &str) -> Option<EventId> {
    Some(EventId::from(id))
}

fn sid(s: &str) -> SessionId {
    SessionId::from(s)
}

/// A policy with the given close handling and a deterministic, jitter-free backoff.
fn plain(close_handling: CloseHandling, max_attempts: Option<u32>) -> ClientPolicy {
    ClientPolicy {
        name: "test".into(),
        close_handling,
        persistence: Persistence::Volatile,
        reconnect: ReconnectPolicy {
            initial: Duration::from_secs(1),
            factor: 2.0,
            max: Duration::from_secs(30),
            max_attempts,
            counter_reset: CounterReset::OnSuccessfulReconnect,
            retry_field: RetryField::Ignore,
            first_immediate: false,
            jitter: 0.0,
        },
        request_timeout: None,
        open_standalone_stream: false,
        send_idempotency_keys: false,
        sessions: true,
        timeout_resets_on_progress: false,
        max_unhonoured_resumes: None,
        report_stream_given_up: false,
        http: Default::default(),
        standalone_loss: Default::default(),
        standalone_405: Default::default(),
        await_standalone_head: false,
        era: None,
        tasks: Default::default(),
        subscriptions: Default::default(),
    }
}

fn ready_with(policy: ClientPolicy) -> Driver {
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    d.complete_handshake(&out, S1);
    d
}

/// A call whose POST stream got a 200 and a priming event `prime` (if any), then was reset.
fn call_then_reset(d: &mut Driver, key: u32, idempotent: bool, prime: Option<&str>) -> (RequestId, Vec<ClientOutput>) {
    let out = d.call(key, idempotent);
    let (conn, request, _) = tool_call(&out);
    d.frame(conn, sse());
    if let Some(id) = prime {
        d.frame(conn, priming(id));
    }
    (request, d.end(conn, ConnEnd::Reset))
}

// ---------------------------------------------------------------------------------------------
// Handshake
// ---------------------------------------------------------------------------------------------

#[test]
fn a_start_names_only_the_conditions_the_policy_keeps() {
    let start = |name: &str| steps(&Driver::new(name).start())[0].clone();
    let naive_budget = crate::profiles::client("naive").expect("built in").reconnect.max_attempts;
    assert_eq!(
        start("naive"),
        StepKind::ClientStart {
            restored: false,
            durable: false,
            by_class: false,
            max_attempts: naive_budget,
            on_give_up: None
        }
    );
    let mut durable_sdk = profiles::client("ts-sdk").expect("listed");
    durable_sdk.persistence = crate::config::Persistence::Durable;
    let ts_budget = durable_sdk.reconnect.max_attempts;
    let mut d = Driver::with(durable_sdk, None, 8);
    assert_eq!(
        steps(&d.start())[0],
        StepKind::ClientStart {
            restored: false,
            durable: true,
            by_class: false,
            max_attempts: ts_budget,
            on_give_up: Some(crate::config::OnGiveUp::LeavePending)
        }
    );
}

#[test]
fn handshake_then_the_queued_call_goes_out_under_the_session() {
    let mut d = Driver::new("reference");
    let out = d.start();
    // The reference policy keeps conditions 1 and 4: its start says so, for the judge.
    // Its start also names its attempt budget (20), for `profile-conformance`.
    assert_eq!(
        steps(&out)[0],
        StepKind::ClientStart {
            restored: false,
            durable: true,
            by_class: true,
            max_attempts: Some(20),
            on_give_up: None
        }
    );
    let (_, init) = only_open(&out, |_| true);
    assert_eq!(init.body, Some(ClientMessage::Initialize { id: RequestId(1), client: "app".into() }));

    // A call before the session is ready waits.
    let queued = d.call(5, false);
    assert!(opens(&queued).is_empty(), "nothing is sent before the handshake: {queued:#?}");
    assert_eq!(d.c.unresolved_calls(), vec![CallKey(5)]);

    let out = d.complete_handshake(&out, S1);
    assert_eq!(d.c.session(), Some(&sid(S1)));
    let (_, request, call) = tool_call(&out);
    assert_eq!(request, RequestId(2));
    assert_eq!(call, ToolCall { tool: "pay".into(), key: CallKey(5), idempotency_key: None, tasks: false });
    let (_, post) = only_open(&out, |_| true);
    assert_eq!(post.session, Some(sid(S1)));
    assert!(!d.c.is_quiet());
}

#[test]
fn every_open_is_recorded_as_a_send_and_connections_are_numbered_from_one() {
    let mut d = Driver::new("reference");
    let out = d.start();
    assert_eq!(steps(&out)[1], StepKind::Send { conn: ConnId(1), request: Request::initialize(RequestId(1), "app") });
    let out = d.complete_handshake(&out, S1);
    let out2 = d.call(1, false);
    assert_eq!(tool_call(&out2).0, ConnId(3));
    assert!(opens(&out).is_empty());
}

#[test]
fn idempotency_keys_are_sent_when_the_policy_says_so() {
    let mut policy = plain(CloseHandling::DecisionProcedure, None);
    policy.send_idempotency_keys = true;
    let mut d = ready_with(policy);
    let (_, _, call) = tool_call(&d.call(9, false));
    assert_eq!(call.idempotency_key.as_deref(), Some("call9"));
}

#[test]
fn a_refused_initialize_is_retried_with_backoff_then_the_calls_fail() {
    let mut d = Driver::new("naive"); // max_attempts 5
    let mut out = d.start();
    d.call(1, false);
    for attempt in 1..=4u32 {
        let (conn, _) = only_open(&out, |_| true);
        let ended = d.end(conn, ConnEnd::Refused);
        let (a, delay) = backoffs(&ended)[0];
        assert_eq!(a, attempt);
        let base = 1_000_000u64 << (attempt - 1);
        assert!(delay <= base && delay as f64 >= base as f64 * 0.8, "attempt {attempt}: {delay}");
        out = d.fire();
    }
    let (conn, _) = only_open(&out, |_| true);
    let ended = d.end(conn, ConnEnd::Refused);
    assert_eq!(
        app(&ended),
        vec![StepKind::AppError { call: CallKey(1), error: "initialize failed: connection refused".into() }]
    );
    assert!(d.c.is_quiet() && d.c.poll_timeout().is_none());
    // A later call starts the handshake again.
    let out = d.call(2, false);
    assert!(matches!(only_open(&out, |_| true).1.body, Some(ClientMessage::Initialize { .. })));
}

#[test]
fn an_initialize_refused_with_an_http_error_fails_at_its_head_naming_the_status() {
    let mut policy = profiles::client("reference").expect("listed");
    policy.reconnect.max_attempts = Some(1);
    let mut d = Driver::with(policy, None, 7);
    let (init, _) = only_open(&d.start(), |_| true);
    d.call(1, false);
    let out = d.frame(init, status(503));
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: "initialize failed: HTTP 503".into() }]);
    let out = d.end(init, ConnEnd::Clean);
    assert!(app(&out).is_empty() && opens(&out).is_empty(), "the end changes nothing: {out:#?}");
}

/// A refusal of the `initialize` itself (400, 405, 406, 415, 422) is refused alike every time:
/// the design note's client fails the calls waiting on it at once, with its attempts unlimited,
/// and a later call starts a handshake of its own; an SDK client retries it as any failure, and
/// the reference client retries a 5xx or a 404.
#[test]
fn an_initialize_refused_as_a_request_fails_at_once_under_the_decision_procedure_only() {
    for (profile, code, retried) in [
        ("reference", 400, false),
        ("reference", 415, false),
        ("reference", 503, true),
        ("reference", 404, true),
        ("ts-sdk", 400, true),
    ] {
        let mut policy = profiles::client(profile).expect("listed");
        policy.reconnect.max_attempts = None;
        let mut d = Driver::with(policy, None, 7);
        let (init, _) = only_open(&d.start(), |_| true);
        d.call(1, false);
        let out = d.frame(init, status(code));
        let told = app(&out);
        assert_eq!(!backoffs(&out).is_empty(), retried, "{profile} {code}: {out:#?}");
        assert_eq!(told.is_empty(), retried, "{profile} {code}: {told:?}");
        if !retried {
            let error = format!("initialize refused: HTTP {code}: the request itself is refused");
            assert_eq!(told, vec![StepKind::AppError { call: CallKey(1), error }]);
            d.end(init, ConnEnd::Clean);
            assert!(d.c.poll_timeout().is_none(), "{profile} {code}: nothing scheduled");
            let out = d.call(2, false);
            assert!(matches!(only_open(&out, |_| true).1.body, Some(ClientMessage::Initialize { .. })));
        }
    }
}

#[test]
fn an_initialize_answered_with_a_json_rpc_error_fails_at_once_with_the_servers_message() {
    let mut policy = profiles::client("reference").expect("listed");
    policy.reconnect.max_attempts = Some(1);
    let mut d = Driver::with(policy, None, 7);
    let (init, req) = only_open(&d.start(), |_| true);
    d.call(1, false);
    let id = req.body.as_ref().and_then(|b| b.request_id());
    let error = ServerMessage::Error { request: id, message: "unsupported protocol version".into(), code: None };
    // The error settles the handshake as it arrives, before the connection ends.
    let out = d.frames(init, vec![Frame::Head(json_head()), Frame::Json(error)]);
    assert_eq!(
        app(&out),
        vec![StepKind::AppError { call: CallKey(1), error: "initialize failed: unsupported protocol version".into() }]
    );
    let out = d.end(init, ConnEnd::Clean);
    assert!(app(&out).is_empty() && opens(&out).is_empty(), "the end changes nothing: {out:#?}");
}

// ---------------------------------------------------------------------------------------------
// The core incident: a long tool and a load-balancer reset
// ---------------------------------------------------------------------------------------------

#[test]
fn reference_resumes_with_the_priming_id_after_backoff_and_resolves_once() {
    let mut d = Driver::ready("reference");
    d.at_ms(1_000);
    let (request, out) = call_then_reset(&mut d, 1, false, Some("1-0"));
    assert_eq!(
        decisions(&out),
        vec![StepKind::Decision {
            call: Some(CallKey(1)),
            outcome: Some(StreamOutcome::Reconnectable),
            action: Some(NextAction::Resume { last_event_id: EventId::from("1-0") }),
            error: None,
        }]
    );
    let (attempt, delay) = backoffs(&out)[0];
    assert_eq!(attempt, 1);
    assert!((800_000..=1_000_000).contains(&delay), "1s with 20% jitter: {delay}");
    assert!(opens(&out).is_empty(), "no reconnect before the backoff");
    assert_eq!(d.c.session(), Some(&sid(S1)), "a reset is not a session event");

    let out = d.fire();
    assert_eq!(d.now, Instant(1_000_000 + delay));
    let (conn, get) = resume(&out);
    assert_eq!(get.last_event_id, ev("1-0"));
    assert_eq!(get.session, Some(sid(S1)));

    d.frames(conn, vec![sse(), progress("1-1", request, 1, 1)]);
    let out = d.answer(conn, vec![result("1-2", request, 1)]);
    assert_eq!(app(&out), vec![StepKind::AppResult { call: CallKey(1), session: sid(S1), id: ev("1-2") }]);
    // Anything later for the resolved call is not handed over.
    let late = d.frames(ConnId(99), vec![result("1-2", request, 1)]);
    assert!(app(&late).is_empty());

    assert_eq!(posts_of_call(&d.log), vec![request], "no second POST");
    let resolutions: Vec<_> = d.app_view().iter().filter_map(StepKind::resolves).collect();
    assert_eq!(resolutions, vec![CallKey(1)]);
    assert_eq!(d.app_view().len(), 3, "call, progress, result: {:#?}", d.app_view());
    assert!(d.c.is_quiet());
}

#[test]
fn naive_reinitializes_and_resends_the_same_key_with_a_new_request_id() {
    let mut d = Driver::ready("naive");
    let (request, out) = call_then_reset(&mut d, 1, false, Some("1-0"));
    assert_eq!(
        decisions(&out),
        vec![StepKind::Decision {
            call: Some(CallKey(1)),
            outcome: None,
            action: Some(NextAction::Reinitialize),
            error: None
        }]
    );
    assert_eq!(d.c.session(), None, "the session id is forgotten");
    let out = d.complete_handshake(&out, S2);
    let (_, again, call) = tool_call(&out);
    assert_ne!(again, request);
    assert_eq!(call.key, CallKey(1));
    assert_eq!(only_open(&out, |_| true).1.session, Some(sid(S2)));
    assert!(d.app_view().iter().all(|s| !matches!(s, StepKind::AppSessionLost { .. })), "the app is not told");
    assert!(opens(&d.log).iter().all(|(_, r)| r.last_event_id.is_none() && r.method != Method::Delete));
    assert_eq!(posts_of_call(&d.log), vec![request, again]);
}

#[test]
fn naive_resends_every_call_in_flight_and_gives_up_after_max_attempts() {
    let mut d = Driver::ready("naive"); // max_attempts 5
    let out = d.call(2, true);
    let (other, _, _) = tool_call(&out);
    d.frame(other, sse());
    let (_, mut out) = call_then_reset(&mut d, 1, false, None);
    assert!(out.contains(&ClientOutput::Abort { conn: other }), "the old session's streams are dropped");
    for round in 1..=5 {
        out = d.complete_handshake(&out, &format!("s{}", round + 1));
        let sent: Vec<u32> = opens(&out)
            .into_iter()
            .filter_map(|(_, r)| match r.body {
                Some(ClientMessage::CallTool { call, .. }) => Some(call.key.0),
                _ => None,
            })
            .collect();
        assert_eq!(sent, vec![2, 1], "round {round}: both calls re-sent in issue order");
        let conn = opens(&out)
            .into_iter()
            .find(|(_, r)| matches!(&r.body, Some(ClientMessage::CallTool { call, .. }) if call.key == CallKey(1)))
            .map(|(c, _)| c)
            .expect("call 1 re-sent");
        out = d.end(conn, ConnEnd::Reset);
        if round == 5 {
            break;
        }
    }
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: ERR_EXHAUSTED.into() }]);
    assert_eq!(d.c.unresolved_calls(), vec![CallKey(2)], "the other call still runs");
    assert_eq!(posts_of_call(&d.log).len(), 2 + 5 * 2, "each of 5 re-initializations re-sent both calls");
}

// ---------------------------------------------------------------------------------------------
// The decision procedure's other branches
// ---------------------------------------------------------------------------------------------

#[test]
fn reference_404_loses_the_session_settles_calls_and_resends_only_idempotent_ones() {
    let mut d = Driver::ready("reference");
    let out = d.call(2, true);
    let (idem_conn, idem_request, _) = tool_call(&out);
    d.frames(idem_conn, vec![sse(), priming("2-0")]);
    call_then_reset(&mut d, 1, false, Some("1-0"));
    let (conn, _) = resume(&d.fire());
    let out = d.answer(conn, vec![status(404)]);
    assert_eq!(
        decisions(&out)[0],
        StepKind::Decision {
            call: Some(CallKey(1)),
            outcome: Some(StreamOutcome::SessionTerminated),
            action: Some(NextAction::Reinitialize),
            error: None
        }
    );
    assert_eq!(
        app(&out),
        vec![
            StepKind::AppSessionLost { session: sid(S1) },
            StepKind::AppUnknownOutcome { call: CallKey(1), reason: UNKNOWN_SESSION_LOST.into() },
        ]
    );
    assert!(out.contains(&ClientOutput::Abort { conn: idem_conn }));
    assert_eq!(d.c.session(), None);
    let out = d.complete_handshake(&out, S2);
    let (_, request, call) = tool_call(&out);
    assert_eq!(call.key, CallKey(2));
    assert_ne!(request, idem_request);
    assert_eq!(d.c.unresolved_calls(), vec![CallKey(2)]);
    assert_eq!(posts_of_call(&d.log).len(), 3, "call 1 once, call 2 twice");
}

#[test]
fn reference_410_reports_a_gap_then_resumes_at_the_head() {
    let mut d = Driver::ready("reference");
    let out = d.call(1, false);
    let (conn, request, _) = tool_call(&out);
    d.frames(conn, vec![sse(), priming("1-0"), progress("1-3", request, 1, 3)]);
    d.end(conn, ConnEnd::Reset);
    let (conn, _) = resume(&d.fire());
    let out = d.answer(conn, vec![gone("1-90")]);
    assert_eq!(
        app(&out),
        vec![StepKind::AppGap {
            session: sid(S1),
            call: Some(CallKey(1)),
            after: ev("1-3"),
            head: EventId::from("1-90")
        }]
    );
    // The server just answered: the resume at the head goes out at once, with no backoff, before
    // a bounded buffer can evict the head it named.
    assert_eq!(backoffs(&out).len(), 0);
    let (conn, get) = resume(&out);
    assert_eq!(get.last_event_id, ev("1-90"));
    // The head is the stream's cursor from now on: a later break resumes from it.
    d.frame(conn, sse());
    d.end(conn, ConnEnd::Reset);
    let (_, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("1-90"));
    assert!(persists(&d.log).last().is_some_and(|s| s.calls[0].last_event_id == ev("1-90")));
}

/// A resume of an accepted non-idempotent call refused with a 410 that names no head: the
/// procedure refuses to resume at a head it does not know, and the call's fate is unknown (it may
/// have run), so the application is told that, not that it failed; an idempotent one fails.
#[test]
fn reference_reports_an_accepted_call_whose_resume_is_refused_without_a_head_as_unknown() {
    let no_head = || {
        let error = ErrorBody { code: ErrorCode::ResumeWindowExceeded, head_event_id: None };
        Frame::Head(ResponseHead::error(Status::GONE, error))
    };
    let refused = |idempotent: bool| {
        let mut d = Driver::ready("reference");
        call_then_reset(&mut d, 1, idempotent, Some("1-0"));
        let (conn, _) = resume(&d.fire());
        app(&d.answer(conn, vec![no_head()]))
    };
    let reason = DecisionError::NoHeadAdvertised.to_string();
    assert_eq!(refused(false), vec![StepKind::AppUnknownOutcome { call: CallKey(1), reason: reason.clone() }]);
    assert_eq!(refused(true), vec![StepKind::AppError { call: CallKey(1), error: reason }]);
}

#[test]
fn reference_refuses_to_guess_on_a_400() {
    let mut d = Driver::ready("reference");
    let out = d.call(1, false);
    let (conn, _, _) = tool_call(&out);
    let out = d.answer(conn, vec![status(400)]);
    let error = DecisionError::UnexpectedStatus { status: 400 }.to_string();
    assert_eq!(
        decisions(&out),
        vec![StepKind::Decision { call: Some(CallKey(1)), outcome: None, action: None, error: Some(error.clone()) }]
    );
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error }]);
    assert_eq!(d.c.session(), Some(&sid(S1)));
}

#[test]
fn reference_without_an_event_id_reports_unknown_outcome_or_resends_an_idempotent_call() {
    let mut d = Driver::ready("reference");
    let (_, out) = call_then_reset(&mut d, 1, false, None);
    let error = DecisionError::NeverPersisted.to_string();
    assert_eq!(app(&out), vec![StepKind::AppUnknownOutcome { call: CallKey(1), reason: error }]);
    assert!(opens(&out).is_empty(), "a non-idempotent call is never re-run blindly");

    let (first, out) = call_then_reset(&mut d, 2, true, None);
    assert!(app(&out).is_empty());
    assert_eq!(backoffs(&out).len(), 1, "an idempotent call is re-sent after a backoff, not at once");
    assert!(opens(&out).is_empty());
    let (_, again, call) = tool_call(&d.fire());
    assert_eq!((call.key, again > first), (CallKey(2), true), "re-sent as a new POST");
}

#[test]
fn reference_stops_on_a_close_event() {
    let mut d = Driver::ready("reference");
    let (conn, _, _) = tool_call(&d.call(1, false));
    let close = Frame::Event(SseEvent { id: ev("1-1"), retry_ms: None, kind: EventKind::Close, data: None });
    let out = d.answer(conn, vec![sse(), priming("1-0"), close]);
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: ERR_SESSION_CLOSED.into() }]);
    assert!(d.c.poll_timeout().is_none() && d.c.is_quiet());
}

#[test]
fn reference_resumes_again_when_a_resumed_stream_ends_again() {
    let mut d = Driver::ready("reference");
    let (request, _) = call_then_reset(&mut d, 1, false, Some("1-0"));
    let (conn, _) = resume(&d.fire());
    d.frames(conn, vec![sse(), progress("1-1", request, 1, 1)]);
    let out = d.end(conn, ConnEnd::Reset);
    assert_eq!(backoffs(&out)[0].0, 1, "the 200 reset the attempt counter");
    let (_, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("1-1"));
}

#[test]
fn reference_exhausted_attempts_give_unknown_outcome_or_error() {
    for (idempotent, expected) in [
        (false, StepKind::AppUnknownOutcome { call: CallKey(1), reason: ERR_EXHAUSTED.into() }),
        (true, StepKind::AppError { call: CallKey(1), error: ERR_EXHAUSTED.into() }),
    ] {
        let mut d = ready_with(plain(CloseHandling::DecisionProcedure, Some(2)));
        let (_, out) = call_then_reset(&mut d, 1, idempotent, Some("1-0"));
        assert_eq!(backoffs(&out), vec![(1, 1_000_000)]);
        let (conn, _) = resume(&d.fire());
        let out = d.end(conn, ConnEnd::Refused);
        assert_eq!(backoffs(&out), vec![(2, 2_000_000)]);
        let (conn, _) = resume(&d.fire());
        let out = d.end(conn, ConnEnd::Refused);
        assert_eq!(app(&out), vec![expected]);
        assert!(d.c.is_quiet());
    }
}

// ---------------------------------------------------------------------------------------------
// Backoff
// ---------------------------------------------------------------------------------------------

fn backoff_policy() -> ReconnectPolicy {
    plain(CloseHandling::DecisionProcedure, None).reconnect
}

#[test]
fn backoff_grows_by_the_factor_and_caps() {
    let p = backoff_policy();
    let delays: Vec<u64> = (0..7).map(|n| micros(reconnect_delay(&p, n, None, true, 0.0)) / 1_000).collect();
    assert_eq!(delays, vec![1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    assert_eq!(reconnect_delay(&p, u32::MAX, None, true, 0.0), Duration::from_secs(30), "no overflow");
}

#[test]
fn jitter_only_shortens_and_stays_within_bounds() {
    let p = ReconnectPolicy { jitter: 0.2, ..backoff_policy() };
    assert_eq!(reconnect_delay(&p, 1, None, true, 0.0), Duration::from_secs(2));
    assert_eq!(reconnect_delay(&p, 1, None, true, 0.5), Duration::from_millis(1_800));
    let mut rng = SplitMix64::new(1);
    for _ in 0..1_000 {
        let d = reconnect_delay(&p, 1, None, true, rng.next_f64());
        assert!(d > Duration::from_millis(1_600) && d <= Duration::from_secs(2), "{d:?}");
    }
}

#[test]
fn retry_field_rules() {
    let base = ReconnectPolicy { jitter: 0.5, ..backoff_policy() };
    let with = |retry_field| ReconnectPolicy { retry_field, ..base.clone() };
    // Ignore: the backoff, jitter and all.
    assert_eq!(reconnect_delay(&with(RetryField::Ignore), 0, Some(5_000), true, 1.0), Duration::from_millis(500));
    // Replaces: exactly the server's value, never jittered below it.
    assert_eq!(reconnect_delay(&with(RetryField::Replaces), 4, Some(3_000), true, 1.0), Duration::from_secs(3));
    assert_eq!(reconnect_delay(&with(RetryField::Replaces), 1, None, true, 0.0), Duration::from_secs(2));
    // AtLeast: the larger of the two.
    assert_eq!(reconnect_delay(&with(RetryField::AtLeast), 0, Some(3_000), true, 0.0), Duration::from_secs(3));
    assert_eq!(reconnect_delay(&with(RetryField::AtLeast), 3, Some(3_000), true, 0.0), Duration::from_secs(8));
}

#[test]
fn first_immediate_applies_to_the_first_reconnect_after_an_error_only() {
    let p = ReconnectPolicy { first_immediate: true, retry_field: RetryField::AtLeast, ..backoff_policy() };
    assert_eq!(reconnect_delay(&p, 0, Some(3_000), true, 0.0), Duration::ZERO);
    assert_eq!(reconnect_delay(&p, 0, Some(3_000), false, 0.0), Duration::from_secs(3), "a clean close waits");
    assert_eq!(reconnect_delay(&p, 1, None, true, 0.0), Duration::from_secs(2));
}

#[test]
fn the_server_retry_field_is_remembered_by_the_client() {
    let mut policy = plain(CloseHandling::DecisionProcedure, None);
    policy.reconnect.retry_field = RetryField::Replaces;
    let mut d = ready_with(policy);
    let (conn, _, _) = tool_call(&d.call(1, false));
    let primed = SseEvent { id: ev("1-0"), retry_ms: Some(3_000), kind: EventKind::Message, data: None };
    d.frames(conn, vec![sse(), Frame::Event(primed)]);
    let out = d.end(conn, ConnEnd::Reset);
    assert_eq!(backoffs(&out), vec![(1, 3_000_000)]);
}

/// Reconnects a call three times: the first resume gets 200 then a reset after `on_resumed`,
/// the second is refused. Returns the attempt numbers of the three backoffs.
fn attempts_under(counter_reset: CounterReset, on_resumed: Vec<Frame>) -> Vec<u32> {
    let mut policy = plain(CloseHandling::DecisionProcedure, None);
    policy.reconnect.counter_reset = counter_reset;
    let mut d = ready_with(policy);
    let (_, out) = call_then_reset(&mut d, 1, false, Some("1-0"));
    let mut attempts = vec![backoffs(&out)[0].0];
    let (conn, _) = resume(&d.fire());
    d.frames(conn, on_resumed);
    let out = d.end(conn, ConnEnd::Reset);
    attempts.push(backoffs(&out)[0].0);
    let (conn, _) = resume(&d.fire());
    let out = d.end(conn, ConnEnd::Refused);
    attempts.push(backoffs(&out)[0].0);
    attempts
}

#[test]
fn counter_reset_rules() {
    // A 200 head alone resets the counter only under OnSuccessfulReconnect.
    assert_eq!(attempts_under(CounterReset::OnSuccessfulReconnect, vec![sse()]), vec![1, 1, 2]);
    assert_eq!(attempts_under(CounterReset::OnEvent, vec![sse()]), vec![1, 2, 3]);
    assert_eq!(attempts_under(CounterReset::OnEvent, vec![sse(), priming("1-1")]), vec![1, 1, 2]);
    // WhenSuccessfulReconnectEnds: the reset happens when the 200 stream ends.
    assert_eq!(attempts_under(CounterReset::WhenSuccessfulReconnectEnds, vec![sse()]), vec![1, 1, 2]);
    assert_eq!(attempts_under(CounterReset::WhenSuccessfulReconnectEnds, vec![status(503)]), vec![1, 2, 3]);
}

#[test]
fn counter_reset_when_successful_reconnect_ends_is_not_reset_by_the_head() {
    let mut policy = plain(CloseHandling::DecisionProcedure, None);
    policy.reconnect.counter_reset = CounterReset::WhenSuccessfulReconnectEnds;
    let mut d = ready_with(policy);
    call_then_reset(&mut d, 1, false, Some("1-0"));
    let (conn, _) = resume(&d.fire());
    d.frame(conn, sse());
    assert_eq!(d.c.calls[&CallKey(1)].stream.failures, 1, "still counted while the stream is open");
    d.end(conn, ConnEnd::Reset);
    assert_eq!(d.c.calls[&CallKey(1)].stream.failures, 1, "reset to 0 at the end, then this attempt counted");
}

// ---------------------------------------------------------------------------------------------
// SDK rules
// ---------------------------------------------------------------------------------------------

/// A call whose POST stream carried `1-0` and was reset, then one resume answered 200 and
/// closed with no events; returns what followed.
fn empty_resume(profile: &str) -> (Driver, Vec<ClientOutput>) {
    let mut d = Driver::ready(profile);
    call_then_reset(&mut d, 1, false, Some("1-0"));
    let (conn, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("1-0"));
    let out = d.answer(conn, vec![sse()]);
    (d, out)
}

#[test]
fn ts_sdk_reconnects_without_an_id_after_an_empty_resume() {
    let (mut d, _) = empty_resume("ts-sdk");
    let (_, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, None);
    assert_eq!(get.session, Some(sid(S1)));
}

#[test]
fn py_sdk_reconnects_with_the_same_id_after_an_empty_resume() {
    let (mut d, out) = empty_resume("py-sdk");
    assert_eq!(backoffs(&out), vec![(1, 1_000_000)], "the ended 200 reconnect reset the counter");
    let (_, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("1-0"));
}

#[test]
fn rmcp_takes_an_empty_resume_for_a_graceful_close_and_resumes_with_the_same_id_its_counter_reset() {
    // rust-sdk#958: no error, no backoff growth; the same Last-Event-ID again after 1 s.
    let (mut d, out) = empty_resume("rmcp");
    assert_eq!(app(&out), vec![]);
    assert_eq!(backoffs(&out), vec![(1, 1_000_000)], "a graceful close resets the counter");
    for _ in 0..5 {
        let (conn, get) = resume(&d.fire());
        assert_eq!(get.last_event_id, ev("1-0"));
        let out = d.answer(conn, vec![sse()]);
        assert_eq!(backoffs(&out), vec![(1, 1_000_000)]);
    }
    assert_eq!(d.c.unresolved_calls(), vec![CallKey(1)]);
}

#[test]
fn a_clean_close_rule_fails_the_call_after_an_empty_resume() {
    let mut policy = profiles::client("rmcp").unwrap();
    if let CloseHandling::Sdk(rules) = &mut policy.close_handling {
        rules.on_empty_resume = OnEmptyResume::CleanClose;
    }
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    d.complete_handshake(&out, S1);
    call_then_reset(&mut d, 1, false, Some("1-0"));
    let (conn, _) = resume(&d.fire());
    let out = d.answer(conn, vec![sse()]);
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: ERR_NO_RESPONSE.into() }]);
    assert!(d.c.unresolved_calls().is_empty());
}

#[test]
fn rmcp_reconnects_at_once_after_a_stream_error() {
    let mut d = Driver::ready("rmcp");
    let (_, out) = call_then_reset(&mut d, 1, false, Some("0/1"));
    assert_eq!(backoffs(&out), vec![(1, 0)]);
    assert_eq!(d.c.poll_timeout(), Some(d.now));
}

#[test]
fn python_and_rmcp_fail_a_post_stream_that_ended_without_an_event_id() {
    for profile in ["py-sdk", "rmcp"] {
        let mut d = Driver::ready(profile);
        let (_, out) = call_then_reset(&mut d, 1, true, None);
        assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: ERR_NO_RESPONSE.into() }]);
        assert!(resume_opens(&out).is_empty(), "{profile}");
    }
}

/// TypeScript 1.32.2 neither resumes nor fails a call whose POST stream broke before any event
/// id: it reports `onerror` and the request waits for its 60 s timeout (claude-code#69593: with
/// a host's long timeout, a call hung for good). The call is told "request timed out" then.
#[test]
fn typescript_leaves_a_call_pending_when_its_post_stream_ended_without_an_event_id() {
    let mut d = Driver::ready("ts-sdk");
    let called = d.now;
    let (_, out) = call_then_reset(&mut d, 1, true, None);
    assert_eq!(app(&out), vec![], "nothing is told when the stream breaks");
    assert!(resume_opens(&out).is_empty(), "nothing is resumed");
    assert_eq!(d.c.unresolved_calls(), vec![CallKey(1)]);
    assert_eq!(d.c.poll_timeout(), Some(called + Duration::from_secs(60)), "only the request timeout is left");
    let out = d.fire();
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: ERR_TIMED_OUT.into() }]);
    // A POST that broke before its head failed to send: `send()` rejects, the call fails at once.
    let mut d = Driver::ready("ts-sdk");
    let out = d.call(1, true);
    let (conn, _, _) = tool_call(&out);
    let out = d.end(conn, ConnEnd::Reset);
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: ERR_NO_RESPONSE.into() }]);
}

fn resume_opens(out: &[ClientOutput]) -> Vec<(ConnId, Request)> {
    opens(out).into_iter().filter(|(_, r)| r.method == Method::Get && r.last_event_id.is_some()).collect()
}

#[test]
fn sdk_failed_resumes_count_and_exhaust_with_connection_closed() {
    let mut d = Driver::ready("ts-sdk"); // 2 attempts
    let called = d.now;
    call_then_reset(&mut d, 1, false, Some("a_1"));
    let (conn, _) = resume(&d.fire());
    let out = d.answer(conn, vec![status(404)]);
    assert_eq!(backoffs(&out), vec![(2, 1_500_000)], "404 to a resume is a failed attempt");
    let (conn, _) = resume(&d.fire());
    let out = d.answer(conn, vec![status(409)]);
    // TypeScript gives up without a word: the call waits for its 60 s request timeout.
    assert_eq!(app(&out), vec![]);
    assert_eq!(d.c.unresolved_calls(), vec![CallKey(1)]);
    assert_eq!(d.c.poll_timeout(), Some(called + Duration::from_secs(60)), "only the request timeout is left");
    assert_eq!(d.c.session(), Some(&sid(S1)));
    // Python fails the call at once.
    let mut d = Driver::ready("py-sdk"); // 2 attempts
    call_then_reset(&mut d, 1, false, Some("a_1"));
    for status_code in [404, 409] {
        let (conn, _) = resume(&d.fire());
        let out = d.answer(conn, vec![status(status_code)]);
        if status_code == 409 {
            assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: ERR_CONNECTION_CLOSED.into() }]);
        }
    }
}

#[test]
fn fail_keep_session_keeps_the_dead_id_and_never_reinitializes() {
    let mut d = Driver::ready("py-sdk");
    let (conn, _, _) = tool_call(&d.call(1, false));
    let out = d.answer(conn, vec![status(404)]);
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: "session not found (HTTP 404)".into() }]);
    assert_eq!(d.c.session(), Some(&sid(S1)));
    let out = d.call(2, false);
    assert_eq!(only_open(&out, |_| true).1.session, Some(sid(S1)), "the dead id is used again");
    let inits = opens(&d.log).iter().filter(|(_, r)| matches!(r.body, Some(ClientMessage::Initialize { .. }))).count();
    assert_eq!(inits, 1);
}

#[test]
fn rmcp_reinitializes_and_resends_the_404_post_once_and_fails_the_others() {
    let mut d = Driver::ready("rmcp");
    let (other, _, _) = tool_call(&d.call(2, false));
    d.frame(other, sse());
    let (conn, first, _) = tool_call(&d.call(1, false));
    let out = d.answer(conn, vec![status(404)]);
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(2), error: ERR_REINITIALIZED.into() }]);
    assert!(out.contains(&ClientOutput::Abort { conn: other }));
    let out = d.complete_handshake(&out, S2);
    let (conn, again, call) = tool_call(&out);
    assert_eq!((call.key, again != first), (CallKey(1), true));
    // A second 404 is not re-sent again.
    let out = d.answer(conn, vec![status(404)]);
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: "session not found (HTTP 404)".into() }]);
    assert!(opens(&out).is_empty());
}

#[test]
fn reinitialize_unknown_outcome_tells_the_app_settles_the_calls_and_resends_only_the_idempotent_one() {
    let mut policy = ClientPolicy { open_standalone_stream: false, ..profiles::client("rmcp").unwrap() };
    let CloseHandling::Sdk(rules) = &mut policy.close_handling else { unreachable!("rmcp is an sdk profile") };
    rules.on_404 = crate::config::On404::ReinitializeUnknownOutcome;
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    d.complete_handshake(&out, S1);
    let (get, _, _) = tool_call(&d.call(2, true));
    d.frame(get, sse());
    let (pay, _, _) = tool_call(&d.call(1, false));
    let out = d.answer(pay, vec![status(404)]);
    assert_eq!(
        app(&out),
        vec![
            StepKind::AppSessionLost { session: sid(S1) },
            StepKind::AppUnknownOutcome { call: CallKey(1), reason: UNKNOWN_SESSION_LOST.into() },
        ]
    );
    assert_eq!(initializes(&out), 1, "a new session is initialized");
    let out = d.complete_handshake(&out, S2);
    let (_, _, call) = tool_call(&out);
    assert_eq!(call.key, CallKey(2), "the idempotent call goes again, under the new session");
}

/// rmcp's rules with other answers read as "session not found" (`lost_session_answers`) and,
/// with `on_resume`, on a resume too.
fn rmcp_recognising(answers: &[crate::config::LostSessionAnswer], on_resume: bool) -> Driver {
    let policy = ClientPolicy { open_standalone_stream: false, ..rmcp_rules(answers, on_resume) };
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    d.complete_handshake(&out, S1);
    d
}

/// rmcp's policy with `answers` read as "session not found" and, with `on_resume`, on a resume too.
fn rmcp_rules(answers: &[crate::config::LostSessionAnswer], on_resume: bool) -> ClientPolicy {
    let mut policy = profiles::client("rmcp").unwrap();
    let CloseHandling::Sdk(rules) = &mut policy.close_handling else { unreachable!("rmcp is an sdk profile") };
    rules.lost_session_answers = answers.to_vec();
    rules.lost_session_on_resume = on_resume;
    policy
}

fn initializes(out: &[ClientOutput]) -> usize {
    opens(out).iter().filter(|(_, r)| matches!(r.body, Some(ClientMessage::Initialize { .. }))).count()
}

#[test]
fn the_on_404_rule_applies_to_the_answers_the_sdk_recognises_and_only_those() {
    use crate::config::LostSessionAnswer as L;
    // rmcp as released: a 400 or 503 only fails the call; the dead id is kept.
    for code in [400, 503] {
        let mut d = rmcp_recognising(&[L::NotFound404], false);
        let (conn, _, _) = tool_call(&d.call(1, false));
        let out = d.answer(conn, vec![status(code)]);
        assert_eq!(initializes(&out), 0, "{code}");
        assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: format!("HTTP {code}") }]);
    }
    // Told that 400 and 503 say "session not found" too, it re-initializes and re-sends.
    for code in [400, 503] {
        let mut d = rmcp_recognising(&[L::NotFound404, L::BadRequest400, L::Unavailable503], false);
        let (conn, _, _) = tool_call(&d.call(1, false));
        let out = d.answer(conn, vec![status(code)]);
        assert_eq!(initializes(&out), 1, "{code}");
        let out = d.complete_handshake(&out, S2);
        assert_eq!(tool_call(&out).2.key, CallKey(1));
    }
    // A 200 with a JSON-RPC "session not found" error: an error for the call, unless recognised.
    let not_found = |request| ServerMessage::Error {
        request: Some(request),
        message: "Session not found".into(),
        code: Some(-32001),
    };
    let mut d = rmcp_recognising(&[L::NotFound404], false);
    let (conn, id, _) = tool_call(&d.call(1, false));
    let out = d.answer(conn, vec![Frame::Head(json_head()), Frame::Json(not_found(id))]);
    assert_eq!((initializes(&out), app(&out).len()), (0, 1));
    let mut d = rmcp_recognising(&[L::NotFound404, L::RpcError], false);
    let (conn, id, _) = tool_call(&d.call(1, false));
    let out = d.answer(conn, vec![Frame::Head(json_head()), Frame::Json(not_found(id))]);
    assert_eq!((initializes(&out), app(&out)), (1, vec![]));
    let out = d.complete_handshake(&out, S2);
    assert_eq!(tool_call(&out).2.key, CallKey(1), "re-sent once in the new session");
}

/// A call's resume answered 405 (a server that serves no GET stream: a stateless one): the
/// TypeScript SDK returns from the GET without an error and schedules nothing more, so the call
/// waits for its request timeout; rmcp ends the stream with the error, failing the call; Python
/// retries it as one failed attempt. A sweep of ts-sdk × a stateless server on `rolling-upgrade`
/// had the TypeScript client resume every 46 s for a quarter of an hour (`bounded-reconnects`).
#[test]
fn a_405_to_a_calls_resume_ends_its_stream_where_the_sdk_reads_it_so() {
    let resumed_405 = |profile: &str| {
        let mut d = Driver::ready(profile);
        let (conn, id, _) = tool_call(&d.call(1, false));
        d.frames(conn, vec![sse(), progress("0/1", id, 1, 1)]);
        d.end(conn, ConnEnd::Reset);
        let (get, _) = resume(&d.fire());
        let out = d.answer(get, vec![status(405)]);
        (d, out)
    };
    let stopped = |out: &[ClientOutput]| {
        decisions(out).iter().any(|s| {
            matches!(s, StepKind::Decision { error: Some(e), .. } if e.starts_with("HTTP 405 to the resume: the server offers no GET stream"))
        })
    };
    // TypeScript: no more GETs; the call is settled by its request timeout alone.
    let (mut d, out) = resumed_405("ts-sdk");
    assert!(stopped(&out) && app(&out).is_empty(), "{out:#?}");
    let out = d.fire();
    assert!(opens(&out).iter().all(|(_, r)| r.method != Method::Get), "no GET after the 405: {out:#?}");
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: ERR_TIMED_OUT.into() }]);
    // rmcp: the stream ends with the error, and so does the call.
    let (_, out) = resumed_405("rmcp");
    assert!(stopped(&out), "{out:#?}");
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: ERR_CONNECTION_CLOSED.into() }]);
    // Python: one failed attempt, the GET sent again.
    let (mut d, out) = resumed_405("py-sdk");
    assert!(!stopped(&out) && app(&out).is_empty(), "{out:#?}");
    let (_, again) = resume(&d.fire());
    assert_eq!(again.method, Method::Get);
}

#[test]
fn a_404_on_a_resume_is_a_failed_attempt_unless_the_sdk_reads_it_as_session_lost() {
    use crate::config::LostSessionAnswer as L;
    let resumed_404 = |on_resume: bool| {
        let mut d = rmcp_recognising(&[L::NotFound404], on_resume);
        let (conn, id, _) = tool_call(&d.call(1, false));
        d.frames(conn, vec![sse(), progress("0/1", id, 1, 1)]);
        d.end(conn, ConnEnd::Reset);
        let (get, _) = resume(&d.fire());
        let out = d.answer(get, vec![status(404)]);
        (d, out)
    };
    // As the three SDKs do: one failed reconnect, retried in the dead session, no handshake.
    let (mut d, out) = resumed_404(false);
    assert_eq!(initializes(&out), 0);
    let (_, again) = resume(&d.fire());
    assert_eq!(again.session, Some(sid(S1)));
    // Read as "session lost" on a resume too: re-initialize and re-send the call.
    let (mut d, out) = resumed_404(true);
    assert_eq!(initializes(&out), 1);
    let out = d.complete_handshake(&out, S2);
    assert_eq!(tool_call(&out).2.key, CallKey(1));
}

// ---------------------------------------------------------------------------------------------
// Standalone stream
// ---------------------------------------------------------------------------------------------

/// The Go SDK's standalone-stream rules over the TypeScript profile: losing the stream closes
/// the transport, and connect waits for the stream's head.
fn go_like() -> Driver {
    let mut policy = profiles::client("ts-sdk").unwrap();
    policy.standalone_loss = crate::config::StandaloneLoss::CloseTransport;
    policy.await_standalone_head = true;
    Driver::with(policy, None, 7)
}

#[test]
fn a_client_that_waits_for_the_standalone_head_sends_no_call_before_it() {
    let mut d = go_like();
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (get, _) = only_open(&out, |r| r.method == Method::Get);
    assert!(opens(&d.call(1, false)).is_empty(), "held until the GET's head");
    let out = d.frame(get, sse());
    assert_eq!(tool_call(&out).2.key, CallKey(1));
    // Without the rule the call goes at once.
    let mut d = Driver::ready("ts-sdk");
    assert_eq!(tool_call(&d.call(1, false)).2.key, CallKey(1));
}

#[test]
fn losing_the_standalone_stream_closes_the_whole_transport_for_such_a_client() {
    // Its connection broken before an answer, before the first call: the call never goes, it
    // fails.
    let mut d = go_like();
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (get, _) = only_open(&out, |r| r.method == Method::Get);
    d.call(1, false);
    let out = d.end(get, ConnEnd::Reset);
    assert!(opens(&out).is_empty(), "{out:#?}");
    let failed =
        |e: &StepKind| matches!(e, StepKind::AppError { error, .. } if error.starts_with(ERR_TRANSPORT_CLOSED));
    assert!(app(&out).iter().any(failed), "{:#?}", app(&out));
    // Every later call fails at once: not connected.
    let out = d.call(2, false);
    assert!(opens(&out).is_empty());
    assert!(
        matches!(&app(&out)[..], [StepKind::AppCall { .. }, StepKind::AppError { error, .. }] if error.starts_with("not connected"))
    );
    // A status to the first GET (a 503 too: its body is no event stream) means no stream, as a
    // 405 does (go-sdk v1.7.0 mcp/streamable.go:2142-2159): the held call goes out.
    let mut d = go_like();
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (get, _) = only_open(&out, |r| r.method == Method::Get);
    d.call(1, false);
    let out = d.answer(get, vec![status(503)]);
    assert_eq!(tool_call(&out).2.key, CallKey(1));
    assert!(!app(&out).iter().any(failed), "{:#?}", app(&out));
    // The stream lost later (a reconnect refused): the call in flight fails with it.
    let mut d = go_like();
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (get, _) = only_open(&out, |r| r.method == Method::Get);
    let out = d.frame(get, sse());
    let (post, _, _) = tool_call(&{
        let mut o = out;
        o.extend(d.call(1, false));
        o
    });
    d.frame(post, sse());
    d.end(get, ConnEnd::Reset);
    let (again, _) = resume(&d.fire());
    let out = d.answer(again, vec![status(500)]);
    assert!(app(&out).iter().any(failed), "{:#?}", app(&out));
    assert!(out.contains(&ClientOutput::Abort { conn: post }));
    // The SDKs that survive it only lose the stream.
    let mut d = Driver::ready("ts-sdk");
    let (post, _, _) = tool_call(&d.call(1, false));
    d.frame(post, sse());
    let get = opens(&d.log).into_iter().find(|(_, r)| r.method == Method::Get).expect("a standalone GET").0;
    let out = d.answer(get, vec![status(503)]);
    assert!(app(&out).is_empty() && !out.contains(&ClientOutput::Abort { conn: post }));
}

/// `policy` (two reconnect attempts) ready, with call 1 in flight on an open stream and the
/// standalone stream broken (reset, no status) until its attempts are spent.
fn standalone_spent(mut policy: ClientPolicy) -> (Driver, ConnId) {
    policy.reconnect.max_attempts = Some(2);
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (mut get, _) = only_open(&out, |r| r.method == Method::Get);
    d.frames(get, vec![sse(), event(Some("g-1"), Some(ServerMessage::Notification { seq: 1 }))]);
    let (post, _, _) = tool_call(&d.call(1, false));
    d.frame(post, sse());
    for _ in 0..2 {
        d.end(get, ConnEnd::Reset);
        get = resume(&d.fire()).0;
    }
    d.end(get, ConnEnd::Reset);
    (d, post)
}

#[test]
fn a_spent_standalone_stream_closes_the_transport_only_under_close_transport() {
    let failed =
        |e: &StepKind| matches!(e, StepKind::AppError { error, .. } if error.starts_with(ERR_TRANSPORT_CLOSED));
    // The Go SDK's rule: the call in flight fails with the transport, later calls fail at once.
    let mut policy = profiles::client("ts-sdk").unwrap();
    policy.standalone_loss = crate::config::StandaloneLoss::CloseTransport;
    let (mut d, post) = standalone_spent(policy);
    assert!(d.app_view().iter().any(failed), "{:#?}", d.app_view());
    assert!(d.log.contains(&ClientOutput::Abort { conn: post }));
    assert!(opens(&d.call(2, false)).is_empty());
    // The SDKs that survive it: the call goes on, and a later call still goes out.
    let (mut d, post) = standalone_spent(profiles::client("ts-sdk").unwrap());
    assert!(!d.app_view().iter().any(failed), "{:#?}", d.app_view());
    assert!(!d.log.contains(&ClientOutput::Abort { conn: post }));
    assert_eq!(tool_call(&d.call(2, false)).2.key, CallKey(2));
}

#[test]
fn a_404_to_a_standalone_resume_read_as_session_lost_reinitializes() {
    use crate::config::LostSessionAnswer as L;
    let resumed_404 = |on_resume: bool| {
        let mut d = Driver::with(rmcp_rules(&[L::NotFound404], on_resume), None, 7);
        let out = d.start();
        let out = d.complete_handshake(&out, S1);
        let (get, _) = only_open(&out, |r| r.method == Method::Get);
        d.frames(get, vec![sse(), event(Some("g-1"), Some(ServerMessage::Notification { seq: 1 }))]);
        d.end(get, ConnEnd::Reset);
        let (again, req) = resume(&d.fire());
        assert_eq!((req.method, req.last_event_id), (Method::Get, ev("g-1")));
        let out = d.answer(again, vec![status(404)]);
        (d, out)
    };
    // As the three SDKs do: one failed attempt, the GET retried in the same session.
    let (mut d, out) = resumed_404(false);
    assert_eq!(initializes(&out), 0);
    assert_eq!(resume(&d.fire()).1.session, Some(sid(S1)));
    // Read as "session lost" on a resume too: rmcp's rule re-initializes.
    let (_, out) = resumed_404(true);
    assert_eq!(initializes(&out), 1, "{out:#?}");
}

#[test]
fn a_405_to_the_standalone_get_is_retried_by_a_client_whose_rule_says_so() {
    let mut policy = profiles::client("ts-sdk").unwrap();
    policy.standalone_405 = crate::config::Standalone405::Retry;
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (get, _) = only_open(&out, |r| r.method == Method::Get);
    d.answer(get, vec![status(405)]);
    let (_, again) = resume(&d.fire());
    assert_eq!(again.method, Method::Get);
    // Accepted as "no standalone stream" by the SDK profiles: nothing more is scheduled.
    let mut d = Driver::new("ts-sdk");
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (get, _) = only_open(&out, |r| r.method == Method::Get);
    d.answer(get, vec![status(405)]);
    assert_eq!(d.c.poll_timeout(), None);
}

#[test]
fn a_405_to_the_standalone_get_is_retried_by_such_a_client_under_close_transport_too() {
    // Under close-transport a 4xx to the first GET means "no standalone stream", except a 405,
    // which the standalone_405 rule decides.
    let mut policy = go_like().c.policy;
    policy.standalone_405 = crate::config::Standalone405::Retry;
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (get, _) = only_open(&out, |r| r.method == Method::Get);
    let out = d.answer(get, vec![status(405)]);
    let retried =
        |s: &StepKind| matches!(s, StepKind::Decision { error: Some(e), .. } if e == "HTTP 405: one failed attempt");
    assert!(steps(&out).iter().any(retried), "{out:#?}");
    assert_eq!(resume(&d.fire()).1.method, Method::Get);
}

#[test]
fn a_refused_call_fails_alone_where_losing_the_standalone_stream_would_close_the_transport() {
    let mut d = go_like();
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (get, _) = only_open(&out, |r| r.method == Method::Get);
    d.frame(get, sse());
    let (post, _, _) = tool_call(&d.call(1, false));
    let out = d.answer(post, vec![status(503)]);
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: "HTTP 503".into() }]);
    assert!(!out.contains(&ClientOutput::Abort { conn: get }), "the standalone stream stays open");
    assert_eq!(tool_call(&d.call(2, false)).2.key, CallKey(2), "the transport is still open");
}

#[test]
fn the_standalone_stream_hands_notifications_over_and_resumes_with_its_own_id() {
    let mut d = Driver::new("ts-sdk");
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (conn, get) = only_open(&out, |r| r.method == Method::Get);
    assert_eq!(get.last_event_id, None);
    let note = ServerMessage::Notification { seq: 1 };
    let out = d.frames(conn, vec![sse(), event(Some("_GET_stream_1"), Some(note.clone()))]);
    assert_eq!(
        app(&out),
        vec![StepKind::AppEvent { session: sid(S1), id: ev("_GET_stream_1"), call: None, message: note }]
    );
    d.end(conn, ConnEnd::Reset);
    let (_, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("_GET_stream_1"));
}

#[test]
fn reference_reports_a_gap_on_the_standalone_stream_without_a_call() {
    let mut policy = plain(CloseHandling::DecisionProcedure, None);
    policy.open_standalone_stream = true;
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (conn, _) = only_open(&out, |r| r.method == Method::Get);
    d.frames(conn, vec![sse(), priming("0-0")]);
    d.end(conn, ConnEnd::Reset);
    let (conn, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("0-0"));
    let out = d.answer(conn, vec![gone("0-7")]);
    assert_eq!(
        app(&out),
        vec![StepKind::AppGap { session: sid(S1), call: None, after: ev("0-0"), head: EventId::from("0-7") }]
    );
}

// ---------------------------------------------------------------------------------------------
// Persistence, timeouts, determinism
// ---------------------------------------------------------------------------------------------

#[test]
fn durable_state_is_written_ahead_and_a_restart_resumes_with_the_persisted_id() {
    let mut d = Driver::ready("reference");
    let out = d.call(1, false);
    assert!(
        matches!(out.first(), Some(ClientOutput::Persist(s)) if s.calls.len() == 1),
        "the in-flight call is on disk before its POST leaves: {out:#?}"
    );
    let (conn, request, _) = tool_call(&out);
    let out = d.frames(conn, vec![sse(), priming("1-0")]);
    let saved = persists(&out).pop().expect("the new last event id was persisted");
    assert_eq!(saved.session, Some(sid(S1)));
    assert_eq!(
        saved.calls,
        vec![DurableCall {
            call: CallKey(1),
            tool: "pay".into(),
            idempotent: false,
            request,
            last_event_id: ev("1-0")
        }]
    );

    // The process dies; a new one starts from the saved state.
    let mut r = Driver::with(profiles::client("reference").expect("listed"), Some(saved), 8);
    assert_eq!(r.c.unresolved_calls(), vec![CallKey(1)]);
    let out = r.start();
    assert_eq!(
        steps(&out)[0],
        StepKind::ClientStart {
            restored: true,
            durable: true,
            by_class: true,
            max_attempts: Some(20),
            on_give_up: None
        }
    );
    let (conn, get) = resume(&out);
    assert_eq!((get.last_event_id, get.session), (ev("1-0"), Some(sid(S1))));
    assert!(opens(&out).iter().all(|(_, r)| !matches!(r.body, Some(ClientMessage::Initialize { .. }))));
    let out = r.answer(conn, vec![sse(), result("1-1", request, 1)]);
    assert_eq!(app(&out), vec![StepKind::AppResult { call: CallKey(1), session: sid(S1), id: ev("1-1") }]);
    // New requests never reuse an id of the restored session.
    let (_, next, _) = tool_call(&r.call(2, false));
    assert!(next > request);
}

#[test]
fn a_restarted_process_numbers_its_connections_after_its_predecessors() {
    let mut d = Driver::ready("reference");
    let (first_post, _, _) = tool_call(&d.call(1, false));
    d.frames(first_post, vec![sse(), priming("1-0")]);
    let next = d.c.next_connection_number();
    assert_eq!(next, first_post.0 + 1);
    let saved = persists(&d.log).pop().expect("the in-flight call was persisted");
    let mut r = Driver::with(profiles::client("reference").expect("listed"), Some(saved), 8);
    r.c.number_connections_from(next);
    let (conn, _) = resume(&r.start());
    assert_eq!(conn, ConnId(next), "the resume GET is the first connection of the new process");
    // Asking for a number already used changes nothing.
    r.c.number_connections_from(1);
    assert_eq!(r.c.next_connection_number(), next + 1);
}

#[test]
fn a_restored_session_reopens_the_standalone_stream_from_its_id_and_sends_the_calls_made_before_start() {
    let mut policy = profiles::client("reference").expect("listed");
    policy.open_standalone_stream = true;
    let state = DurableState {
        session: Some(sid(S1)),
        next_request: 5,
        standalone_last_event_id: ev("g-7"),
        ..DurableState::default()
    };
    let mut r = Driver::with(policy, Some(state), 1);
    assert!(opens(&r.call(1, false)).is_empty(), "nothing goes out before start");
    let out = r.start();
    let (_, get) = resume(&out);
    assert_eq!((get.session, get.last_event_id), (Some(sid(S1)), ev("g-7")));
    let (_, request, call) = tool_call(&out);
    assert_eq!((request, call.key), (RequestId(5), CallKey(1)));
    assert!(opens(&out).iter().all(|(_, r)| !matches!(r.body, Some(ClientMessage::Initialize { .. }))));
}

#[test]
fn a_restored_call_without_an_id_follows_the_never_persisted_rule() {
    let state = DurableState {
        session: Some(sid(S1)),
        next_request: 5,
        calls: vec![
            DurableCall {
                call: CallKey(1),
                tool: "pay".into(),
                idempotent: false,
                request: RequestId(3),
                last_event_id: None,
            },
            DurableCall {
                call: CallKey(2),
                tool: "get".into(),
                idempotent: true,
                request: RequestId(4),
                last_event_id: None,
            },
        ],
        standalone_last_event_id: None,
        pending_delete: None,
        tasks: vec![],
        waiting: vec![],
    };
    let mut r = Driver::with(profiles::client("reference").expect("listed"), Some(state), 1);
    let out = r.start();
    assert_eq!(
        app(&out),
        vec![StepKind::AppUnknownOutcome { call: CallKey(1), reason: DecisionError::NeverPersisted.to_string() }]
    );
    let (_, request, call) = tool_call(&out);
    assert_eq!((request, call.key), (RequestId(5), CallKey(2)));
}

/// A call waiting to be sent again (its POST refused) is kept in durable state, and a restarted
/// process sends it once its session is back: without it the application would wait for good
/// (found by `explore --guided` on resume-after-completion, a restart during a partition).
#[test]
fn a_call_waiting_to_be_sent_again_survives_a_restart_and_goes_out_after_it() {
    let mut d = Driver::ready("reference");
    let (conn, _, _) = tool_call(&d.call(1, true));
    d.end(conn, ConnEnd::Refused);
    let waiting = persists(&d.log).pop().expect("a durable client persists").waiting;
    assert_eq!(waiting, vec![DurableWaiting { call: CallKey(1), tool: "pay".into(), idempotent: true, sent: true }]);
    let state = d.c.durable_state();
    let mut r = Driver::with(profiles::client("reference").expect("listed"), Some(state), 1);
    let (_, _, call) = tool_call(&r.start());
    assert_eq!(call.key, CallKey(1), "sent again by the restarted process");
}

#[test]
fn a_volatile_client_never_persists() {
    let mut d = Driver::ready("naive");
    call_then_reset(&mut d, 1, false, Some("1-0"));
    assert!(persists(&d.log).is_empty());
}

#[test]
fn a_request_timeout_cancels_aborts_and_fails_the_call() {
    let mut d = Driver::ready("ts-sdk"); // 60 s
    let (conn, request, _) = tool_call(&d.call(1, false));
    d.frames(conn, vec![sse(), priming("a_1")]);
    assert_eq!(d.c.poll_timeout(), Some(Instant(60_000_000)));
    let out = d.fire();
    let (_, cancel) = only_open(&out, |_| true);
    assert_eq!(cancel.body, Some(ClientMessage::Cancelled { request }));
    assert_eq!(cancel.session, Some(sid(S1)));
    assert!(out.contains(&ClientOutput::Abort { conn }));
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: ERR_TIMED_OUT.into() }]);
    // The aborted stream's end changes nothing.
    let after = d.end(conn, ConnEnd::Aborted);
    assert!(app(&after).is_empty() && opens(&after).is_empty());
}

/// The decision procedure after a request timeout: the request went out and may have run, so the
/// call's outcome is unknown (never "failed", which invites a blind re-send of a payment).
#[test]
fn the_decision_procedure_reports_a_sent_request_that_timed_out_as_unknown_outcome() {
    let mut policy = profiles::client("reference").expect("listed");
    policy.request_timeout = Some(std::time::Duration::from_secs(22));
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    d.complete_handshake(&out, S1);
    let (conn, request, _) = tool_call(&d.call(1, false));
    d.frames(conn, vec![sse(), priming("a_1")]);
    let out = d.fire();
    let (_, cancel) = only_open(&out, |_| true);
    assert_eq!(cancel.body, Some(ClientMessage::Cancelled { request }));
    assert_eq!(app(&out), vec![StepKind::AppUnknownOutcome { call: CallKey(1), reason: ERR_TIMED_OUT_SENT.into() }]);
}

/// A fixed scenario with reconnects, run on `seed`; returns everything output.
fn scripted_run(seed: u64) -> Vec<ClientOutput> {
    let mut d = Driver::with(profiles::client("reference").expect("listed"), None, seed);
    let out = d.start();
    d.complete_handshake(&out, S1);
    for key in 1..=3 {
        let (request, _) = call_then_reset(&mut d, key, key % 2 == 0, Some(&format!("{key}-0")));
        let (conn, _) = resume(&d.fire());
        d.end(conn, ConnEnd::Refused);
        let (conn, _) = resume(&d.fire());
        d.answer(conn, vec![sse(), result(&format!("{key}-1"), request, key)]);
    }
    d.log
}

#[test]
fn the_same_seed_gives_the_same_outputs() {
    let (a, b) = (scripted_run(42), scripted_run(42));
    assert_eq!(a, b);
    assert_ne!(backoffs(&a), backoffs(&scripted_run(43)), "the seed drives the jitter");
}

#[test]
fn unknown_connections_and_frames_never_panic() {
    let mut d = Driver::new("reference");
    d.frame(ConnId(77), sse());
    d.frame(ConnId(77), Frame::Json(ServerMessage::Notification { seq: 1 }));
    d.end(ConnId(77), ConnEnd::Reset);
    d.c.handle_timeout(Instant(5));
    assert!(d.app_view().is_empty());
}

#[test]
fn answers_are_routed_by_request_id_and_dropped_once_their_call_resolved() {
    let mut d = Driver::ready("py-sdk");
    let (c1, r1, _) = tool_call(&d.call(1, false));
    let (c2, r2, _) = tool_call(&d.call(2, false));
    d.frames(c2, vec![sse(), priming("x")]);
    // Call 1's progress arriving on call 2's stream is call 1's (JSON-RPC routes by id).
    let out = d.frame(c2, progress("y", r1, 1, 1));
    assert!(matches!(&app(&out)[..], [StepKind::AppEvent { call: Some(CallKey(1)), .. }]));
    d.answer(c1, vec![sse(), result("z", r1, 1)]);
    // A replay of call 1's result on a live stream is not handed over a second time.
    let out = d.frames(c2, vec![result("z", r1, 1), progress("w", r1, 1, 2)]);
    assert!(app(&out).is_empty(), "{out:#?}");
    let out = d.frame(c2, result("v", r2, 2));
    assert_eq!(app(&out), vec![StepKind::AppResult { call: CallKey(2), session: sid(S1), id: ev("v") }]);
}

#[test]
fn a_successful_handshake_resets_the_initialize_failure_count() {
    let mut d = Driver::new("naive"); // max_attempts 5
    let mut out = d.start();
    for _ in 0..4 {
        let (conn, _) = only_open(&out, |_| true);
        d.end(conn, ConnEnd::Refused);
        out = d.fire();
    }
    d.complete_handshake(&out, S1);
    // The session breaks; the next initialize is refused: a first failure, not the fifth.
    let (_, out) = call_then_reset(&mut d, 1, false, Some("1-0"));
    let (conn, _) = only_open(&out, |_| true);
    let out = d.end(conn, ConnEnd::Refused);
    assert!(app(&out).is_empty());
    assert_eq!(backoffs(&out)[0].0, 1);
}

#[test]
fn on_event_resets_the_counter_only_on_a_reconnected_stream() {
    let mut policy = plain(CloseHandling::DecisionProcedure, None);
    policy.reconnect.counter_reset = CounterReset::OnEvent;
    let mut d = ready_with(policy);
    // No id: the idempotent call is re-sent as a new POST, which spends an attempt.
    call_then_reset(&mut d, 1, true, None);
    let (conn, _, _) = tool_call(&d.fire());
    // Events on that POST stream are no successful reconnect.
    d.frames(conn, vec![sse(), priming("1-0")]);
    let out = d.end(conn, ConnEnd::Reset);
    assert_eq!(backoffs(&out)[0].0, 2);
}

#[test]
fn a_call_answered_with_a_json_body_resolves() {
    let mut d = Driver::ready("reference");
    let (conn, request, _) = tool_call(&d.call(1, false));
    let out = d.answer(
        conn,
        vec![Frame::Head(json_head()), Frame::Json(ServerMessage::ToolResult { request, call: CallKey(1) })],
    );
    assert_eq!(app(&out), vec![StepKind::AppResult { call: CallKey(1), session: sid(S1), id: None }]);
    assert!(decisions(&out).is_empty(), "the clean end after the answer is no close to judge");
    assert!(d.c.is_quiet());
}

#[test]
fn reference_reopens_a_standalone_stream_that_never_carried_an_id() {
    let mut policy = plain(CloseHandling::DecisionProcedure, None);
    policy.open_standalone_stream = true;
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (conn, _) = only_open(&out, |r| r.method == Method::Get);
    let out = d.answer(conn, vec![sse()]);
    assert_eq!(
        decisions(&out),
        vec![StepKind::Decision {
            call: None,
            outcome: None,
            action: None,
            error: Some(DecisionError::NeverPersisted.to_string())
        }]
    );
    assert!(app(&out).is_empty());
    let (_, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, None);
}

// ---------------------------------------------------------------------------------------------
// The 2026-07-28 revision: no sessions, a broken stream is re-issued with a new id
// ---------------------------------------------------------------------------------------------

/// A started `stateless-2026` client with jitter off, so delays are exact.
fn stateless() -> Driver {
    let mut policy = profiles::client("stateless-2026").expect("listed");
    policy.reconnect.jitter = 0.0;
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    assert!(opens(&out).is_empty(), "no handshake: {out:#?}");
    d
}

#[test]
fn a_client_without_sessions_sends_calls_at_once_without_a_session_header() {
    let mut d = stateless();
    let out = d.call(1, false);
    let (conn, request, call) = tool_call(&out);
    assert_eq!((request, call.key), (RequestId(1), CallKey(1)));
    assert_eq!(only_open(&out, |_| true).1.session, None);
    let out = d.answer(conn, vec![sse(), result("0.1-0", request, 1)]);
    assert_eq!(app(&out), vec![StepKind::AppResult { call: CallKey(1), session: sid(""), id: ev("0.1-0") }]);
    assert!(d.c.is_quiet() && d.c.session().is_none());
}

#[test]
fn calls_queued_before_start_go_out_at_start_without_a_handshake() {
    let mut d = Driver::new("stateless-2026");
    assert!(opens(&d.call(1, true)).is_empty(), "not started yet");
    let (_, _, call) = tool_call(&d.start());
    assert_eq!(call.key, CallKey(1));
}

#[test]
fn stateless_reissues_a_broken_call_with_a_new_id_after_backoff_and_never_resumes() {
    let mut d = stateless();
    let (first, out) = call_then_reset(&mut d, 1, false, Some("0.1-0"));
    assert_eq!(
        decisions(&out),
        vec![StepKind::Decision {
            call: Some(CallKey(1)),
            outcome: None,
            action: None,
            error: Some(NOTE_REISSUE.into())
        }]
    );
    assert_eq!(backoffs(&out), vec![(1, 1_000_000)]);
    assert!(opens(&out).is_empty(), "nothing before the backoff");
    let out = d.fire();
    assert_eq!(d.now, Instant(1_000_000));
    let (conn, again, call) = tool_call(&out);
    assert_ne!(again, first, "a new JSON-RPC id");
    assert_eq!((call.key, call.tool.as_str()), (CallKey(1), "pay"));
    assert_eq!(only_open(&out, |_| true).1, Request::modern_post(ClientMessage::CallTool { id: again, call }));
    // The old request's late answer is not the call's any more; the new one's is.
    assert!(app(&d.frames(ConnId(99), vec![result("x", first, 1)])).is_empty());
    let out = d.answer(conn, vec![sse(), result("0.2-0", again, 1)]);
    assert_eq!(app(&out), vec![StepKind::AppResult { call: CallKey(1), session: sid(""), id: ev("0.2-0") }]);
    assert!(opens(&d.log).iter().all(|(_, r)| r.method == Method::Post), "no GET, ever");
    assert_eq!(posts_of_call(&d.log), vec![first, again]);
}

#[test]
fn stateless_reissues_after_a_refused_connection_a_5xx_or_a_close_without_the_response() {
    for ending in [vec![], vec![status(503)], vec![sse()]] {
        let mut d = stateless();
        let (conn, first, _) = tool_call(&d.call(1, true));
        let out = if ending.is_empty() { d.end(conn, ConnEnd::Refused) } else { d.answer(conn, ending.clone()) };
        assert_eq!(backoffs(&out).len(), 1, "{ending:?}");
        let (_, again, _) = tool_call(&d.fire());
        assert_ne!(again, first);
    }
}

#[test]
fn stateless_fails_a_call_answered_400_by_a_server_that_requires_sessions() {
    let mut d = stateless();
    let (conn, _, _) = tool_call(&d.call(1, false));
    let error = ErrorBody { code: ErrorCode::SessionRequired, head_event_id: None };
    let out = d.answer(conn, vec![Frame::Head(ResponseHead::error(Status::BAD_REQUEST, error))]);
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: "HTTP 400".into() }]);
    assert!(opens(&out).is_empty() && d.c.is_quiet() && d.c.poll_timeout().is_none());
}

#[test]
fn stateless_exhausted_reissues_end_as_unknown_outcome_or_error() {
    for (idempotent, expected) in [
        (false, StepKind::AppUnknownOutcome { call: CallKey(1), reason: ERR_EXHAUSTED.into() }),
        (true, StepKind::AppError { call: CallKey(1), error: ERR_EXHAUSTED.into() }),
    ] {
        let mut d = stateless(); // 5 attempts
        let (_, mut out) = call_then_reset(&mut d, 1, idempotent, None);
        for attempt in 1..=5u32 {
            assert_eq!(backoffs(&out)[0].0, attempt);
            let (conn, _, _) = tool_call(&d.fire());
            out = d.end(conn, ConnEnd::Reset);
        }
        assert_eq!(app(&out), vec![expected]);
        assert_eq!(posts_of_call(&d.log).len(), 6, "the first POST and five re-issues");
        assert!(d.c.is_quiet());
    }
}

#[test]
fn a_stateless_client_does_not_reopen_a_standalone_stream() {
    let mut policy = profiles::client("stateless-2026").expect("listed");
    policy.open_standalone_stream = true;
    // Speaking the modern era, it opens none at all (there is no GET stream in 2026-07-28).
    let mut d = Driver::with(policy.clone(), None, 7);
    assert!(opens(&d.start()).is_empty());
    // Without an era rule (a sessionless client as before eras), it tries once and never again.
    policy.era = None;
    let mut d = Driver::with(policy, None, 7);
    let (conn, get) = only_open(&d.start(), |_| true);
    assert_eq!((get.method, get.session), (Method::Get, None));
    let out = d.answer(conn, vec![status(405)]);
    assert_eq!(decisions(&out).len(), 1);
    assert!(opens(&out).is_empty() && d.c.poll_timeout().is_none());
}

#[test]
fn a_session_client_goes_on_without_a_session_when_initialize_mints_none() {
    let mut d = Driver::new("reference");
    let out = d.start();
    let (init, req) = only_open(&out, |_| true);
    let id = req.body.as_ref().and_then(ClientMessage::request_id).expect("an id");
    let out =
        d.answer(init, vec![Frame::Head(json_head()), Frame::Json(ServerMessage::InitializeResult { request: id })]);
    let (ack, req) = only_open(&out, |_| true);
    assert_eq!((req.body, req.session), (Some(ClientMessage::Initialized), None));
    d.answer(ack, vec![Frame::Head(ResponseHead::status(Status::ACCEPTED))]);
    assert_eq!(d.c.session(), None);
    let out = d.call(1, false);
    let (conn, request, _) = tool_call(&out);
    assert_eq!(only_open(&out, |_| true).1.session, None);
    let out = d.answer(conn, vec![sse(), result("0.1-0", request, 1)]);
    assert_eq!(app(&out), vec![StepKind::AppResult { call: CallKey(1), session: sid(""), id: ev("0.1-0") }]);
}

#[test]
fn reference_gives_up_on_a_405_resume_from_a_server_without_sessions() {
    let mut d = Driver::ready("reference");
    call_then_reset(&mut d, 1, false, Some("0.1-0"));
    let (conn, _) = resume(&d.fire());
    let out = d.answer(conn, vec![status(405)]);
    // The call was accepted (an event came): it may have run, so it is an unknown outcome.
    let refusal = DecisionError::UnexpectedStatus { status: 405 }.to_string();
    assert_eq!(app(&out), vec![StepKind::AppUnknownOutcome { call: CallKey(1), reason: refusal }]);
    assert!(d.c.poll_timeout().is_none());
}

// ---------------------------------------------------------------------------------------------
// The application ends its session
// ---------------------------------------------------------------------------------------------

#[test]
fn delete_session_sends_delete_settles_every_call_and_stops_reconnecting() {
    let mut d = Driver::ready("reference");
    let (pay, _, _) = tool_call(&d.call(1, false));
    d.frames(pay, vec![sse(), priming("1-0")]);
    let (get, _, _) = tool_call(&d.call(2, true));
    // Call 3's stream broke and waits for its reconnect.
    call_then_reset(&mut d, 3, false, Some("3-0"));
    assert!(d.c.poll_timeout().is_some());

    d.c.delete_session(d.now);
    let out = d.drain();
    let (conn, delete) = only_open(&out, |_| true);
    assert_eq!(delete, Request::delete(sid(S1)));
    assert_eq!(
        app(&out),
        vec![
            StepKind::AppUnknownOutcome { call: CallKey(1), reason: SESSION_DELETED.into() },
            StepKind::AppError { call: CallKey(2), error: SESSION_DELETED.into() },
            StepKind::AppUnknownOutcome { call: CallKey(3), reason: SESSION_DELETED.into() },
        ]
    );
    assert!(out.contains(&ClientOutput::Abort { conn: pay }) && out.contains(&ClientOutput::Abort { conn: get }));
    assert_eq!(d.c.session(), None);
    assert_eq!(d.c.poll_timeout(), None, "no reconnect, no handshake retry");
    assert!(d.c.unresolved_calls().is_empty());

    // Any answer is recorded and changes nothing.
    let out = d.answer(conn, vec![status(404)]);
    assert_eq!(steps(&out)[0], StepKind::Response { conn, head: ResponseHead::status(Status::NOT_FOUND) });
    assert!(app(&out).is_empty() && opens(&out).is_empty() && decisions(&out).is_empty());
    assert!(d.c.is_quiet());
    // The aborted streams' ends change nothing either.
    assert!(opens(&d.end(pay, ConnEnd::Aborted)).is_empty());

    // A later call starts a new session.
    let out = d.call(4, false);
    assert!(matches!(only_open(&out, |_| true).1.body, Some(ClientMessage::Initialize { .. })));
}

#[test]
fn delete_session_fails_a_call_never_sent_and_aborts_the_handshake() {
    let mut d = Driver::new("reference");
    let out = d.start();
    let (init, _) = only_open(&out, |_| true);
    d.call(1, false);
    d.c.delete_session(d.now);
    let out = d.drain();
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: SESSION_DELETED.into() }]);
    assert!(out.contains(&ClientOutput::Abort { conn: init }));
    assert!(opens(&out).is_empty(), "no session, nothing to DELETE");
    assert!(d.c.is_quiet());
}

#[test]
fn reinitializing_forgets_the_session_and_the_next_call_goes_under_a_new_one() {
    let mut d = Driver::ready("reference");
    d.c.reinitialize(d.now);
    let out = d.drain();
    assert_eq!(d.c.session(), None, "the old session is forgotten");
    assert_eq!(app(&out), vec![StepKind::AppReinitialize { session: sid(S1) }], "the trace says whose act it was");
    assert!(opens(&out).iter().all(|(_, r)| r.method != Method::Delete), "forgotten, not deleted: {out:#?}");
    d.complete_handshake(&out, S2);
    let (_, post) = only_open(&d.call(1, false), |_| true);
    assert_eq!(post.session, Some(sid(S2)), "the call goes under the new session");
}

#[test]
fn reinitializing_while_the_delete_is_pending_initializes_only_once_the_delete_is_answered() {
    let mut d = Driver::ready("reference");
    d.c.delete_session(d.now);
    let (delete, _) = only_open(&d.drain(), |r| r.method == Method::Delete);
    d.c.reinitialize(d.now);
    let out = d.drain();
    assert!(opens(&out).is_empty(), "no second session while the first is being deleted: {out:#?}");
    assert_eq!(app(&out), vec![], "no session was held to leave behind");
    let out = d.answer(delete, vec![status(200)]);
    let (_, req) = only_open(&out, |_| true);
    assert!(matches!(req.body, Some(ClientMessage::Initialize { .. })), "{req:#?}");
}

#[test]
fn a_durable_client_persists_the_deleted_session_before_the_delete_leaves() {
    let mut d = Driver::ready("reference");
    d.call(1, true);
    d.c.delete_session(d.now);
    let out = d.drain();
    let Some(ClientOutput::Persist(state)) = out.first() else { panic!("persist first: {out:#?}") };
    assert_eq!((state.session.clone(), state.calls.len()), (None, 0));
}

// ---------------------------------------------------------------------------------------------
// The standalone stream answered 409
// ---------------------------------------------------------------------------------------------

fn stream_already_open() -> Frame {
    let error = ErrorBody { code: ErrorCode::StreamAlreadyOpen, head_event_id: None };
    Frame::Head(ResponseHead::error(Status::CONFLICT, error))
}

#[test]
fn reference_stops_a_standalone_stream_answered_409_without_looping() {
    let mut policy = plain(CloseHandling::DecisionProcedure, None); // unlimited attempts
    policy.open_standalone_stream = true;
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (conn, _) = only_open(&out, |r| r.method == Method::Get);
    let out = d.answer(conn, vec![stream_already_open()]);
    assert_eq!(
        decisions(&out),
        vec![StepKind::Decision {
            call: None,
            outcome: None,
            action: None,
            error: Some(DecisionError::NoHeadAdvertised.to_string())
        }]
    );
    assert!(app(&out).is_empty(), "no call to fail, no gap to report");
    assert!(opens(&out).is_empty() && backoffs(&out).is_empty());
    assert_eq!(d.c.poll_timeout(), None);
    assert!(d.c.is_quiet());
    // Calls still work.
    let (conn, request, _) = tool_call(&d.call(1, false));
    let out = d.answer(conn, vec![sse(), result("1-0", request, 1)]);
    assert_eq!(app(&out).len(), 1);
}

#[test]
fn an_sdk_client_counts_a_409_standalone_get_as_a_failed_attempt_and_gives_up() {
    let mut d = Driver::new("ts-sdk"); // 2 attempts
    let out = d.start();
    let mut out = d.complete_handshake(&out, S1);
    for _ in 0..2 {
        let (conn, _) = only_open(&out, |r| r.method == Method::Get);
        let ended = d.answer(conn, vec![stream_already_open()]);
        assert_eq!(backoffs(&ended).len(), 1);
        out = d.fire();
    }
    let (conn, _) = only_open(&out, |r| r.method == Method::Get);
    let out = d.answer(conn, vec![stream_already_open()]);
    assert!(backoffs(&out).is_empty() && opens(&out).is_empty());
    assert_eq!(d.c.poll_timeout(), None);
}

#[test]
fn ts_forgets_the_resume_token_only_when_an_answered_resume_breaks_before_an_id() {
    // typescript-sdk#2499: a resumed stream's cursor starts empty, so an answered resume cut
    // before any id-bearing event forgets its Last-Event-ID. A resume refused before any answer
    // keeps it (TS 1.32.2 sent the same id on both refused attempts of `mcpsim probe client`).
    let mut policy = profiles::client("ts-sdk").expect("a listed profile");
    policy.reconnect.max_attempts = Some(5);
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    d.complete_handshake(&out, S1);
    call_then_reset(&mut d, 1, false, Some("1-0"));
    let (conn, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("1-0"));
    d.end(conn, ConnEnd::Refused);
    let (conn, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("1-0"), "a refused resume keeps its token");
    d.frame(conn, sse());
    d.end(conn, ConnEnd::Reset);
    let (_, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, None, "an answered resume cut before an id forgets it");
}

/// Starts `profile`, answers `initialize` with session `s1`, and breaks the `initialized`
/// notification's connection with `end` (or answers it with `code`); then runs the backoff timer.
/// What the client opens after the backoff.
fn after_failed_acknowledgement(profile: &str, end: Option<ConnEnd>, code: Option<u16>) -> Request {
    let mut d = Driver::new(profile);
    let out = d.start();
    let (init, req) = only_open(&out, |r| matches!(r.body, Some(ClientMessage::Initialize { .. })));
    let id = req.body.as_ref().and_then(|b| b.request_id()).expect("initialize has an id");
    let head = ResponseHead { session: Some(SessionId::from(S1)), ..json_head() };
    let out = d.answer(init, vec![Frame::Head(head), Frame::Json(ServerMessage::InitializeResult { request: id })]);
    let (ack, _) = only_open(&out, |r| r.body == Some(ClientMessage::Initialized));
    let out = match (end, code) {
        (Some(end), _) => d.end(ack, end),
        (None, Some(code)) => d.answer(ack, vec![status(code)]),
        (None, None) => unreachable!("the test names a failure"),
    };
    assert_eq!(backoffs(&out).len(), 1, "a failed acknowledgement waits the initialize backoff");
    let (_, req) = only_open(&d.fire(), |_| true);
    req
}

#[test]
fn the_reference_client_sends_initialized_again_on_the_same_session_after_a_transport_failure() {
    // A new `initialize` instead would leave s1 live beside the new session: an orphan.
    for end in [ConnEnd::Reset, ConnEnd::Refused] {
        let req = after_failed_acknowledgement("reference", Some(end), None);
        assert_eq!(req.body, Some(ClientMessage::Initialized), "after {end}");
        assert_eq!(req.session, Some(SessionId::from(S1)), "after {end}");
    }
    let req = after_failed_acknowledgement("reference", None, Some(503));
    assert_eq!((req.body, req.session), (Some(ClientMessage::Initialized), Some(SessionId::from(S1))));
}

#[test]
fn a_session_whose_acknowledgement_ran_out_of_attempts_is_acknowledged_again_at_the_next_call() {
    // A new `initialize` at the next call would leave s1 live beside the new session: an orphan.
    let mut policy = profiles::client("reference").expect("listed");
    policy.reconnect.max_attempts = Some(2);
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    d.call(1, false);
    let (init, req) = only_open(&out, |r| matches!(r.body, Some(ClientMessage::Initialize { .. })));
    let id = req.body.as_ref().and_then(|b| b.request_id()).expect("initialize has an id");
    let head = ResponseHead { session: Some(SessionId::from(S1)), ..json_head() };
    let mut out = d.answer(init, vec![Frame::Head(head), Frame::Json(ServerMessage::InitializeResult { request: id })]);
    for _ in 0..2 {
        let (ack, req) = only_open(&out, |_| true);
        assert_eq!((req.body, req.session), (Some(ClientMessage::Initialized), Some(SessionId::from(S1))));
        out = d.end(ack, ConnEnd::Refused);
        if let Some(fired) = d.try_fire() {
            out = fired;
        }
    }
    let failed = StepKind::AppError { call: CallKey(1), error: "initialize failed: connection refused".into() };
    assert!(app(&d.log).contains(&failed), "{:#?}", app(&d.log));
    assert!(d.c.is_quiet() && d.c.poll_timeout().is_none(), "given up: nothing pending");
    let (_, req) = only_open(&d.call(2, false), |_| true);
    assert_eq!((req.body, req.session), (Some(ClientMessage::Initialized), Some(SessionId::from(S1))));
}

#[test]
fn a_404_to_initialized_and_other_clients_start_a_new_session() {
    // The server forgot s1: nothing is orphaned by a new session.
    let req = after_failed_acknowledgement("reference", None, Some(404));
    assert!(matches!(req.body, Some(ClientMessage::Initialize { .. })));
    assert_eq!(req.session, None);
    // The SDKs' failed `connect()` starts over.
    for profile in ["naive", "ts-sdk", "py-sdk", "rmcp"] {
        let req = after_failed_acknowledgement(profile, Some(ConnEnd::Reset), None);
        assert!(matches!(req.body, Some(ClientMessage::Initialize { .. })), "{profile}");
    }
}

// -----------------------------------------------------------------------------------------
// The era rule (`era_choice.rs`)
// -----------------------------------------------------------------------------------------

fn auto_client(reprobe: bool) -> Driver {
    Driver::with(auto_policy(reprobe), None, 7)
}

fn auto_policy(reprobe: bool) -> ClientPolicy {
    let era = crate::era::ClientEra {
        mode: crate::era::EraMode::Auto,
        cache: crate::era::EraCacheScope::Origin,
        reprobe_on_failure: reprobe,
        fallback_on_no_answer: false,
    };
    ClientPolicy { era: Some(era), ..profiles::client("py-sdk").expect("listed") }
}

fn is_probe(r: &Request) -> bool {
    matches!(r.body, Some(ClientMessage::Discover { .. }))
}

/// A legacy-only server's own 400 to a modern request: no modern error body.
fn legacy_400() -> Frame {
    Frame::Head(ResponseHead::error(Status::BAD_REQUEST, ErrorBody { code: ErrorCode::Other, head_event_id: None }))
}

#[test]
fn an_auto_client_probes_then_re_probes_when_its_cached_era_fails() {
    let mut d = auto_client(true);
    let (probe, req) = only_open(&d.start(), is_probe);
    assert_eq!(req.meta_version.as_deref(), Some("2026-07-28"));
    d.answer(probe, vec![Frame::Head(json_head())]);
    let (post, req) = only_open(&d.call(1, false), |_| true);
    assert_eq!((req.session, req.protocol_version.as_deref()), (None, Some("2026-07-28")));
    // The replica behind the origin went back to legacy only: the cached era failed, the call
    // (which never ran) waits for a new probe, which falls back to initialize.
    let out = d.answer(post, vec![legacy_400()]);
    assert!(app(&out).is_empty(), "the call is not failed: {out:#?}");
    let (probe, _) = only_open(&out, is_probe);
    let out = d.answer(probe, vec![legacy_400()]);
    assert!(steps(&out).contains(&StepKind::EraChosen { era: crate::era::Era::Legacy, probed: true }));
    let out = d.complete_handshake(&out, S1);
    let (_, req) = only_open(&out, |r| matches!(r.body, Some(ClientMessage::CallTool { .. })));
    assert_eq!((req.session, req.meta_version), (Some(SessionId::from(S1)), None), "sent again, legacy");
}

#[test]
fn without_re_probe_the_cached_era_is_kept_and_the_call_fails_after_one_more_try() {
    let mut d = auto_client(false);
    let (probe, _) = only_open(&d.start(), is_probe);
    d.answer(probe, vec![Frame::Head(json_head())]);
    let (post, _) = only_open(&d.call(1, false), |_| true);
    let out = d.answer(post, vec![legacy_400()]);
    let (again, req) = only_open(&out, |_| true);
    assert!(!is_probe(&req), "the cache still says modern: no probe");
    let out = d.answer(again, vec![legacy_400()]);
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: "HTTP 400".into() }]);
}

/// A `stateless-2026` client whose application listens, jitter off, `max_attempts` re-listens.
fn listening(max_attempts: u32) -> Driver {
    let mut policy = profiles::client("stateless-2026").expect("listed");
    policy.reconnect.jitter = 0.0;
    policy.reconnect.max_attempts = Some(max_attempts);
    policy.subscriptions.listen = true;
    Driver::with(policy, None, 7)
}

fn is_listen(r: &Request) -> bool {
    matches!(r.body, Some(ClientMessage::Listen { .. }))
}

#[test]
fn a_listen_stream_that_keeps_breaking_is_retried_max_attempts_times_then_ended() {
    let mut d = listening(2);
    let (mut conn, _) = only_open(&d.start(), is_listen);
    // The first stream and two re-listens (max_attempts = 2) each break before an
    // acknowledgment; the third failure in a row ends the subscription.
    for attempt in 1..=2 {
        assert!(opens(&d.end(conn, ConnEnd::Reset)).is_empty(), "the re-listen waits its backoff");
        let out = d.fire();
        conn = only_open(&out, is_listen).0;
        assert!(d.c.next_relisten().is_none(), "attempt {attempt} is in flight");
    }
    d.end(conn, ConnEnd::Reset);
    assert!(d.c.next_relisten().is_none() && d.c.listen.is_none(), "attempts spent: the subscription ended");
}

#[test]
fn a_re_probe_that_finds_the_modern_era_again_keeps_the_one_listen_stream_open() {
    let mut policy = auto_policy(true);
    policy.subscriptions.listen = true;
    let mut d = Driver::with(policy, None, 7);
    let (probe, _) = only_open(&d.start(), is_probe);
    let (listen, req) = only_open(&d.answer(probe, vec![Frame::Head(json_head())]), is_listen);
    let Some(ClientMessage::Listen { id }) = req.body else { unreachable!("filtered above") };
    d.frames(listen, vec![sse(), event(None, Some(ServerMessage::ListenAck { subscription: id }))]);
    // The call's POST is refused as by a legacy-only replica: the era is probed again, and the
    // probe finds the modern era again.
    let (post, _) = only_open(&d.call(1, false), |_| true);
    let (probe, _) = only_open(&d.answer(post, vec![legacy_400()]), is_probe);
    let out = d.answer(probe, vec![Frame::Head(json_head())]);
    let (_, _, call) = tool_call(&out);
    assert_eq!(call.key, CallKey(1), "the call goes again");
    assert!(!opens(&out).iter().any(|(_, r)| is_listen(r)), "the listen stream is still open: no second one");
}

#[test]
fn a_listening_client_that_reinitializes_tells_the_app_and_listens_again() {
    // Reinitializing closes every connection, the listen stream's too: the application is told
    // its subscription ended (it refetches once acknowledged again), and the client listens
    // again at once rather than holding the aborted stream as open.
    let mut d = listening(3);
    let (conn, req) = only_open(&d.start(), is_listen);
    let Some(ClientMessage::Listen { id }) = req.body else { unreachable!("filtered above") };
    d.frames(conn, vec![sse(), event(None, Some(ServerMessage::ListenAck { subscription: id }))]);
    d.c.reinitialize(d.now);
    let out = d.drain();
    assert!(out.contains(&ClientOutput::Abort { conn }), "{out:#?}");
    assert!(
        matches!(app(&out).as_slice(), [StepKind::AppSubscriptionLost { reason }] if reason.starts_with(crate::subscriptions::LOST_ABRUPT)),
        "{out:#?}"
    );
    let (again, req) = only_open(&out, is_listen);
    assert_ne!(again, conn);
    let Some(ClientMessage::Listen { id }) = req.body else { unreachable!("filtered above") };
    d.end(conn, ConnEnd::Aborted);
    let out = d.frames(again, vec![sse(), event(None, Some(ServerMessage::ListenAck { subscription: id }))]);
    assert!(steps(&out).contains(&StepKind::ListenOpen { conn: again, subscription: id }), "{out:#?}");
}

#[test]
fn a_listening_client_that_reinitializes_under_relisten_listens_again_and_tells_the_app_nothing() {
    let mut d = listening(3);
    d.c.policy.subscriptions.on_abrupt_end = crate::subscriptions::AbruptEnd::Relisten;
    let (conn, req) = only_open(&d.start(), is_listen);
    acknowledge_listen(&mut d, conn, req);
    d.c.reinitialize(d.now);
    let out = d.drain();
    assert!(out.contains(&ClientOutput::Abort { conn }), "{out:#?}");
    assert_eq!(app(&out), vec![], "relisten tells the application nothing");
    assert_ne!(only_open(&out, is_listen).0, conn);
}

/// Opens `d`'s listen stream `conn` (asked with `req`) and acknowledges it.
fn acknowledge_listen(d: &mut Driver, conn: ConnId, req: Request) -> Vec<ClientOutput> {
    let Some(ClientMessage::Listen { id }) = req.body else { panic!("not a listen request: {req:#?}") };
    d.frames(conn, vec![sse(), event(None, Some(ServerMessage::ListenAck { subscription: id }))])
}

#[test]
fn the_app_is_told_of_a_lost_subscription_only_under_tell_app_and_only_once_it_was_acknowledged() {
    let lost = |out: &[ClientOutput]| app(out).iter().any(|s| matches!(s, StepKind::AppSubscriptionLost { .. }));
    // tell-app, broken before its acknowledgment: the application never believed it subscribed.
    let mut d = listening(3);
    let (conn, _) = only_open(&d.start(), is_listen);
    assert!(!lost(&d.end(conn, ConnEnd::Reset)));
    assert!(d.c.next_relisten().is_some(), "re-listened all the same");
    // relisten, broken after its acknowledgment: the client re-listens and tells nothing.
    let mut d = listening(3);
    d.c.policy.subscriptions.on_abrupt_end = crate::subscriptions::AbruptEnd::Relisten;
    let (conn, req) = only_open(&d.start(), is_listen);
    acknowledge_listen(&mut d, conn, req);
    assert!(!lost(&d.end(conn, ConnEnd::Reset)));
    assert!(d.c.next_relisten().is_some());
}

/// `keep-flag` (go-sdk#1229): the listen stream's end is neither told nor followed by a re-listen;
/// the client keeps believing it is subscribed.
#[test]
fn a_client_that_keeps_its_subscription_flag_neither_tells_nor_listens_again() {
    let lost = |out: &[ClientOutput]| app(out).iter().any(|s| matches!(s, StepKind::AppSubscriptionLost { .. }));
    let mut d = listening(3);
    d.c.policy.subscriptions.on_abrupt_end = crate::subscriptions::AbruptEnd::KeepFlag;
    let (conn, req) = only_open(&d.start(), is_listen);
    acknowledge_listen(&mut d, conn, req);
    let out = d.end(conn, ConnEnd::Reset);
    assert!(!lost(&out), "nothing told");
    assert!(d.c.next_relisten().is_none(), "nothing re-listened");
    assert!(d.c.listen.as_ref().is_some_and(|l| l.believed_open), "still believed open");
}

#[test]
fn a_change_on_the_acknowledged_listen_stream_reaches_the_app() {
    let mut d = listening(3);
    let (conn, req) = only_open(&d.start(), is_listen);
    let Some(ClientMessage::Listen { id }) = req.body else { unreachable!("filtered above") };
    acknowledge_listen(&mut d, conn, req);
    let change = ServerMessage::Changed { subscription: id, change: "c-1".into() };
    let out = d.frame(conn, event(None, Some(change)));
    assert_eq!(app(&out), vec![StepKind::AppChange { change: "c-1".into() }]);
}

#[test]
fn re_listens_wait_the_reconnect_backoff_of_their_attempt() {
    let mut policy = profiles::client("stateless-2026").expect("listed");
    policy.reconnect = ReconnectPolicy {
        initial: Duration::from_secs(1),
        factor: 2.0,
        max: Duration::from_secs(30),
        max_attempts: Some(5),
        counter_reset: CounterReset::OnSuccessfulReconnect,
        retry_field: RetryField::Ignore,
        first_immediate: false,
        jitter: 0.0,
    };
    policy.subscriptions.listen = true;
    let mut d = Driver::with(policy, None, 7);
    let (mut conn, _) = only_open(&d.start(), is_listen);
    for wait_s in [1, 2, 4] {
        let broke_at = d.now;
        d.end(conn, ConnEnd::Reset);
        assert_eq!(d.c.next_relisten(), Some(broke_at + Duration::from_secs(wait_s)));
        conn = only_open(&d.fire(), is_listen).0;
    }
}

#[test]
fn a_go_like_client_takes_any_4xx_to_its_first_get_as_405_and_goes_on() {
    // Any 4xx to the first standalone GET means what a 405 does: no standalone stream, and the
    // transport stays open (only a 5xx or a broken connection closes it).
    let mut d = go_like();
    let out = d.start();
    let out = d.complete_handshake(&out, S1);
    let (get, _) = only_open(&out, |r| r.method == Method::Get);
    let out = d.answer(get, vec![status(404)]);
    let taken = |s: &StepKind| matches!(s, StepKind::Decision { error: Some(e), .. } if e == "HTTP 404: taken as 405");
    assert!(steps(&out).iter().any(taken), "{out:#?}");
    assert!(app(&out).is_empty(), "{out:#?}");
    assert_eq!(tool_call(&d.call(1, false)).2.key, CallKey(1), "the call goes");
}

#[test]
fn an_acknowledged_listen_stream_that_breaks_is_told_to_the_app_and_relistened() {
    let mut d = listening(1);
    for round in 0..3 {
        let out = if round == 0 { d.start() } else { d.fire() };
        let (conn, req) = only_open(&out, is_listen);
        let Some(ClientMessage::Listen { id }) = req.body else { unreachable!("filtered above") };
        d.frame(conn, sse());
        let out = d.frame(conn, event(None, Some(ServerMessage::ListenAck { subscription: id })));
        assert!(steps(&out).contains(&StepKind::ListenOpen { conn, subscription: id }), "{out:#?}");
        // Broken without the graceful result: the application is told, and (the acknowledgment
        // having reset the attempts in a row) a re-listen is scheduled every time.
        let out = d.end(conn, ConnEnd::Reset);
        assert!(steps(&out).iter().any(|s| matches!(s, StepKind::AppSubscriptionLost { .. })), "{out:#?}");
        assert!(d.c.next_relisten().is_some(), "round {round}");
    }
}

#[test]
fn an_error_on_a_calls_stream_fails_the_call_with_its_message() {
    let mut d = Driver::ready("reference");
    let (conn, request, _) = tool_call(&d.call(1, false));
    let error = ServerMessage::Error { request: Some(request), message: "boom".into(), code: None };
    let out = d.answer(conn, vec![sse(), event(Some("0.1-0"), Some(error))]);
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(1), error: "boom".into() }]);
    assert!(d.c.unresolved_calls().is_empty());
}

#[test]
fn resumes_refused_503_are_retried_by_the_backoff_not_counted_as_unhonoured() {
    // A 503 says "not now", not "this id cannot be honoured": only 409/410 and empty 200s count
    // towards max_unhonoured_resumes (3 for the reference client).
    let (mut d, _) = Driver::broken_call("reference");
    for attempt in 1..=5 {
        let (conn, get) = resume(&d.fire());
        assert_eq!(get.last_event_id, ev("1-3"), "attempt {attempt}");
        let out = d.answer(conn, vec![status(503)]);
        assert!(app(&out).is_empty(), "attempt {attempt}: {out:#?}");
    }
}

#[test]
fn empty_200_resumes_count_as_unhonoured_and_the_fourth_stops_the_reference_client() {
    let (mut d, _) = Driver::broken_call("reference");
    let mut told = Vec::new();
    let mut resumes = 0;
    while told.is_empty() && resumes < 10 {
        let Some(out) = d.try_fire() else { break };
        let Some((conn, _)) = opens(&out).into_iter().find(|(_, r)| r.method == Method::Get) else { continue };
        resumes += 1;
        told.extend(app(&d.answer(conn, vec![sse()])));
    }
    assert_eq!(resumes, 4, "max_unhonoured_resumes = 3: the fourth empty answer is one too many");
    assert!(matches!(&told[..], [StepKind::AppUnknownOutcome { call: CallKey(1), .. }]), "{told:#?}");
}

#[test]
fn resumes_refused_410_count_as_unhonoured_and_the_fourth_stops_the_reference_client() {
    // Each 410 names its head: the reference client reports a gap and resumes from it at once,
    // but a fourth refusal in a row is one too many (max_unhonoured_resumes = 3).
    let (mut d, _) = Driver::broken_call("reference");
    let (mut conn, _) = resume(&d.fire());
    let mut refused = 0;
    let told = loop {
        refused += 1;
        let out = d.answer(conn, vec![gone("1-3")]);
        let settled: Vec<StepKind> =
            app(&out).into_iter().filter(|s| matches!(s, StepKind::AppUnknownOutcome { .. })).collect();
        if !settled.is_empty() || refused == 10 {
            break settled;
        }
        conn = resume(&out).0;
    };
    assert_eq!(refused, 4);
    assert_eq!(told, vec![StepKind::AppUnknownOutcome { call: CallKey(1), reason: UNKNOWN_UNHONOURED.into() }]);
}

#[test]
fn a_resume_that_delivers_a_message_is_honoured_and_breaks_the_run_of_unhonoured_ones() {
    let (mut d, request) = Driver::broken_call("reference"); // max_unhonoured_resumes = 3
                                                             // The first resume carries progress, then ends cleanly without the result: honoured.
    let (conn, _) = resume(&d.fire());
    d.answer(conn, vec![sse(), progress("1-4", request, 1, 4)]);
    // Three empty 200s in a row are within the limit: the client resumes a fifth time.
    for _ in 0..3 {
        let (conn, _) = resume(&d.fire());
        let out = d.answer(conn, vec![sse()]);
        assert!(app(&out).is_empty(), "{out:#?}");
    }
    let (_, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("1-4"));
}

#[test]
fn a_task_answer_on_another_stream_leaves_the_calls_own_stream_to_be_closed_when_the_task_ends() {
    let mut policy = profiles::client("reference").expect("listed");
    policy.tasks.declares = true;
    policy.open_standalone_stream = true;
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    let (get, _) = only_open(&d.complete_handshake(&out, S1), |r| r.method == Method::Get);
    d.frame(get, sse());
    let (post, request, _) = tool_call(&d.call(1, false));
    d.frame(post, sse());
    // The task is announced on the standalone stream, not on the call's own POST stream.
    let task = crate::tasks::TaskId("t1".into());
    let created =
        ServerMessage::TaskCreated { request, call: CallKey(1), task: task.clone(), ttl_ms: None, poll_ms: 2000 };
    d.frame(get, event(Some("g-1"), Some(created)));
    let (poll, req) = only_open(&d.fire(), |r| matches!(r.body, Some(ClientMessage::Task { .. })));
    let Some(ClientMessage::Task { id, .. }) = req.body else { unreachable!("filtered above") };
    let done = ServerMessage::TaskState { request: id, task, status: crate::tasks::TaskStatus::Completed };
    let out = d.answer(poll, vec![Frame::Head(json_head()), Frame::Json(done)]);
    assert!(steps(&out).iter().any(|s| matches!(s, StepKind::AppTaskOutcome { .. })), "{out:#?}");
    assert!(out.contains(&ClientOutput::Abort { conn: post }), "the call's own stream is closed: {out:#?}");
    // The standalone stream that relayed the answer is still the client's: it goes on.
    let note = ServerMessage::Notification { seq: 1 };
    let out = d.frame(get, event(Some("g-2"), Some(note.clone())));
    assert_eq!(app(&out), vec![StepKind::AppEvent { session: sid(S1), id: ev("g-2"), call: None, message: note }]);
}

#[test]
fn a_restored_session_polls_its_tasks_and_resumes_only_the_other_calls_streams() {
    let mut policy = profiles::client("reference").expect("listed");
    policy.tasks.declares = true;
    policy.tasks.persist_ids = true;
    let mut d = Driver::with(policy.clone(), None, 7);
    let out = d.start();
    d.complete_handshake(&out, S1);
    // Call 1 is answered with a task; call 2 streams an event.
    let (task_conn, task_request, _) = tool_call(&d.call(1, false));
    let created = ServerMessage::TaskCreated {
        request: task_request,
        call: CallKey(1),
        task: crate::tasks::TaskId("t1".into()),
        ttl_ms: None,
        poll_ms: 2000,
    };
    d.answer(task_conn, vec![Frame::Head(json_head()), Frame::Json(created)]);
    let (conn, request, _) = tool_call(&d.call(2, false));
    d.frames(conn, vec![sse(), priming("1-0"), progress("1-1", request, 2, 1)]);
    let saved = persists(&d.log).pop().expect("persisted");
    assert_eq!(saved.tasks.len(), 1, "{saved:#?}");
    assert_eq!(saved.calls.iter().map(|c| c.call).collect::<Vec<_>>(), vec![CallKey(1), CallKey(2)], "{saved:#?}");
    // The process dies: the restored one resumes call 2's stream and polls call 1's task, and
    // sends nothing else for call 1 (its answer was the task; there is no stream to re-attach).
    let mut r = Driver::with(policy, Some(saved), 8);
    let mut sent = opens(&r.start());
    while r.c.poll_timeout().is_some_and(|t| t < Instant(30_000_000)) {
        let out = r.fire();
        for (conn, req) in opens(&out) {
            if let Some(ClientMessage::Task { id, .. }) = &req.body {
                let state = ServerMessage::TaskState {
                    request: *id,
                    task: crate::tasks::TaskId("t1".into()),
                    status: crate::tasks::TaskStatus::Working,
                };
                r.answer(conn, vec![Frame::Head(json_head()), Frame::Json(state)]);
            }
            sent.push((conn, req));
        }
    }
    let others: Vec<_> = sent.iter().filter(|(_, r)| !matches!(r.body, Some(ClientMessage::Task { .. }))).collect();
    assert_eq!(others.len(), 1, "{others:#?}");
    assert_eq!((others[0].1.method, others[0].1.last_event_id.clone()), (Method::Get, ev("1-1")));
    assert!(sent.len() > 5, "the task is polled every 2 s: {sent:#?}");
}

#[test]
fn a_made_up_last_event_id_is_sent_only_on_a_stream_the_client_has() {
    // Before the handshake the call waits unsent: no stream to resume.
    let mut d = Driver::new("reference");
    d.start();
    d.call(1, false);
    assert!(!d.c.resume_with_unissued_id(d.now, EventId::from("9-9")));
    // Nor the standalone stream of a client that opens one, before it is ready.
    let mut d = Driver::new("ts-sdk");
    d.start();
    assert!(!d.c.resume_with_unissued_id(d.now, EventId::from("9-9")));
    // With the call's stream in flight it is reconnected at once with the made-up id.
    let mut d = Driver::ready("reference");
    let (conn, _, _) = tool_call(&d.call(1, false));
    d.frames(conn, vec![sse(), priming("1-0")]);
    assert!(d.c.resume_with_unissued_id(d.now, EventId::from("9-9")));
    let out = d.drain();
    assert!(out.contains(&ClientOutput::Abort { conn }), "{out:#?}");
    assert_eq!(resume(&out).1.last_event_id, ev("9-9"));
    // With no call in flight, a ready client's standalone stream takes it.
    let mut d = Driver::ready("ts-sdk");
    assert!(d.c.resume_with_unissued_id(d.now, EventId::from("9-9")));
    let out = d.drain();
    assert_eq!(resume(&out).1.last_event_id, ev("9-9"));
}

#[test]
fn resumes_that_hand_over_messages_are_honoured_however_many() {
    // Each resume delivers a progress message and ends cleanly before the result: the stream is
    // resumed again each time, and never counted as unhonoured.
    let mut d = Driver::ready("reference");
    let (conn, request, _) = tool_call(&d.call(1, false));
    d.frames(conn, vec![sse(), priming("1-0")]);
    d.end(conn, ConnEnd::Reset);
    for step in 1..=6u32 {
        let (conn, _) = resume(&d.fire());
        let id = format!("1-{step}");
        let told = app(&d.answer(conn, vec![sse(), progress(&id, request, 1, step)]));
        assert!(told.iter().all(|s| matches!(s, StepKind::AppEvent { .. })), "step {step}: {told:#?}");
    }
}

#[test]
fn typescript_keeps_a_resumed_streams_id_only_once_an_id_bearing_event_came_on_it() {
    // typescript-sdk#2499: a resumed connection's cursor starts empty.
    let (mut d, request) = Driver::broken_call("ts-sdk");
    let (conn, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("1-3"));
    // An event with an id arrived on the resumed stream before the cut: resumed from it.
    d.frames(conn, vec![sse(), progress("1-4", request, 1, 4)]);
    d.end(conn, ConnEnd::Reset);
    let (conn, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("1-4"));
    // Cut again before any id came on it: the id it was opened with is forgotten.
    d.frames(conn, vec![sse()]);
    d.end(conn, ConnEnd::Reset);
    let (_, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, None);
}

#[test]
fn typescript_forgets_the_id_only_after_a_resume_that_carried_no_event() {
    let (mut d, request) = Driver::broken_call("ts-sdk");
    // A resume that carried an event and ended cleanly: the next one goes on from that event.
    let (conn, _) = resume(&d.fire());
    d.answer(conn, vec![sse(), progress("1-4", request, 1, 4)]);
    let (conn, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, ev("1-4"));
    // An empty one (200, a clean end, no event): TypeScript's next GET carries no id.
    d.answer(conn, vec![sse()]);
    let (_, get) = resume(&d.fire());
    assert_eq!(get.last_event_id, None);
}

#[test]
fn an_auto_client_keeps_its_modern_era_through_a_503() {
    // A 503 is the server being busy, not the server no longer speaking the era: no new probe.
    let mut d = auto_client(true);
    let (probe, _) = only_open(&d.start(), is_probe);
    d.answer(probe, vec![Frame::Head(json_head())]);
    let (post, _) = only_open(&d.call(1, false), |_| true);
    let out = d.answer(post, vec![status(503)]);
    assert!(opens(&out).iter().all(|(_, r)| !is_probe(r)), "{out:#?}");
    assert!(!steps(&out)
        .iter()
        .any(|s| matches!(s, StepKind::Decision { error: Some(e), .. } if e.contains("probe again"))));
}

fn modern_400() -> Frame {
    let body = ErrorBody { code: ErrorCode::UnsupportedProtocolVersion, head_event_id: None };
    Frame::Head(ResponseHead::error(Status::BAD_REQUEST, body))
}

#[test]
fn an_auto_client_on_legacy_probes_again_when_a_modern_error_answers_its_call() {
    // Settled on legacy (the probe was refused by a legacy-only build) ...
    let mut d = auto_client(true);
    let (probe, _) = only_open(&d.start(), is_probe);
    let out = d.answer(probe, vec![legacy_400()]);
    d.complete_handshake(&out, S1);
    // ... then the upgraded build answers a legacy call with a modern error: probe again.
    let (post, _) = only_open(&d.call(1, false), |_| true);
    let out = d.answer(post, vec![modern_400()]);
    assert!(app(&out).is_empty(), "the call is not failed: {out:#?}");
    only_open(&out, is_probe);
    // Settled on modern, a modern error (a header the server disagrees with) is no sign that the
    // server went back to legacy: no probe.
    let mut d = auto_client(true);
    let (probe, _) = only_open(&d.start(), is_probe);
    d.answer(probe, vec![Frame::Head(json_head())]);
    let (post, _) = only_open(&d.call(1, false), |_| true);
    let out = d.answer(post, vec![modern_400()]);
    assert!(opens(&out).iter().all(|(_, r)| !is_probe(r)), "{out:#?}");
}

#[test]
fn a_re_probe_that_lands_on_legacy_again_never_leaves_two_standalone_streams_open() {
    let mut d = auto_client(true); // py-sdk: opens the standalone GET
    let (probe, _) = only_open(&d.start(), is_probe);
    let out = d.answer(probe, vec![legacy_400()]);
    let (get, _) = only_open(&d.complete_handshake(&out, S1), |r| r.method == Method::Get);
    d.frame(get, sse());
    // A modern error to a legacy call: probe again, which a legacy replica refuses again.
    let (post, _) = only_open(&d.call(1, false), |_| true);
    let (probe, _) = only_open(&d.answer(post, vec![modern_400()]), is_probe);
    let out = d.answer(probe, vec![legacy_400()]);
    d.complete_handshake(&out, S2);
    let closed: Vec<ConnId> = d
        .log
        .iter()
        .filter_map(|o| match o {
            ClientOutput::Abort { conn } => Some(*conn),
            _ => None,
        })
        .collect();
    let live: Vec<(ConnId, Request)> =
        opens(&d.log).into_iter().filter(|(c, r)| r.method == Method::Get && !closed.contains(c)).collect();
    assert_eq!(live.len(), 1, "one standalone stream at a time: {live:#?}");
    assert_eq!(
        (live[0].1.session.clone(), live[0].1.last_event_id.clone()),
        (Some(sid(S2)), None),
        "the new session's own stream"
    );
}

#[test]
fn an_unanswered_probe_is_tried_again_or_falls_back_to_legacy_by_the_rule() {
    // No fallback on no answer: the probe goes again after the backoff.
    let mut d = auto_client(true);
    let (probe, _) = only_open(&d.start(), is_probe);
    let out = d.end(probe, ConnEnd::Reset);
    assert!(opens(&out).is_empty(), "{out:#?}");
    only_open(&d.fire(), is_probe);
    // With the fallback: legacy at once (an initialize).
    let era = crate::era::ClientEra {
        mode: crate::era::EraMode::Auto,
        cache: crate::era::EraCacheScope::Origin,
        reprobe_on_failure: true,
        fallback_on_no_answer: true,
    };
    let mut d = Driver::with(ClientPolicy { era: Some(era), ..profiles::client("py-sdk").expect("listed") }, None, 7);
    let (probe, _) = only_open(&d.start(), is_probe);
    let out = d.end(probe, ConnEnd::Reset);
    assert!(steps(&out).contains(&StepKind::EraChosen { era: crate::era::Era::Legacy, probed: true }), "{out:#?}");
    only_open(&out, |r| matches!(r.body, Some(ClientMessage::Initialize { .. })));
}

#[test]
fn a_client_whose_rule_fixes_its_era_records_it_and_a_legacy_one_does_not() {
    let mut d = Driver::new("stateless-2026");
    assert!(steps(&d.start()).contains(&StepKind::EraChosen { era: crate::era::Era::Modern, probed: false }));
    let mut d = Driver::new("reference");
    assert!(!steps(&d.start()).iter().any(|s| matches!(s, StepKind::EraChosen { .. })));
}

/// A reference client without jitter (1 s, doubling; its profile's attempts unless `max_attempts`)
/// whose application has just deleted its session, and what it put out: the `DELETE`.
fn deleting(max_attempts: Option<u32>) -> (Driver, Vec<ClientOutput>) {
    let mut policy = profiles::client("reference").expect("listed");
    policy.reconnect.jitter = 0.0;
    if max_attempts.is_some() {
        policy.reconnect.max_attempts = max_attempts;
    }
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    d.complete_handshake(&out, S1);
    d.c.delete_session(d.now);
    let out = d.drain();
    (d, out)
}

#[test]
fn a_broken_delete_is_sent_again_after_the_reconnect_backoff_of_its_attempt() {
    let (mut d, out) = deleting(None);
    let (mut delete, _) = only_open(&out, |r| r.method == Method::Delete);
    for wait_s in [1, 2, 4] {
        let broke_at = d.now;
        d.end(delete, ConnEnd::Reset);
        assert_eq!(d.c.poll_timeout(), Some(broke_at + Duration::from_secs(wait_s)));
        delete = only_open(&d.fire(), |r| r.method == Method::Delete).0;
    }
}

#[test]
fn a_delete_answered_5xx_is_sent_again_and_one_answered_404_is_not() {
    let (mut d, out) = deleting(None);
    let (delete, _) = only_open(&out, |r| r.method == Method::Delete);
    let answered_at = d.now;
    assert!(opens(&d.answer(delete, vec![status(503)])).is_empty());
    assert_eq!(d.c.poll_timeout(), Some(answered_at + Duration::from_secs(1)), "retried after the backoff");
    let (delete, req) = only_open(&d.fire(), |r| r.method == Method::Delete);
    assert_eq!(req.session, Some(sid(S1)));
    let answered_at = d.now;
    assert!(opens(&d.answer(delete, vec![status(500)])).is_empty());
    assert_eq!(d.c.poll_timeout(), Some(answered_at + Duration::from_secs(2)), "a 500 too");
    let (delete, _) = only_open(&d.fire(), |r| r.method == Method::Delete);
    d.answer(delete, vec![status(404)]);
    assert_eq!(d.c.poll_timeout(), None, "a 404 finishes it: the session is gone");
}

#[test]
fn a_delete_whose_connection_keeps_breaking_is_retried_within_the_reconnect_attempts() {
    let (mut d, mut out) = deleting(Some(3));
    let mut deletes = 0;
    while let Some((conn, _)) = opens(&out).into_iter().find(|(_, r)| r.method == Method::Delete) {
        deletes += 1;
        assert!(deletes <= 10, "the DELETE is retried without end");
        d.end(conn, ConnEnd::Reset);
        out = d.try_fire().unwrap_or_default();
    }
    assert_eq!(deletes, 3, "max_attempts = 3");
}

/// The HTTP library's own timers (`http.body_timeout`, `http.headers_timeout`): a call's body
/// silent that long is given up (a `client-timed-out` step, the connection aborted) and the SDK
/// resumes it from its last id as after a reset; every byte, an SSE comment too, starts the wait
/// again; a POST whose head never comes fails at once when the head timer fires.
#[test]
fn the_librarys_own_timers_give_up_a_silent_body_and_a_missing_head() {
    let mut policy = profiles::client("ts-sdk").expect("listed");
    policy.request_timeout = None;
    let five_minutes = Duration::from_secs(300);
    assert_eq!((policy.http.headers_timeout, policy.http.body_timeout), (Some(five_minutes), Some(five_minutes)));
    let gave_up = |out: &[ClientOutput], conn: ConnId| {
        steps(out).into_iter().any(|s| matches!(s, StepKind::ClientTimedOut { conn: c, .. } if c == conn))
    };
    let mut d = Driver::with(policy.clone(), None, 8);
    let out = d.start();
    d.complete_handshake(&out, S1);
    let out = d.call(1, false);
    let (conn, _, _) = tool_call(&out);
    d.frames(conn, vec![sse(), priming("a_1")]);
    // A keep-alive comment 200 s later: the body's wait starts again from it.
    let comment_at = d.now.0 / 1_000 + 200_000;
    d.at_ms(comment_at).frame(conn, Frame::Comment);
    let mut out = Vec::new();
    while !gave_up(&out, conn) {
        out = d.fire();
    }
    assert_eq!(d.now, Instant((comment_at + 300_000) * 1_000), "300 s after the comment, not after the priming event");
    assert!(out.contains(&ClientOutput::Abort { conn }), "the library closes its side");
    assert!(steps(&out).contains(&StepKind::ClientTimedOut { conn, silent_us: 300_000_000, head: false }), "{out:?}");
    let (resume, request) = resume(&d.fire());
    assert_eq!(request.last_event_id, Some(EventId::from("a_1")), "resumed from its last id, as after a reset");
    assert_ne!(resume, conn);
    // A POST answered by no head: when the head timer fires, the call fails.
    let mut d = Driver::with(policy, None, 8);
    let out = d.start();
    d.complete_handshake(&out, S1);
    let out = d.call(2, false);
    let (conn, _, _) = tool_call(&out);
    let mut out = Vec::new();
    while !gave_up(&out, conn) {
        out = d.fire();
    }
    assert!(steps(&out).contains(&StepKind::ClientTimedOut { conn, silent_us: 300_000_000, head: true }));
    assert_eq!(app(&out), vec![StepKind::AppError { call: CallKey(2), error: ERR_NO_RESPONSE.into() }]);
}

// ---------------------------------------------------------------------------------------------
// The Go SDK's whole-connection failures (close_handling: close-transport, refused resumes, a
// cursor per connection, the modern era)
// ---------------------------------------------------------------------------------------------

/// The go-sdk profile on the legacy handshake, without the standalone GET, so that only a call's
/// stream is judged.
fn go_calls() -> Driver {
    let mut policy = profiles::client("go-sdk").expect("listed");
    policy.era = None;
    policy.open_standalone_stream = false;
    policy.await_standalone_head = false;
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    d.complete_handshake(&out, S1);
    d
}

/// `d` with its rules changed by `edit`.
fn with_rules(d: Driver, edit: impl Fn(&mut crate::config::SdkRules)) -> Driver {
    let mut policy = d.c.policy.clone();
    let CloseHandling::Sdk(rules) = &mut policy.close_handling else { panic!("an sdk profile") };
    edit(rules);
    let mut d = Driver::with(policy, None, 7);
    let out = d.start();
    d.complete_handshake(&out, S1);
    d
}

fn transport_closed(e: &StepKind) -> bool {
    matches!(e, StepKind::AppError { error, .. } if error == ERR_TRANSPORT_CLOSED)
}

#[test]
fn a_404_under_close_transport_fails_every_call_and_every_later_one_without_reinitializing() {
    let mut d = go_calls();
    let (first, _, _) = tool_call(&d.call(1, false));
    d.frames(first, vec![sse(), priming("a_0")]);
    let (second, _, _) = tool_call(&d.call(2, false));
    let out = d.answer(second, vec![status(404)]);
    let failed: Vec<StepKind> = app(&out).into_iter().filter(transport_closed).collect();
    assert_eq!(failed.len(), 2, "both calls fail with the transport: {:#?}", app(&out));
    assert!(out.contains(&ClientOutput::Abort { conn: first }));
    assert_eq!(initializes(&out), 0, "the Go SDK never re-initializes");
    let out = d.call(3, false);
    assert!(opens(&out).is_empty());
    assert!(matches!(&app(&out)[..], [_, StepKind::AppError { error, .. }] if error.starts_with("not connected")));
    // fail-keep-session: only the 404's call fails, the other goes on, a later call goes out.
    let mut d = with_rules(go_calls(), |r| r.on_404 = crate::config::On404::FailKeepSession);
    let (first, _, _) = tool_call(&d.call(1, false));
    d.frames(first, vec![sse(), priming("a_0")]);
    let (second, _, _) = tool_call(&d.call(2, false));
    let out = d.answer(second, vec![status(404)]);
    assert!(!app(&out).iter().any(transport_closed), "{:#?}", app(&out));
    assert!(!out.contains(&ClientOutput::Abort { conn: first }));
    assert_eq!(tool_call(&d.call(3, false)).2.key, CallKey(3));
}

/// Call 1 on `d`, primed with `a_0`, its stream reset, and the resume it schedules.
fn go_resumed(d: &mut Driver) -> (ConnId, Request) {
    let (post, _, _) = tool_call(&d.call(1, false));
    d.frames(post, vec![sse(), priming("a_0")]);
    d.end(post, ConnEnd::Reset);
    resume(&d.fire())
}

#[test]
fn a_refused_resume_ends_the_stream_only_when_the_rule_says_so() {
    for code in [409, 500] {
        let mut d = go_calls();
        let (get, req) = go_resumed(&mut d);
        assert_eq!(req.last_event_id, ev("a_0"));
        let out = d.answer(get, vec![status(code)]);
        assert!(app(&out).iter().any(transport_closed), "HTTP {code}: {:#?}", app(&out));
        assert_eq!(d.c.poll_timeout(), None, "nothing is retried");
        // One failed attempt without the rule: the resume is tried again.
        let mut d = with_rules(go_calls(), |r| r.refused_resume_ends_stream = false);
        let (get, _) = go_resumed(&mut d);
        let out = d.answer(get, vec![status(code)]);
        assert!(app(&out).is_empty(), "HTTP {code}: {:#?}", app(&out));
        assert_eq!(resume(&d.fire()).1.last_event_id, ev("a_0"));
    }
}

#[test]
fn spent_reconnects_under_close_transport_close_the_whole_transport() {
    let mut d = go_calls();
    let (mut get, _) = go_resumed(&mut d);
    for _ in 0..4 {
        d.end(get, ConnEnd::Refused);
        get = resume(&d.fire()).0;
    }
    let out = d.end(get, ConnEnd::Refused);
    assert!(app(&out).iter().any(transport_closed), "{:#?}", app(&out));
    // The give-up is recorded before what the profile does with it (profile-conformance reads it).
    let given_up = steps(&out).iter().position(|s| *s == StepKind::StreamGivenUp { call: CallKey(1) });
    let closed = steps(&out).iter().position(transport_closed);
    assert!(given_up.is_some() && given_up < closed, "{:#?}", steps(&out));
    assert!(opens(&d.call(2, false)).is_empty(), "not connected");
    // fail-call: only the call fails, a later call goes out.
    let mut d = with_rules(go_calls(), |r| r.on_give_up = crate::config::OnGiveUp::FailCall);
    let (mut get, _) = go_resumed(&mut d);
    for _ in 0..4 {
        d.end(get, ConnEnd::Refused);
        get = resume(&d.fire()).0;
    }
    let out = d.end(get, ConnEnd::Refused);
    assert!(!app(&out).iter().any(transport_closed) && !app(&out).is_empty(), "{:#?}", app(&out));
    assert!(steps(&out).contains(&StepKind::StreamGivenUp { call: CallKey(1) }));
    assert_eq!(tool_call(&d.call(2, false)).2.key, CallKey(2));
}

#[test]
fn a_resumed_connection_that_ends_before_an_event_id_ends_the_call_when_the_cursor_is_per_connection() {
    for end in [ConnEnd::Reset, ConnEnd::Clean] {
        let mut d = go_calls();
        let (get, _) = go_resumed(&mut d);
        d.frame(get, sse());
        let out = d.end(get, end);
        let failed = |e: &StepKind| matches!(e, StepKind::AppError { error, .. } if error == ERR_NO_RESPONSE);
        assert!(app(&out).iter().any(failed), "{end:?}: {:#?}", app(&out));
        assert_eq!(d.c.poll_timeout(), None, "{end:?}: not resumed again");
        // With an id on the resumed connection it resumes from that id.
        let mut d = go_calls();
        let (get, _) = go_resumed(&mut d);
        d.frames(get, vec![sse(), priming("a_1")]);
        let out = d.end(get, ConnEnd::Reset);
        assert!(app(&out).is_empty(), "{end:?}: {:#?}", app(&out));
        assert_eq!(resume(&d.fire()).1.last_event_id, ev("a_1"));
        // Without the rule the call is resumed again (without its id: resume_token_survives_recut).
        let mut d = with_rules(go_calls(), |r| {
            r.resumed_needs_event_id = false;
            r.on_empty_resume = OnEmptyResume::SameId;
        });
        let (get, _) = go_resumed(&mut d);
        d.frame(get, sse());
        let out = d.end(get, end);
        assert!(app(&out).is_empty(), "{end:?}: {:#?}", app(&out));
        assert_eq!(resume(&d.fire()).1.method, Method::Get);
    }
}

#[test]
fn in_the_modern_era_an_sdk_that_keeps_its_rules_fails_a_broken_call_instead_of_reissuing_it() {
    let go_rules = profiles::client("go-sdk").expect("listed").close_handling;
    let modern = |close_handling: CloseHandling| {
        let mut policy = profiles::client("stateless-2026").expect("listed");
        policy.close_handling = close_handling;
        let mut d = Driver::with(policy, None, 7);
        d.start();
        d
    };
    let mut d = modern(go_rules.clone());
    let (conn, _, _) = tool_call(&d.call(1, false));
    d.frame(conn, sse());
    let out = d.end(conn, ConnEnd::Reset);
    let failed = |e: &StepKind| matches!(e, StepKind::AppError { error, .. } if error == ERR_NO_RESPONSE);
    assert!(app(&out).iter().any(failed), "{:#?}", app(&out));
    assert_eq!(d.c.poll_timeout(), None, "nothing re-issued");
    // modern_reissue (the revision's rule): the same break is re-issued with a new id.
    let CloseHandling::Sdk(mut rules) = go_rules else { panic!("sdk") };
    rules.modern_reissue = true;
    let mut d = modern(CloseHandling::Sdk(rules));
    let (conn, first, _) = tool_call(&d.call(1, false));
    d.frame(conn, sse());
    let out = d.end(conn, ConnEnd::Reset);
    assert!(app(&out).is_empty(), "{:#?}", app(&out));
    let (_, again, _) = tool_call(&d.fire());
    assert_ne!(again, first);
}

#[test]
fn a_client_that_waits_for_the_standalone_head_does_not_wait_in_the_modern_era() {
    // The modern era has no GET stream: the go-sdk client (await_standalone_head) that probed its
    // way to 2026-07-28 sends its calls at once.
    let mut policy = profiles::client("stateless-2026").expect("listed");
    policy.await_standalone_head = true;
    policy.open_standalone_stream = true;
    let mut d = Driver::with(policy, None, 7);
    d.start();
    assert_eq!(tool_call(&d.call(1, false)).2.key, CallKey(1));
}

#[test]
fn a_transport_that_closes_reports_its_standalone_stream_lost_when_the_policy_reports() {
    let run = |report: bool| {
        let mut policy = profiles::client("go-sdk").expect("listed");
        policy.era = None;
        policy.await_standalone_head = false;
        policy.report_stream_given_up = report;
        let mut d = Driver::with(policy, None, 7);
        let out = d.start();
        let out = d.complete_handshake(&out, S1);
        let (get, _) = only_open(&out, |r| r.method == Method::Get);
        d.frames(get, vec![sse(), event(Some("_0"), Some(ServerMessage::Notification { seq: 1 }))]);
        let (get, _) = go_resumed(&mut d);
        d.answer(get, vec![status(409)]);
        d.app_view()
    };
    let lost = |e: &StepKind| matches!(e, StepKind::AppStreamLost { after, .. } if *after == ev("_0"));
    let told = run(true);
    assert!(told.iter().any(transport_closed) && told.iter().any(lost), "{told:#?}");
    let silent = run(false);
    assert!(silent.iter().any(transport_closed) && !silent.iter().any(lost), "{silent:#?}");
}
