//! The server driven directly with hand-written requests.

use super::*;
use crate::config::{EventStoreMode, NoStoreResume, Unhonourable};
use crate::config::{ReplayRule, Retention};
use crate::http::SseEvent;
use crate::http::ToolCall;
use crate::ids::{CallKey, EventId, RequestId};
use crate::profiles;
use crate::trace::{ResumeOutcome, RetentionBound};

const INIT: ConnId = ConnId(1);
const POST: ConnId = ConnId(2);
const GET: ConnId = ConnId(3);
const OTHER: ConnId = ConnId(4);

fn at_ms(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn at(s: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(s)
}

fn policy(name: &str) -> ServerPolicy {
    profiles::server(name).expect("a listed profile")
}

fn tool(name: &str, secs: u64, interval: Option<Duration>, idempotent: bool) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        duration: Duration::from_secs(secs),
        event_interval: interval,
        idempotent,
        ..ToolSpec::default()
    }
}

/// `pay`: a silent 300 s side effect; `chatty`: 240 s with progress every second;
/// `marathon`: a silent hour; `burst`: 1 ms with progress every 100 µs; `quick`: 2 s.
fn tools() -> Vec<ToolSpec> {
    vec![
        tool("pay", 300, None, false),
        tool("chatty", 240, Some(Duration::from_secs(1)), false),
        tool("marathon", 3600, None, false),
        ToolSpec {
            name: "burst".into(),
            duration: Duration::from_millis(1),
            event_interval: Some(Duration::from_micros(100)),
            idempotent: true,
            ..ToolSpec::default()
        },
        tool("quick", 2, None, true),
    ]
}

#[test]
fn a_server_says_when_it_starts_whether_its_store_is_shared_across_sessions() {
    let started = |name: &str| {
        let mut s = Server::new(policy(name), tools(), 0, 42);
        drain(&mut s)
    };
    let start = |name: &str, sessions_share_store| {
        let bounds = expected_bounds(&policy(name));
        vec![ServerOutput::Record(StepKind::ServerStart { epoch: 0, sessions_share_store, bounds })]
    };
    assert_eq!(started("py-sdk"), start("py-sdk", true));
    assert_eq!(started("reference"), start("reference", false));
    assert_eq!(started("rmcp"), start("rmcp", false));
    // The reference server keeps the last 100 events of each stream, for ever, and closes no
    // stream itself.
    let reference = crate::trace::ServerBounds { retention_max_events: Some(100), ..Default::default() };
    assert_eq!(expected_bounds(&policy("reference")), reference);
    // Python writes a keep-alive every 15 s whatever else it wrote; rmcp only after 15 s of
    // silence.
    let keepalive = |name: &str| {
        let bounds = expected_bounds(&policy(name));
        (bounds.keepalive_us, bounds.keepalive_after_silence)
    };
    assert_eq!(keepalive("py-sdk"), (Some(15_000_000), false));
    assert_eq!(keepalive("rmcp"), (Some(15_000_000), true));
    // Python keeps the resumed connection of a finished stream open after its replay; the
    // reference server and rmcp end it.
    let stays_open = |name: &str| expected_bounds(&policy(name)).finished_resume_stays_open;
    assert_eq!([stays_open("py-sdk"), stays_open("reference"), stays_open("rmcp")], [true, false, false]);
}

/// What a server's start records of its profile's bounds: its retention (none without a store),
/// and its close timers (a request stream's only with sessions).
fn expected_bounds(policy: &ServerPolicy) -> crate::trace::ServerBounds {
    let kept = policy.event_store == crate::config::EventStoreMode::Kept;
    let us = |d: Duration| d.as_micros() as u64;
    crate::trace::ServerBounds {
        retention_max_events: if kept { policy.retention.max_events } else { Some(0) },
        retention_window_us: policy.retention.window.filter(|_| kept).map(us),
        close_request_streams_us: policy.close_request_streams.filter(|_| policy.sessions).map(us),
        close_idle_standalone_us: policy.close_idle_standalone.map(us),
        keepalive_us: policy.keepalive.filter(|k| !k.is_zero()).map(us),
        keepalive_after_silence: policy.keepalive.is_some_and(|k| !k.is_zero())
            && policy.keepalive_timer == crate::config::KeepaliveTimer::AfterSilence,
        finished_resume_stays_open: policy.finished_resume == crate::config::ConnAfterResponse::StayOpen,
    }
}

fn server(policy: ServerPolicy) -> Server {
    let sessions_share_store = policy.store == crate::config::StoreScope::SharedByRequestId;
    let bounds = expected_bounds(&policy);
    let mut s = Server::new(policy, tools(), 0, 42);
    assert_eq!(
        drain(&mut s),
        vec![ServerOutput::Record(StepKind::ServerStart { epoch: 0, sessions_share_store, bounds })]
    );
    s
}

fn drain(s: &mut Server) -> Vec<ServerOutput> {
    std::iter::from_fn(|| s.poll_output()).collect()
}

/// Runs every timer up to and including `t`, at its own time.
fn drive_until(s: &mut Server, t: Instant) -> Vec<ServerOutput> {
    let mut out = Vec::new();
    for _ in 0..1_000_000 {
        match s.poll_timeout() {
            Some(due) if due <= t => {
                s.handle_timeout(due);
                out.extend(drain(s));
            }
            _ => return out,
        }
    }
    panic!("timers did not settle before {t}");
}

fn init(s: &mut Server, now: Instant) -> SessionId {
    s.handle_request(now, INIT, Request::initialize(RequestId(1), "app"));
    records(&drain(s))
        .into_iter()
        .find_map(|r| match r {
            StepKind::SessionCreated { session, .. } => Some(session),
            _ => None,
        })
        .expect("initialize creates a session")
}

fn call_request(session: &SessionId, request: u64, tool: &str, key: u32) -> Request {
    let call = ToolCall { tool: tool.into(), key: CallKey(key), idempotency_key: None, tasks: false };
    Request::post(Some(session.clone()), ClientMessage::CallTool { id: RequestId(request), call })
}

fn call(s: &mut Server, now: Instant, conn: ConnId, session: &SessionId, tool: &str) -> Vec<ServerOutput> {
    s.handle_request(now, conn, call_request(session, 2, tool, 7));
    drain(s)
}

fn resume(s: &mut Server, now: Instant, conn: ConnId, session: &SessionId, id: &EventId) -> Vec<ServerOutput> {
    s.handle_request(now, conn, Request::get(Some(session.clone()), Some(id.clone())));
    drain(s)
}

fn frames(out: &[ServerOutput], conn: ConnId) -> Vec<Frame> {
    out.iter()
        .filter_map(|o| match o {
            ServerOutput::Send { conn: c, frame } if *c == conn => Some(frame.clone()),
            _ => None,
        })
        .collect()
}

fn events(out: &[ServerOutput], conn: ConnId) -> Vec<SseEvent> {
    frames(out, conn)
        .into_iter()
        .filter_map(|f| match f {
            Frame::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

fn ids(events: &[SseEvent]) -> Vec<String> {
    events.iter().map(|e| e.id.as_ref().expect("every event has an id").0.to_string()).collect()
}

fn records(out: &[ServerOutput]) -> Vec<StepKind> {
    out.iter()
        .filter_map(|o| match o {
            ServerOutput::Record(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn closes(out: &[ServerOutput], conn: ConnId) -> Vec<bool> {
    out.iter()
        .filter_map(|o| match o {
            ServerOutput::Close { conn: c, abrupt } if *c == conn => Some(*abrupt),
            _ => None,
        })
        .collect()
}

fn side_effects(out: &[ServerOutput]) -> usize {
    records(out).iter().filter(|r| matches!(r, StepKind::SideEffect { .. })).count()
}

fn stored(out: &[ServerOutput]) -> Vec<(SessionId, String, Option<ServerMessage>)> {
    records(out)
        .into_iter()
        .filter_map(|r| match r {
            StepKind::EventStored { session, id, message, .. } => Some((session, id.0.to_string(), message)),
            _ => None,
        })
        .collect()
}

fn resume_outcome(out: &[ServerOutput]) -> (Option<StreamNo>, ResumeOutcome) {
    records(out)
        .into_iter()
        .find_map(|r| match r {
            StepKind::Resume { stream, outcome, .. } => Some((stream, outcome)),
            _ => None,
        })
        .expect("a resume is recorded")
}

fn tool_ends(out: &[ServerOutput]) -> Vec<ToolEnd> {
    records(out)
        .into_iter()
        .filter_map(|r| match r {
            StepKind::ToolEnded { end, .. } => Some(end),
            _ => None,
        })
        .collect()
}

fn session_ends(out: &[ServerOutput]) -> Vec<SessionEndReason> {
    records(out)
        .into_iter()
        .filter_map(|r| match r {
            StepKind::SessionEnded { reason, .. } => Some(reason),
            _ => None,
        })
        .collect()
}

fn head_status(out: &[ServerOutput], conn: ConnId) -> Status {
    match frames(out, conn).first() {
        Some(Frame::Head(head)) => head.status,
        other => panic!("expected a head first on {conn}, got {other:?}"),
    }
}

fn progress(step: u32) -> Option<ServerMessage> {
    Some(ServerMessage::Progress { request: RequestId(2), call: CallKey(7), step })
}

fn progress_ids(from: u32, to: u32) -> Vec<String> {
    (from..=to).map(|seq| format!("1-{seq}")).collect()
}

#[test]
fn initialize_mints_a_session_and_answers_200_with_its_id() {
    let mut s = server(policy("reference"));
    s.handle_request(at(0), INIT, Request::initialize(RequestId(1), "app"));
    let id = SessionId::from("0-1");
    let head = ResponseHead { status: Status::OK, body: Body::Json, session: Some(id.clone()), error: None };
    assert_eq!(
        drain(&mut s),
        vec![
            ServerOutput::Record(StepKind::SessionCreated { session: id.clone(), client: "app".into() }),
            ServerOutput::Send { conn: INIT, frame: Frame::Head(head) },
            ServerOutput::Send {
                conn: INIT,
                frame: Frame::Json(ServerMessage::InitializeResult { request: RequestId(1) })
            },
            ServerOutput::Send { conn: INIT, frame: Frame::End },
            ServerOutput::Close { conn: INIT, abrupt: false },
        ]
    );
    assert_eq!(s.live_sessions(), vec![id.clone()]);
    s.handle_request(at(1), OTHER, Request::post(Some(id), ClientMessage::Initialized));
    let out = drain(&mut s);
    assert_eq!(frames(&out, OTHER), vec![Frame::Head(ResponseHead::status(Status::ACCEPTED)), Frame::End]);
    // Other epochs and the SDK schemes mint other ids.
    let mut restarted = Server::new(policy("reference"), tools(), 3, 42);
    assert_eq!(init(&mut restarted, at(0)), SessionId::from("3-1"));
    let mut ts = server(policy("ts-sdk"));
    assert_eq!(init(&mut ts, at(0)).0.len(), 36);
}

#[test]
fn requests_without_a_live_session_are_refused() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let unknown = SessionId::from("9-9");
    s.handle_request(at(1), POST, call_request(&unknown, 2, "pay", 7));
    let out = drain(&mut s);
    assert_eq!(
        frames(&out, POST)[0],
        Frame::Head(ResponseHead::error(
            Status::NOT_FOUND,
            ErrorBody { code: ErrorCode::SessionNotFound, head_event_id: None }
        ))
    );
    assert_eq!(
        records(&out),
        vec![StepKind::Rejected { conn: POST, status: Status::NOT_FOUND, session: Some(unknown.clone()) }]
    );
    assert_eq!(side_effects(&out), 0);
    s.handle_request(at(1), GET, Request::get(Some(unknown.clone()), Some(EventId::from("1-0"))));
    assert_eq!(head_status(&drain(&mut s), GET), Status::NOT_FOUND);
    s.handle_request(at(1), GET, Request::get(None, None));
    let out = drain(&mut s);
    assert_eq!(records(&out), vec![StepKind::Rejected { conn: GET, status: Status::BAD_REQUEST, session: None }]);
    // An ended session is as unknown as one never minted.
    s.handle_request(at(2), OTHER, Request::delete(session.clone()));
    drain(&mut s);
    s.handle_request(at(3), OTHER, Request::delete(session));
    assert_eq!(head_status(&drain(&mut s), OTHER), Status::NOT_FOUND);
    // rmcp answers DELETE of an unknown session with 202 and does not call it a rejection.
    let mut rmcp = server(policy("rmcp"));
    rmcp.handle_request(at(0), OTHER, Request::delete(unknown));
    let out = drain(&mut rmcp);
    assert_eq!(head_status(&out, OTHER), Status::ACCEPTED);
    assert!(records(&out).is_empty());
}

#[test]
fn a_long_silent_tool_runs_once_and_its_result_ends_the_attached_stream() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let out = call(&mut s, at(1), POST, &session, "pay");
    assert_eq!(side_effects(&out), 1);
    let sent = frames(&out, POST);
    assert_eq!(sent[0], Frame::Head(ResponseHead::event_stream()));
    let priming = events(&out, POST);
    assert_eq!(ids(&priming), vec!["1-0"]);
    assert!(priming[0].is_priming());
    let early = drive_until(&mut s, Instant(at(301).0 - 1));
    assert!(frames(&early, POST).is_empty(), "nothing before start + duration: {early:?}");
    let out = drive_until(&mut s, at(301));
    let result = Frame::Event(SseEvent {
        id: Some(EventId::from("1-1")),
        retry_ms: None,
        kind: Default::default(),
        data: Some(ServerMessage::ToolResult { request: RequestId(2), call: CallKey(7) }),
    });
    assert_eq!(frames(&out, POST), vec![result, Frame::End]);
    assert_eq!(closes(&out, POST), vec![false]);
    assert_eq!(tool_ends(&out), vec![ToolEnd::Completed]);
    assert_eq!(side_effects(&out), 0, "the side effect ran once, at the start");
    // Only the idle countdown is left, started when the tool ended.
    assert_eq!(s.poll_timeout(), Some(at(301 + 1800)));
}

#[test]
fn a_resume_after_the_priming_id_replays_exactly_the_missed_events_in_order() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let out = call(&mut s, at(0), POST, &session, "chatty");
    assert_eq!(ids(&events(&out, POST)), vec!["1-0"]);
    s.handle_disconnect(at_ms(500), POST);
    let missed = drive_until(&mut s, at_ms(30_500));
    assert!(frames(&missed, POST).is_empty(), "a detached stream sends nothing");
    assert_eq!(stored(&missed).len(), 30, "but the tool runs on and its events are stored");
    let out = resume(&mut s, at_ms(30_500), GET, &session, &EventId::from("1-0"));
    assert_eq!(resume_outcome(&out), (Some(StreamNo(1)), ResumeOutcome::Replayed { replayed: 30 }));
    let got = events(&out, GET);
    let mut expected = progress_ids(1, 30);
    expected.push("1-31".into()); // the resume's priming event
    assert_eq!(ids(&got), expected);
    assert_eq!(got[0].data, progress(1));
    assert_eq!(got[29].data, progress(30));
    assert!(got[30].is_priming());
    // The resumed connection is attached: the next progress goes to it.
    let live = drive_until(&mut s, at(31));
    assert_eq!(ids(&events(&live, GET)), vec!["1-32"]);
    assert_eq!(events(&live, GET)[0].data, progress(31));
}

/// The second incident: a chatty tool, 100 retained events, a 200 s disconnect.
fn evicted_resume(policy: ServerPolicy) -> (Server, SessionId, Vec<ServerOutput>) {
    let mut s = server(policy);
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "chatty");
    let _ = drive_until(&mut s, at(5));
    s.handle_disconnect(at_ms(5_500), POST);
    let _ = drive_until(&mut s, at_ms(200_500));
    // Issued: priming 1-0 and progress 1-1 ..= 1-200; held: 1-101 ..= 1-200.
    let out = resume(&mut s, at_ms(200_500), GET, &session, &EventId::from("1-5"));
    (s, session, out)
}

#[test]
fn the_reference_server_answers_an_evicted_id_with_410_naming_the_head() {
    let (mut s, session, out) = evicted_resume(policy("reference"));
    // The head is the newest event no longer held: 1-101 ..= 1-200 are still held.
    let head = Some(EventId::from("1-100"));
    assert_eq!(
        resume_outcome(&out),
        (Some(StreamNo(1)), ResumeOutcome::Rejected { status: Status::GONE, head: head.clone() })
    );
    let error = ErrorBody { code: ErrorCode::ResumeWindowExceeded, head_event_id: head };
    assert_eq!(frames(&out, GET), vec![Frame::Head(ResponseHead::error(Status::GONE, error)), Frame::End]);
    assert_eq!(closes(&out, GET), vec![false]);
    // Resuming at the head it named replays everything still held, then continues live.
    let out = resume(&mut s, at_ms(200_600), OTHER, &session, &EventId::from("1-100"));
    assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 100 });
    assert_eq!(ids(&events(&out, OTHER))[..2], ["1-101", "1-102"]);
    let live = drive_until(&mut s, at(201));
    assert_eq!(events(&live, OTHER)[0].data, progress(201));
    // An id never issued is unknown, with its own code.
    let out = resume(&mut s, at(202), GET, &session, &EventId::from("1-999"));
    let Frame::Head(head) = &frames(&out, GET)[0] else { panic!("a head first") };
    assert_eq!(head.error.as_ref().map(|e| e.code), Some(ErrorCode::UnknownEventId));
}

#[test]
fn the_silent_head_server_attaches_an_evicted_id_at_the_head_and_says_nothing() {
    let (mut s, _, out) = evicted_resume(policy("silent-head"));
    assert_eq!(resume_outcome(&out), (Some(StreamNo(1)), ResumeOutcome::SilentHead { skipped: 195 }));
    assert_eq!(head_status(&out, GET), Status::OK);
    let got = events(&out, GET);
    assert_eq!(ids(&got), vec!["1-201"], "no replay, only the resume's priming event");
    assert!(got[0].is_priming());
    assert!(closes(&out, GET).is_empty(), "the connection stays open");
    let live = drive_until(&mut s, at(201));
    assert_eq!(ids(&events(&live, GET)), vec!["1-202"]);
    assert_eq!(events(&live, GET)[0].data, progress(201));
}

#[test]
fn a_resume_right_before_the_oldest_held_event_loses_nothing_even_if_its_id_was_evicted() {
    let mut p = policy("silent-head");
    p.retention = Retention::last(1);
    let mut s = server(p);
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "quick");
    s.handle_disconnect(at(1), POST);
    let _ = drive_until(&mut s, at(3));
    // 1-0 (priming) is evicted, but the result after it is held: nothing is lost.
    let out = resume(&mut s, at(3), GET, &session, &EventId::from("1-0"));
    assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 1 });
    assert_eq!(frames(&out, GET).last(), Some(&Frame::End));
    assert!(events(&out, GET).iter().any(|e| e.data.as_ref().is_some_and(|m| m.is_response())));
}

#[test]
fn a_time_window_evicts_by_age_and_409_is_the_same_answer_with_another_status() {
    let mut p = policy("reference");
    p.retention = Retention { max_events: None, window: Some(Duration::from_secs(10)), drop_on_response: false };
    p.evicted_id = Unhonourable::Conflict409;
    p.unknown_id = Unhonourable::Conflict409;
    let mut s = server(p);
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "chatty");
    s.handle_disconnect(at_ms(500), POST);
    let _ = drive_until(&mut s, at_ms(30_500));
    // Stored at 3 s, 27.5 s old: gone. Stored at 25 s: held.
    let out = resume(&mut s, at_ms(30_500), GET, &session, &EventId::from("1-3"));
    let head = Some(EventId::from("1-20"));
    assert_eq!(resume_outcome(&out).1, ResumeOutcome::Rejected { status: Status::CONFLICT, head: head.clone() });
    let error = ErrorBody { code: ErrorCode::ResumeWindowExceeded, head_event_id: head };
    assert_eq!(frames(&out, GET)[0], Frame::Head(ResponseHead::error(Status::CONFLICT, error)));
    let out = resume(&mut s, at_ms(30_500), GET, &session, &EventId::from("1-25"));
    assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 5 });
    // An id that names no stream at all: no head to offer.
    let out = resume(&mut s, at_ms(30_600), OTHER, &session, &EventId::from("7-1"));
    assert_eq!(resume_outcome(&out), (None, ResumeOutcome::Rejected { status: Status::CONFLICT, head: None }));
}

#[test]
fn a_resume_takes_over_the_stream_from_a_connection_still_attached() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "chatty");
    let _ = drive_until(&mut s, at(2));
    let out = resume(&mut s, at(2), GET, &session, &EventId::from("1-1"));
    assert_eq!(frames(&out, POST), vec![Frame::End], "the old receiver is ended");
    assert_eq!(closes(&out, POST), vec![false]);
    assert_eq!(ids(&events(&out, GET)), vec!["1-2", "1-3"]);
    let live = drive_until(&mut s, at(3));
    assert!(frames(&live, POST).is_empty());
    assert_eq!(events(&live, GET)[0].data, progress(3));
}

#[test]
fn the_from_rule_replays_the_given_event_too() {
    let mut s = server(policy("rmcp"));
    let session = init(&mut s, at(0));
    let out = call(&mut s, at(0), POST, &session, "chatty");
    let priming = events(&out, POST);
    assert_eq!(ids(&priming), vec!["0/1"]);
    assert_eq!(priming[0].retry_ms, Some(3000));
    let _ = drive_until(&mut s, at(10));
    s.handle_disconnect(at_ms(10_500), POST);
    let out = resume(&mut s, at_ms(10_500), GET, &session, &EventId::from("8/1"));
    assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 3 });
    assert_eq!(ids(&events(&out, GET)), vec!["8/1", "9/1", "10/1"], "rmcp sends no priming on resume");
    let mut after = policy("reference");
    after.replay = ReplayRule::From;
    let mut s = server(after);
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "chatty");
    let _ = drive_until(&mut s, at(3));
    let out = resume(&mut s, at(3), GET, &session, &EventId::from("1-2"));
    assert_eq!(ids(&events(&out, GET)), vec!["1-2", "1-3", "1-4"]);
}

#[test]
fn rmcp_drops_a_stream_on_its_response_and_replays_from_the_oldest_while_it_runs() {
    let mut s = server(policy("rmcp"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "quick");
    s.handle_disconnect(at(1), POST);
    let done = drive_until(&mut s, at(2));
    assert_eq!(stored(&done).len(), 1, "the result is stored");
    let out = resume(&mut s, at(3), GET, &session, &EventId::from("0/1"));
    assert_eq!(resume_outcome(&out), (Some(StreamNo(1)), ResumeOutcome::Empty { open: false }));
    assert_eq!(frames(&out, GET), vec![Frame::Head(ResponseHead::event_stream()), Frame::End]);
    // Evicted while the request still runs: from the oldest buffered event, gap unsaid.
    s.handle_request(at(3), POST, call_request(&session, 3, "chatty", 8));
    let _ = drain(&mut s);
    s.handle_disconnect(at_ms(3_500), POST);
    let _ = drive_until(&mut s, at_ms(33_500));
    // Issued 0/2 ..= 30/2; the ring holds 16: 15/2 ..= 30/2.
    let out = resume(&mut s, at_ms(33_500), GET, &session, &EventId::from("0/2"));
    assert_eq!(resume_outcome(&out), (Some(StreamNo(2)), ResumeOutcome::FromOldest { skipped: 14, replayed: 16 }));
    let got = ids(&events(&out, GET));
    assert_eq!(got.first().map(String::as_str), Some("15/2"));
    assert_eq!(got.last().map(String::as_str), Some("30/2"));
    assert!(closes(&out, GET).is_empty());
}

#[test]
fn unknown_ids_get_empty_streams_closed_or_left_open() {
    let mut py = server(policy("py-sdk"));
    let session = init(&mut py, at(0));
    let out = resume(&mut py, at(1), GET, &session, &EventId::from("no-such-id"));
    assert_eq!(resume_outcome(&out), (None, ResumeOutcome::Empty { open: false }));
    assert_eq!(frames(&out, GET), vec![Frame::Head(ResponseHead::event_stream()), Frame::End]);
    let mut ts = server(policy("ts-sdk"));
    let session = init(&mut ts, at(0));
    let out = resume(&mut ts, at(1), GET, &session, &EventId::from("nope_1_abc"));
    assert_eq!(resume_outcome(&out), (None, ResumeOutcome::Empty { open: true }));
    assert_eq!(frames(&out, GET), vec![Frame::Head(ResponseHead::event_stream())]);
    assert!(closes(&out, GET).is_empty());
    let later = drive_until(&mut ts, at(16));
    assert_eq!(frames(&later, GET), vec![Frame::Comment], "an open empty stream still gets keep-alives");
}

fn idle_policy(name: &str) -> ServerPolicy {
    ServerPolicy { idle_ttl: Some(Duration::from_secs(60)), ..policy(name) }
}

#[test]
fn no_open_request_expires_a_session_whose_tool_runs_on_after_its_post_was_cut() {
    let mut s = server(idle_policy("py-sdk"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "marathon");
    assert!(session_ends(&drive_until(&mut s, at(100))).is_empty(), "an open POST holds the session");
    s.handle_disconnect(at(100), POST);
    assert!(session_ends(&drive_until(&mut s, at(159))).is_empty());
    let out = drive_until(&mut s, at(160));
    assert_eq!(session_ends(&out), vec![SessionEndReason::IdleExpired]);
    let named = records(&out).into_iter().find_map(|r| match r {
        StepKind::SessionEnded { idle_ttl_us, .. } => Some(idle_ttl_us),
        _ => None,
    });
    assert_eq!(named, Some(Some(60_000_000)), "an idle expiry names the TTL it ran under");
    assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
    assert!(s.live_sessions().is_empty());
    s.handle_request(at(161), OTHER, Request::get(Some(session), None));
    assert_eq!(head_status(&drain(&mut s), OTHER), Status::NOT_FOUND);
}

#[test]
fn never_while_busy_holds_a_session_until_its_tool_is_done() {
    let mut s = server(idle_policy("reference"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "marathon");
    s.handle_disconnect(at(100), POST);
    let out = drive_until(&mut s, at(3_600));
    assert!(session_ends(&out).is_empty());
    assert_eq!(tool_ends(&out), vec![ToolEnd::Completed]);
    assert!(session_ends(&drive_until(&mut s, at(3_659))).is_empty());
    assert_eq!(session_ends(&drive_until(&mut s, at(3_660))), vec![SessionEndReason::IdleExpired]);
    // An open GET holds it too.
    let session = init(&mut s, at(4_000));
    s.handle_request(at(4_000), GET, Request::get(Some(session), None));
    let _ = drain(&mut s);
    assert!(session_ends(&drive_until(&mut s, at(9_000))).is_empty());
}

/// Under never-while-busy only a session's own running tool holds it: another session's tool
/// does not keep an idle one alive (`holds_session`; cargo-mutants' `&&` -> `||` there survived
/// every test before this one).
#[test]
fn never_while_busy_is_held_only_by_the_sessions_own_tool() {
    let mut s = server(idle_policy("reference"));
    let busy = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &busy, "marathon");
    s.handle_disconnect(at(1), POST);
    let idle = init(&mut s, at(1));
    assert!(session_ends(&drive_until(&mut s, at(60))).is_empty());
    assert_eq!(session_ends(&drive_until(&mut s, at(61))), vec![SessionEndReason::IdleExpired]);
    assert_eq!(s.live_sessions(), vec![busy]);
    assert!(!s.live_sessions().contains(&idle));
}

#[test]
fn last_request_expires_a_busy_session_ttl_after_its_last_request() {
    let mut s = server(idle_policy("rmcp"));
    let session = init(&mut s, at(0));
    s.handle_request(at(30), OTHER, Request::post(Some(session.clone()), ClientMessage::Initialized));
    let _ = drain(&mut s);
    let _ = call(&mut s, at(40), POST, &session, "marathon");
    assert!(session_ends(&drive_until(&mut s, at(99))).is_empty());
    let out = drive_until(&mut s, at(100));
    assert_eq!(session_ends(&out), vec![SessionEndReason::IdleExpired]);
    assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
    assert_eq!(frames(&out, POST).last(), Some(&Frame::End), "the open POST stream is ended");
    assert_eq!(closes(&out, POST), vec![false]);
}

#[test]
fn delete_cancels_a_running_tool_or_lets_it_run_on_into_nowhere() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "pay");
    s.handle_request(at(10), OTHER, Request::delete(session.clone()));
    let out = drain(&mut s);
    assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
    assert_eq!(session_ends(&out), vec![SessionEndReason::Deleted]);
    assert_eq!(frames(&out, POST), vec![Frame::End]);
    assert_eq!(frames(&out, OTHER), vec![Frame::Head(ResponseHead::status(Status::OK)), Frame::End]);
    assert!(records(&drive_until(&mut s, at(400))).is_empty());

    let mut s = server(policy("ts-sdk"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "pay");
    s.handle_request(at(10), OTHER, Request::delete(session.clone()));
    let out = drain(&mut s);
    assert!(tool_ends(&out).is_empty());
    assert_eq!(session_ends(&out), vec![SessionEndReason::Deleted]);
    assert_eq!(frames(&out, POST), vec![Frame::End]);
    let out = drive_until(&mut s, at(400));
    assert_eq!(tool_ends(&out), vec![ToolEnd::Completed], "it ran to completion");
    assert!(stored(&out).is_empty(), "its result is stored nowhere");
    s.handle_request(at(401), OTHER, call_request(&session, 3, "pay", 8));
    assert_eq!(head_status(&drain(&mut s), OTHER), Status::NOT_FOUND);
}

#[test]
fn a_cancelled_notification_stops_the_tool_and_ends_its_stream_without_a_response() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "pay");
    s.handle_request(
        at(5),
        OTHER,
        Request::post(Some(session.clone()), ClientMessage::Cancelled { request: RequestId(2) }),
    );
    let out = drain(&mut s);
    assert_eq!(frames(&out, OTHER), vec![Frame::Head(ResponseHead::status(Status::ACCEPTED)), Frame::End]);
    assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
    assert_eq!(frames(&out, POST), vec![Frame::End]);
    assert!(stored(&drive_until(&mut s, at(400))).is_empty(), "no result, ever");
    let out = resume(&mut s, at(401), GET, &session, &EventId::from("1-0"));
    assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 0 });
    assert_eq!(frames(&out, GET), vec![Frame::Head(ResponseHead::event_stream()), Frame::End]);
}

#[test]
fn a_shared_store_replays_another_sessions_events_under_the_same_request_id() {
    let mut s = server(policy("py-sdk"));
    let (a, b) = (init(&mut s, at(0)), init(&mut s, at(0)));
    s.handle_request(at(0), POST, call_request(&a, 2, "chatty", 100));
    let _ = drain(&mut s);
    s.handle_request(at_ms(500), OTHER, call_request(&b, 2, "chatty", 200));
    let out = drain(&mut s);
    let b_priming = events(&out, OTHER)[0].id.clone().expect("priming has an id");
    s.handle_disconnect(at_ms(600), OTHER);
    let run = drive_until(&mut s, at_ms(5_700));
    let a_ids: Vec<String> = stored(&run).into_iter().filter(|(s, ..)| s == &a).map(|(_, id, _)| id).collect();
    assert_eq!(a_ids.len(), 5);
    let out = resume(&mut s, at_ms(5_700), GET, &b, &b_priming);
    assert_eq!(resume_outcome(&out), (Some(StreamNo(1)), ResumeOutcome::Replayed { replayed: 10 }));
    let replayed = events(&out, GET);
    let foreign: Vec<String> = ids(&replayed).into_iter().filter(|id| a_ids.contains(id)).collect();
    assert_eq!(foreign, a_ids, "session b is handed every progress event of session a");
    assert!(replayed.iter().any(|e| matches!(e.data, Some(ServerMessage::Progress { call: CallKey(100), .. }))));
    // The EventStored ledger still names the session that emitted each event.
    let priming = stored(&out);
    assert_eq!(priming.len(), 1);
    assert_eq!(priming[0].0, b);
}

/// servers#4087: a store whose replay walks all its events and never compares the stream
/// (`replay_scope = store`) hands a resume of one stream the events its session's other streams
/// stored after the id, in the store's order; `stream` replays the id's stream alone. Over a
/// store shared across sessions, `store` reaches every session's streams.
#[test]
fn a_store_wide_replay_hands_a_resume_the_other_streams_events_in_store_order() {
    let resumed = |scope: crate::config::ReplayScope| {
        let mut s = server(ServerPolicy { replay_scope: scope, ..policy("reference") });
        let session = init(&mut s, at(0));
        s.handle_request(at(0), POST, call_request(&session, 2, "chatty", 7));
        let _ = drain(&mut s);
        s.handle_request(at_ms(500), OTHER, call_request(&session, 3, "chatty", 8));
        let _ = drain(&mut s);
        s.handle_disconnect(at_ms(600), POST);
        let _ = drive_until(&mut s, at_ms(3_700));
        let out = resume(&mut s, at_ms(3_700), GET, &session, &EventId::from("1-0"));
        let live = drive_until(&mut s, at_ms(4_000));
        (resume_outcome(&out), ids(&events(&out, GET)), ids(&events(&live, GET)))
    };
    let (outcome, got, live) = resumed(crate::config::ReplayScope::Stream);
    assert_eq!(outcome, (Some(StreamNo(1)), ResumeOutcome::Replayed { replayed: 3 }));
    assert_eq!(got, ["1-1", "1-2", "1-3", "1-4"], "its own three events, then the resume's priming");
    assert_eq!(live, ["1-5"]);
    let (outcome, got, live) = resumed(crate::config::ReplayScope::Store);
    assert_eq!(outcome, (Some(StreamNo(1)), ResumeOutcome::Replayed { replayed: 7 }));
    assert_eq!(
        got,
        ["2-0", "1-1", "2-1", "1-2", "2-2", "1-3", "2-3", "1-4"],
        "stream 2's priming and progress, interleaved as they were stored, then the resume's priming"
    );
    assert_eq!(live, ["1-5"], "the resumed connection is stream 1's: its live events only");
    // Over the Python SDK's store (one for every session), the replay reaches the other session.
    let mut s = server(ServerPolicy { replay_scope: crate::config::ReplayScope::Store, ..policy("py-sdk") });
    let (a, b) = (init(&mut s, at(0)), init(&mut s, at(0)));
    s.handle_request(at(0), POST, call_request(&a, 2, "chatty", 100));
    let out = drain(&mut s);
    let a_priming = events(&out, POST)[0].id.clone().expect("priming has an id");
    s.handle_request(at_ms(500), OTHER, call_request(&b, 5, "chatty", 200));
    let _ = drain(&mut s);
    s.handle_disconnect(at_ms(600), POST);
    let run = drive_until(&mut s, at_ms(2_700));
    let b_ids: Vec<String> = stored(&run).into_iter().filter(|(s, ..)| s == &b).map(|(_, id, _)| id).collect();
    assert_eq!(b_ids.len(), 2);
    let replayed = ids(&events(&resume(&mut s, at_ms(2_700), GET, &a, &a_priming), GET));
    assert!(b_ids.iter().all(|id| replayed.contains(id)), "session a is handed session b's events: {replayed:?}");
}

#[test]
fn typescript_ids_of_the_standalone_stream_can_never_be_resumed() {
    let mut s = server(policy("ts-sdk"));
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
    let out = drain(&mut s);
    assert!(events(&out, GET).is_empty(), "no priming on the TypeScript standalone stream");
    s.notify_all(at(1));
    let out = drain(&mut s);
    let got = events(&out, GET);
    assert_eq!(got[0].data, Some(ServerMessage::Notification { seq: 1 }));
    let id = got[0].id.clone().expect("an id");
    assert!(id.0.starts_with("_GET_stream_1700000001000_"), "{id}");
    s.handle_disconnect(at(2), GET);
    s.notify_all(at(3));
    let out = resume(&mut s, at(4), OTHER, &session, &id);
    assert_eq!(resume_outcome(&out), (None, ResumeOutcome::Empty { open: true }));
    assert!(events(&out, OTHER).is_empty(), "notification 2 is never delivered");
    assert!(held(&out), "its store keeps notification 2; its lookup finds nothing");
    // A POST stream id of the same scheme resumes fine.
    let out = call(&mut s, at(5), POST, &session, "chatty");
    let priming = events(&out, POST)[0].id.clone().expect("an id");
    s.handle_disconnect(at(5), POST);
    let _ = drive_until(&mut s, at(8));
    let out = resume(&mut s, at(8), GET, &session, &priming);
    assert_eq!(resume_outcome(&out), (Some(StreamNo(1)), ResumeOutcome::Replayed { replayed: 3 }));
    assert!(!held(&out), "a replay is no miss");
}

/// The `resume` step's `held` and `evicted`, per answer: `held` set only when the answer was no
/// replay while the store still held every event after the id; `evicted`, the store's bounds,
/// only when it issued the id and has evicted events after it since.
fn resume_facts(out: &[ServerOutput]) -> (bool, Option<RetentionBound>) {
    records(out)
        .into_iter()
        .find_map(|r| match r {
            StepKind::Resume { held, evicted, .. } => Some((held, evicted)),
            _ => None,
        })
        .expect("a resume is recorded")
}

fn held(out: &[ServerOutput]) -> bool {
    resume_facts(out).0
}

/// Held, see `typescript_ids_of_the_standalone_stream_can_never_be_resumed`; not held: an id the
/// server really lost (evicted, with the bounds named), one it never issued, and a replay.
#[test]
fn a_resume_step_says_whether_the_store_still_held_what_an_unhonoured_id_needed() {
    let mut p = policy("reference");
    p.retention = Retention { max_events: Some(2), window: Some(Duration::from_secs(60)), drop_on_response: false };
    let mut s = server(p);
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "chatty");
    s.handle_disconnect(at_ms(500), POST);
    let run = drive_until(&mut s, at(10));
    let ids: Vec<EventId> = stored(&run).into_iter().map(|(_, id, _)| EventId::from(id)).collect();
    assert!(ids.len() >= 4, "{ids:?}");
    let bound = RetentionBound { max_events: Some(2), window_us: Some(60_000_000) };
    let out = resume(&mut s, at(10), GET, &session, &EventId::from("1-1"));
    assert!(matches!(resume_outcome(&out).1, ResumeOutcome::Rejected { status: Status::GONE, .. }));
    assert_eq!(resume_facts(&out), (false, Some(bound)), "evicted, under these bounds");
    let out = resume(&mut s, at(10), OTHER, &session, &EventId::from("7-1"));
    assert!(matches!(resume_outcome(&out).1, ResumeOutcome::Rejected { .. }));
    assert_eq!(resume_facts(&out), (false, None), "never issued: unknown, not evicted");
    let out = resume(&mut s, at(10), POST, &session, &ids[ids.len() - 2]);
    assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 1 });
    assert_eq!(resume_facts(&out), (false, None), "a replay is no miss, and evicted nothing it needed");
}

#[test]
fn only_the_sessions_own_logs_count_as_holding_an_id() {
    // One store shared by request id, ids numbered per log: two logs both issue `1-2`.
    let mut p = policy("reference");
    p.store = crate::config::StoreScope::SharedByRequestId;
    p.retention = Retention::last(2);
    let mut s = server(p);
    let (a, b) = (init(&mut s, at(0)), init(&mut s, at(0)));
    s.handle_request(at(0), POST, call_request(&a, 2, "chatty", 100));
    let _ = drain(&mut s);
    s.handle_disconnect(at_ms(500), POST);
    let mut run = drive_until(&mut s, at(7));
    s.handle_request(at(7), OTHER, call_request(&b, 3, "chatty", 200));
    run.extend(drain(&mut s));
    run.extend(drive_until(&mut s, at_ms(9_500)));
    let of = |who: &SessionId| -> Vec<String> {
        stored(&run).into_iter().filter(|(s, ..)| s == who).map(|(_, id, _)| id).collect()
    };
    assert!(of(&a).len() > 4 && of(&b).contains(&"1-2".to_string()), "{:?} {:?}", of(&a), of(&b));
    // `1-2` of a's log is long evicted; b's log still has its `1-2`, which is no event of a's.
    let out = resume(&mut s, at_ms(9_500), GET, &a, &EventId::from("1-2"));
    assert!(matches!(resume_outcome(&out).1, ResumeOutcome::Rejected { status: Status::GONE, .. }));
    assert!(!held(&out));
}

#[test]
fn typescript_replay_is_in_id_order_even_within_one_millisecond() {
    let mut s = server(policy("ts-sdk"));
    let session = init(&mut s, at(0));
    let out = call(&mut s, at(0), POST, &session, "burst");
    let priming = events(&out, POST)[0].id.clone().expect("an id");
    s.handle_disconnect(at(0), POST);
    let run = drive_until(&mut s, at(1));
    let mut expected: Vec<String> =
        stored(&run).into_iter().map(|(_, id, _)| id).filter(|id| id.as_str() > priming.as_str()).collect();
    expected.sort();
    let out = resume(&mut s, at(1), GET, &session, &priming);
    assert_eq!(ids(&events(&out, GET)), expected);
    assert!(stored(&run).len() > expected.len(), "same-millisecond ids sorting before the priming id are lost");
}

#[test]
fn second_standalone_get_is_refused_or_shadows_the_first() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
    let out = drain(&mut s);
    assert_eq!(ids(&events(&out, GET)), vec!["0-0"], "the reference server primes the standalone stream");
    s.handle_request(at(1), OTHER, Request::get(Some(session.clone()), None));
    let out = drain(&mut s);
    assert_eq!(
        records(&out),
        vec![StepKind::Rejected { conn: OTHER, status: Status::CONFLICT, session: Some(session) }]
    );

    // rmcp before 0.17: the newest GET takes the notifications; the first stays open, silent.
    let mut s = server(policy("rmcp-0.16"));
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
    s.handle_request(at(1), OTHER, Request::get(Some(session), None));
    let out = drain(&mut s);
    assert_eq!(head_status(&out, OTHER), Status::OK);
    s.notify_all(at(2));
    let out = drain(&mut s);
    assert!(frames(&out, GET).is_empty());
    assert_eq!(ids(&events(&out, OTHER)), vec!["0"]);
    let later = drive_until(&mut s, at(17));
    assert_eq!(frames(&later, GET), vec![Frame::Comment], "the shadowed stream stays open");

    // rmcp 0.17 and later: the second GET is the shadow, primed with `id: 0` and then silent.
    let mut s = server(policy("rmcp"));
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
    s.handle_request(at(1), OTHER, Request::get(Some(session), None));
    let out = drain(&mut s);
    assert_eq!(head_status(&out, OTHER), Status::OK);
    assert_eq!(ids(&events(&out, OTHER)), vec!["0"], "the shadow's priming event");
    s.notify_all(at(2));
    let out = drain(&mut s);
    assert!(frames(&out, OTHER).is_empty(), "a shadow receives no notification");
    assert_eq!(ids(&events(&out, GET)), vec!["0"], "the first GET keeps them, reusing its priming id");
}

#[test]
fn keepalive_comments_come_at_the_interval_on_each_open_stream() {
    let mut s = server(policy("ts-sdk"));
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
    let _ = drain(&mut s);
    let mut comments = Vec::new();
    while let Some(due) = s.poll_timeout().filter(|due| *due <= at(50)) {
        s.handle_timeout(due);
        s.handle_timeout(due); // an extra call does nothing
        for o in drain(&mut s) {
            if o == (ServerOutput::Send { conn: GET, frame: Frame::Comment }) {
                comments.push(due);
            }
        }
    }
    assert_eq!(comments, vec![at(15), at(30), at(45)]);
    s.handle_disconnect(at(50), GET);
    assert!(frames(&drive_until(&mut s, at(100)), GET).is_empty());
    let mut quiet = server(policy("reference"));
    let session = init(&mut quiet, at(0));
    quiet.handle_request(at(0), GET, Request::get(Some(session), None));
    let _ = drain(&mut quiet);
    assert!(frames(&drive_until(&mut quiet, at(100)), GET).is_empty());
}

#[test]
fn a_crash_records_lost_tools_and_sessions_and_resets_connections() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "pay");
    s.crash(at(10));
    let out = drain(&mut s);
    assert_eq!(
        records(&out),
        vec![
            StepKind::ToolEnded {
                session: session.clone(),
                request: RequestId(2),
                call: CallKey(7),
                end: ToolEnd::Lost
            },
            StepKind::SessionEnded {
                session: session.clone(),
                reason: SessionEndReason::ServerRestart,
                idle_ttl_us: None
            },
        ]
    );
    assert_eq!(closes(&out, POST), vec![true]);
    assert!(s.live_sessions().is_empty());
    assert_eq!(s.poll_timeout(), None);
    s.handle_request(at(11), OTHER, Request::initialize(RequestId(1), "app"));
    assert!(drain(&mut s).is_empty(), "a dead process answers nothing");
}

#[test]
fn honoured_idempotency_keys_run_a_side_effect_once_across_sessions() {
    let mut p = policy("reference");
    p.honour_idempotency_keys = true;
    let mut s = server(p);
    let (a, b) = (init(&mut s, at(0)), init(&mut s, at(0)));
    let keyed = |session: &SessionId| {
        let call = ToolCall { tool: "quick".into(), key: CallKey(7), idempotency_key: Some("k7".into()), tasks: false };
        Request::post(Some(session.clone()), ClientMessage::CallTool { id: RequestId(2), call })
    };
    s.handle_request(at(0), POST, keyed(&a));
    s.handle_request(at(1), OTHER, keyed(&b));
    let mut out = drain(&mut s);
    assert_eq!(side_effects(&out), 1);
    out.extend(drive_until(&mut s, at(5)));
    let results: Vec<SessionId> = stored(&out)
        .into_iter()
        .filter(|(_, _, m)| matches!(m, Some(ServerMessage::ToolResult { .. })))
        .map(|(s, ..)| s)
        .collect();
    assert_eq!(results, vec![a, b], "both calls complete");
}

#[test]
fn an_unknown_tool_is_a_json_error() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let out = call(&mut s, at(0), POST, &session, "nope");
    assert_eq!(
        frames(&out, POST)[1],
        Frame::Json(ServerMessage::Error {
            request: Some(RequestId(2)),
            message: "unknown tool nope".into(),
            code: None
        })
    );
    assert_eq!(side_effects(&out), 0);
}

#[test]
fn notifications_are_stored_without_a_get_and_replayed_on_resume() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    s.notify_all(at(1));
    s.notify_all(at(2));
    let out = drain(&mut s);
    assert_eq!(
        stored(&out).into_iter().map(|(_, id, _)| id).collect::<Vec<_>>(),
        vec!["0-0", "0-1"],
        "stored with nobody attached"
    );
    let out = resume(&mut s, at(3), GET, &session, &EventId::from("0-0"));
    assert_eq!(events(&out, GET)[0].data, Some(ServerMessage::Notification { seq: 2 }));
}

/// Runs one busy script and returns everything the server emitted.
fn script(seed: u64) -> Vec<ServerOutput> {
    let mut s = Server::new(policy("ts-sdk"), tools(), 1, seed);
    let mut out = drain(&mut s);
    let session = init(&mut s, at(0));
    out.extend(call(&mut s, at(0), POST, &session, "chatty"));
    s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
    out.extend(drive_until(&mut s, at(20)));
    s.handle_disconnect(at(20), POST);
    s.notify_all(at(21));
    out.extend(drive_until(&mut s, at(40)));
    let last = stored(&out).into_iter().find(|(_, id, _)| !id.starts_with('_')).expect("a POST event").1;
    out.extend(resume(&mut s, at(40), OTHER, &session, &EventId::from(last)));
    out.extend(drive_until(&mut s, at(300)));
    s.crash(at(300));
    out.extend(drain(&mut s));
    out
}

#[test]
fn the_same_inputs_and_seed_give_the_same_outputs() {
    let first = script(5);
    assert!(first.len() > 250);
    assert_eq!(first, script(5));
    assert_ne!(first, script(6), "the seed reaches the ids");
}

// -----------------------------------------------------------------------------------------
// The 2026-07-28 revision: no sessions, a disconnect cancels
// -----------------------------------------------------------------------------------------

/// The `sessions = false` machinery as a server that states no `eras` serves it (every request
/// let through; the era gate is tested at the end of this file).
fn sessionless() -> ServerPolicy {
    ServerPolicy { eras: None, ..policy("stateless-2026") }
}

fn sessionless_call(request: u64, tool: &str, key: u32) -> Request {
    let call = ToolCall { tool: tool.into(), key: CallKey(key), idempotency_key: None, tasks: false };
    Request::post(None, ClientMessage::CallTool { id: RequestId(request), call })
}

fn side_effect_sessions(out: &[ServerOutput]) -> Vec<(SessionId, RequestId)> {
    records(out)
        .into_iter()
        .filter_map(|r| match r {
            StepKind::SideEffect { session, request, .. } => Some((session, request)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_server_without_sessions_answers_initialize_without_an_id_and_serves_any_header() {
    let mut s = server(sessionless());
    s.handle_request(at(0), INIT, Request::initialize(RequestId(1), "app"));
    let out = drain(&mut s);
    let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
    assert_eq!(
        frames(&out, INIT)[..2],
        [Frame::Head(head), Frame::Json(ServerMessage::InitializeResult { request: RequestId(1) })]
    );
    assert!(records(&out).is_empty(), "no session is created");
    // With no header, or with any header at all, a call is served.
    s.handle_request(at(1), POST, sessionless_call(2, "quick", 1));
    let mut stale = sessionless_call(3, "quick", 2);
    stale.session = Some(SessionId::from("0-9"));
    s.handle_request(at(1), OTHER, stale);
    let out = drain(&mut s);
    assert_eq!((head_status(&out, POST), head_status(&out, OTHER)), (Status::OK, Status::OK));
    assert_eq!(
        side_effect_sessions(&out),
        vec![(NO_SESSION.clone(), RequestId(2)), (NO_SESSION.clone(), RequestId(3))]
    );
    assert!(events(&out, POST).is_empty(), "no priming event: there is nothing to resume");
    let out = drive_until(&mut s, at(3));
    assert_eq!(ids(&events(&out, POST)), vec!["0.1-0"], "ids carry the epoch");
    assert_eq!(tool_ends(&out), vec![ToolEnd::Completed, ToolEnd::Completed]);
    assert!(s.live_sessions().is_empty());
}

#[test]
fn a_server_without_sessions_answers_every_get_and_delete_405_and_never_expires() {
    let mut p = sessionless();
    p.idle_ttl = Some(Duration::from_secs(1));
    let mut s = server(p);
    for request in [
        Request::get(None, None),
        Request::get(None, Some(EventId::from("0.1-0"))),
        Request::get(Some(SessionId::from("x")), Some(EventId::from("0.1-0"))),
        Request::delete(SessionId::from("x")),
    ] {
        s.handle_request(at(0), GET, request);
        let out = drain(&mut s);
        assert_eq!(head_status(&out, GET), Status::METHOD_NOT_ALLOWED);
        assert_eq!(records(&out), vec![StepKind::Rejected { conn: GET, status: Status(405), session: None }]);
    }
    s.handle_request(at(0), POST, sessionless_call(2, "quick", 1));
    let _ = drain(&mut s);
    let out = drive_until(&mut s, at(3_600));
    assert!(session_ends(&out).is_empty());
    s.handle_request(at(3_600), OTHER, sessionless_call(3, "quick", 2));
    assert_eq!(side_effects(&drain(&mut s)), 1, "still served an hour later");
    s.notify_all(at(3_600));
    assert!(drain(&mut s).is_empty(), "no standalone stream to notify on");
}

#[test]
fn a_disconnect_cancels_the_tool_when_the_policy_says_so_and_a_reissue_runs_it_again() {
    let mut s = server(sessionless());
    s.handle_request(at(0), POST, sessionless_call(2, "pay", 7));
    let _ = drain(&mut s);
    s.handle_disconnect(at(60), POST);
    let out = drain(&mut s);
    assert_eq!(
        records(&out),
        vec![StepKind::ToolEnded {
            session: NO_SESSION.clone(),
            request: RequestId(2),
            call: CallKey(7),
            end: ToolEnd::Disconnected
        }]
    );
    assert!(frames(&out, POST).is_empty(), "nothing is written on the dead connection");
    assert_eq!(s.poll_timeout(), None, "nothing left to run");
    // The client re-issues the call under a new id: the side effect runs a second time.
    s.handle_request(at(61), OTHER, sessionless_call(3, "pay", 7));
    let out = drain(&mut s);
    assert_eq!(side_effect_sessions(&out), vec![(NO_SESSION.clone(), RequestId(3))]);
    // A disconnect of a connection that carries no tool cancels nothing.
    s.handle_disconnect(at(62), GET);
    assert!(drain(&mut s).is_empty());
}

#[test]
fn a_disconnect_cancels_only_the_tool_whose_stream_the_connection_carried() {
    let mut p = policy("reference");
    p.disconnect_cancels = true;
    let mut s = server(p);
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "chatty");
    s.handle_request(at(0), OTHER, call_request(&session, 3, "marathon", 8));
    let _ = drain(&mut s);
    s.handle_disconnect(at(5), POST);
    let out = drain(&mut s);
    assert_eq!(tool_ends(&out), vec![ToolEnd::Disconnected]);
    assert!(records(&out).iter().all(|r| !matches!(r, StepKind::ToolEnded { call: CallKey(8), .. })));
    assert!(stored(&drive_until(&mut s, at(240))).is_empty(), "chatty stores nothing more");
    // Under the session-ful revisions' rule the tool keeps running.
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "quick");
    s.handle_disconnect(at(1), POST);
    assert!(tool_ends(&drain(&mut s)).is_empty());
    assert_eq!(tool_ends(&drive_until(&mut s, at(2))), vec![ToolEnd::Completed]);
}

#[test]
fn a_restarted_server_without_sessions_never_reuses_an_event_id() {
    let run = |epoch| {
        let mut s = Server::new(sessionless(), tools(), epoch, 42);
        s.handle_request(at(0), POST, sessionless_call(2, "quick", 1));
        let mut out = drain(&mut s);
        out.extend(drive_until(&mut s, at(2)));
        stored(&out).into_iter().map(|(_, id, _)| id).collect::<Vec<_>>()
    };
    assert_eq!((run(0), run(1)), (vec!["0.1-0".to_string()], vec!["1.1-0".to_string()]));
    let mut s = Server::new(sessionless(), tools(), 0, 42);
    s.crash(at(0));
    let out = drain(&mut s);
    assert!(session_ends(&out).is_empty(), "no session to lose: {out:?}");
}

#[test]
fn delete_with_a_tool_running_follows_each_sdk() {
    for (profile, ends, status) in [
        ("ts-sdk", vec![], Status::OK),
        ("py-sdk", vec![ToolEnd::Cancelled], Status::OK),
        ("rmcp", vec![ToolEnd::Cancelled], Status::ACCEPTED),
    ] {
        let mut s = server(policy(profile));
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "pay");
        s.handle_request(at(10), OTHER, Request::delete(session.clone()));
        let out = drain(&mut s);
        assert_eq!(tool_ends(&out), ends, "{profile}");
        assert_eq!(head_status(&out, OTHER), status, "{profile}");
        assert_eq!(frames(&out, POST), vec![Frame::End], "{profile}: the stream ends with no response");
        assert!(stored(&drive_until(&mut s, at(400))).is_empty(), "{profile}: no result is stored");
    }
}

// ---------------------------------------------------------------------------------------------
// Field behaviours (OBSERVED.md and the SDKs' sources): each field changes what a test sees.
// ---------------------------------------------------------------------------------------------

use crate::config::{
    ConnAfterResponse, DeadStream, DeleteRule, DetachedEvents, FreshGet, IdStamp, IdleReset, IdleRule, KeepaliveTimer,
    OnAbort, ResumeWhileAttached, SecondGet, SessionlessGet, SideEffectAt, UnknownSession,
};

fn comments(out: &[ServerOutput], conn: ConnId) -> usize {
    frames(out, conn).iter().filter(|f| **f == Frame::Comment).count()
}

fn server_with(policy: ServerPolicy, tools: Vec<ToolSpec>) -> Server {
    let mut s = Server::new(policy, tools, 0, 42);
    let _ = drain(&mut s);
    s
}

#[test]
fn an_after_silence_keepalive_never_comes_on_a_stream_with_frequent_events() {
    for (timer, expected) in [(KeepaliveTimer::Fixed, 1), (KeepaliveTimer::AfterSilence, 0)] {
        let mut s = server(ServerPolicy { keepalive_timer: timer, ..policy("rmcp") });
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "chatty");
        let out = drive_until(&mut s, at(20));
        assert_eq!(comments(&out, POST), expected, "{timer:?}");
    }
    // A silent stream gets them either way: rmcp after 15 s of silence.
    let mut s = server(policy("rmcp"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "marathon");
    assert_eq!(comments(&drive_until(&mut s, at(31)), POST), 2);
}

#[test]
fn python_sends_keepalive_comments_every_15_seconds() {
    let mut s = server(policy("py-sdk"));
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session), None));
    let _ = drain(&mut s);
    assert_eq!(comments(&drive_until(&mut s, at(46)), GET), 3);
}

#[test]
fn rmcp_delivers_notifications_sent_with_no_get_open_on_the_next_fresh_get() {
    for (name, fresh, delivered) in [("rmcp", FreshGet::Buffered, 2), ("py-sdk", FreshGet::NewOnly, 0)] {
        let mut s = server(ServerPolicy { fresh_get: fresh, ..policy(name) });
        let session = init(&mut s, at(0));
        s.notify_all(at(1));
        s.notify_all(at(2));
        let _ = drain(&mut s);
        s.handle_request(at(3), GET, Request::get(Some(session), None));
        let out = drain(&mut s);
        let messages = events(&out, GET).into_iter().filter(|e| e.data.is_some()).count();
        assert_eq!(messages, delivered, "{name}");
    }
}

#[test]
fn rmcp_primes_a_fresh_get_with_the_id_its_first_notification_reuses() {
    let mut s = server(policy("rmcp"));
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session), None));
    let out = drain(&mut s);
    let priming = events(&out, GET);
    assert_eq!(ids(&priming), vec!["0"]);
    assert_eq!(priming[0].retry_ms, Some(3000));
    assert!(stored(&out).is_empty(), "the priming event is not stored");
    s.notify_all(at(1));
    assert_eq!(ids(&events(&drain(&mut s), GET)), vec!["0"], "id 0 twice");
    // Stored, it takes an id of its own.
    let stored_policy = ServerPolicy { standalone_priming: crate::config::StandalonePriming::Stored, ..policy("rmcp") };
    let mut s = server(stored_policy);
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session), None));
    let _ = drain(&mut s);
    s.notify_all(at(1));
    assert_eq!(ids(&events(&drain(&mut s), GET)), vec!["1"]);
}

/// Runs `quick` (2 s) to completion on POST and returns the ids it sent there.
fn finished_call(s: &mut Server, session: &SessionId) -> Vec<EventId> {
    let mut out = call(s, at(0), POST, session, "quick");
    out.extend(drive_until(s, at(3)));
    events(&out, POST).into_iter().filter_map(|e| e.id).collect()
}

#[test]
fn a_finished_stream_resumed_replays_its_response_and_closes_or_stays_open() {
    for (rule, closed) in [(ConnAfterResponse::Close, true), (ConnAfterResponse::StayOpen, false)] {
        let mut s = server(ServerPolicy { finished_resume: rule, ..policy("ts-sdk") });
        let session = init(&mut s, at(0));
        let sent = finished_call(&mut s, &session);
        let out = resume(&mut s, at(10), GET, &session, &sent[0]);
        let replayed = events(&out, GET);
        assert!(replayed.iter().any(|e| matches!(e.data, Some(ServerMessage::ToolResult { .. }))), "{rule:?}");
        assert_eq!(!closes(&out, GET).is_empty(), closed, "{rule:?}");
    }
}

#[test]
fn python_keeps_a_resumed_stream_open_after_its_response() {
    for (rule, closed) in [(ConnAfterResponse::Close, true), (ConnAfterResponse::StayOpen, false)] {
        let mut s = server(ServerPolicy { resumed_on_response: rule, ..policy("py-sdk") });
        let session = init(&mut s, at(0));
        let out = call(&mut s, at(0), POST, &session, "quick");
        let priming = events(&out, POST)[0].id.clone().expect("primed");
        s.handle_disconnect(at(1), POST);
        let _ = drain(&mut s);
        let out = resume(&mut s, at(1), GET, &session, &priming);
        assert_eq!(events(&out, GET).len(), 1, "the new priming event after the (empty) replay");
        let out = drive_until(&mut s, at(3));
        assert!(matches!(events(&out, GET)[..], [SseEvent { data: Some(ServerMessage::ToolResult { .. }), .. }]));
        assert_eq!(!closes(&out, GET).is_empty(), closed, "{rule:?}");
    }
}

#[test]
fn python_closes_a_resume_whose_request_stream_is_still_registered() {
    for (rule, resumed_closed) in [(ResumeWhileAttached::TakeOver, false), (ResumeWhileAttached::ReplayAndClose, true)]
    {
        let mut s = server(ServerPolicy { resume_while_attached: rule, ..policy("py-sdk") });
        let session = init(&mut s, at(0));
        let out = call(&mut s, at(0), POST, &session, "chatty");
        let priming = events(&out, POST)[0].id.clone().expect("primed");
        let _ = drive_until(&mut s, at(2));
        let out = resume(&mut s, at(2), GET, &session, &priming);
        assert_eq!(events(&out, GET).iter().filter(|e| e.data.is_some()).count(), 2, "the replay");
        assert_eq!(!closes(&out, GET).is_empty(), resumed_closed, "{rule:?}");
        assert_eq!(closes(&out, POST).is_empty(), resumed_closed, "{rule:?}: the old one ends on take-over");
        // The resume step names the connection kept when the resuming one is closed for it.
        let claimed = records(&out).into_iter().find_map(|r| match r {
            StepKind::Resume { claimed_by, .. } => Some(claimed_by),
            _ => None,
        });
        assert_eq!(claimed, Some(resumed_closed.then_some(POST)), "{rule:?}");
    }
}

#[test]
fn sep_1699_polling_closes_the_post_after_its_priming_event_and_the_result_is_replayed() {
    let polling =
        ServerPolicy { close_request_streams: Some(Duration::ZERO), retry_ms: Some(500), ..policy("reference") };
    let mut s = server(polling);
    let session = init(&mut s, at(0));
    let mut out = call(&mut s, at(0), POST, &session, "quick");
    out.extend(drive_until(&mut s, at(0)));
    let sent = events(&out, POST);
    assert_eq!(ids(&sent), vec!["1-0"]);
    assert_eq!(sent[0].retry_ms, Some(500));
    assert_eq!(closes(&out, POST), vec![false], "closed cleanly by the server");
    let closed = out.iter().find_map(|o| match o {
        ServerOutput::Record(StepKind::ServerClosedStream { conn, stream, rule, after_us, .. }) => {
            Some((*conn, *stream, *rule, *after_us))
        }
        _ => None,
    });
    assert_eq!(closed, Some((POST, Some(StreamNo(1)), crate::trace::CloseRule::RequestStream, 0)));
    let _ = drive_until(&mut s, at(3));
    let out = resume(&mut s, at(3), GET, &session, &EventId::from("1-0"));
    assert!(matches!(events(&out, GET)[..], [SseEvent { data: Some(ServerMessage::ToolResult { .. }), .. }]));
}

/// SEP-1699 polling needs a stream the client can resume: a modern request's (or a sessionless
/// server's) stream is never closed before its response, on a dual-era server or a modern-only
/// one, whatever `close_request_streams` says; the legacy request beside it still is.
#[test]
fn no_modern_or_sessionless_request_stream_is_closed_for_polling() {
    let polling = |name| ServerPolicy { close_request_streams: Some(Duration::from_secs(1)), ..policy(name) };
    // A dual-era server: the modern call runs to its result on its open stream; the legacy one
    // in a session is closed at 1 s.
    let mut s = server(polling("py-sdk"));
    let session = init(&mut s, at(0));
    s.handle_request(at(0), POST, modern_call(7, "quick", 1));
    let _ = drain(&mut s);
    let _ = call(&mut s, at(0), OTHER, &session, "quick");
    let out = drive_until(&mut s, at(3));
    assert!(!closed_by_server(&out, POST), "{out:?}");
    assert!(events(&out, POST).iter().any(|e| matches!(e.data, Some(ServerMessage::ToolResult { .. }))));
    assert!(closed_by_server(&out, OTHER), "the legacy request's stream is closed for polling");
    // A modern-only (sessionless) server.
    let mut s = server(polling("stateless-2026"));
    s.handle_request(at(0), POST, modern_call(2, "quick", 1));
    let out = drive_until(&mut s, at(3));
    assert!(!closed_by_server(&out, POST), "{out:?}");
    assert_eq!(tool_ends(&out), vec![ToolEnd::Completed]);
}

/// Whether the server closed `conn` on its own timer.
fn closed_by_server(out: &[ServerOutput], conn: ConnId) -> bool {
    records(out).iter().any(|r| matches!(r, StepKind::ServerClosedStream { conn: c, .. } if *c == conn))
}

/// typescript-sdk#2151: after `closeSSEStream`, the result produced while no connection is
/// attached is not stored, so a resumption finds nothing and the call never resolves.
#[test]
fn typescript_loses_the_result_produced_after_close_sse_stream() {
    for (rule, results) in [(DetachedEvents::Store, 1), (DetachedEvents::Drop, 0)] {
        let closing = ServerPolicy {
            close_request_streams: Some(Duration::from_secs(1)),
            detached_request_events: rule,
            ..policy("ts-sdk")
        };
        let mut s = server(closing);
        let session = init(&mut s, at(0));
        let out = call(&mut s, at(0), POST, &session, "quick");
        let priming = events(&out, POST)[0].id.clone().expect("primed");
        let out = drive_until(&mut s, at(3));
        assert_eq!(closes(&out, POST), vec![false], "the server closed the POST at 1 s");
        let result_stored =
            stored(&out).iter().filter(|(_, _, m)| matches!(m, Some(ServerMessage::ToolResult { .. }))).count();
        assert_eq!(result_stored, results, "{rule:?}");
        // What is dropped is said so in the trace: the judge names the server for it.
        let dropped = records(&out).iter().filter(|r| matches!(r, StepKind::EventDropped { answer: true, .. })).count();
        assert_eq!(dropped, 1 - results, "{rule:?}");
        assert_eq!(tool_ends(&out), vec![ToolEnd::Completed]);
        let out = resume(&mut s, at(4), GET, &session, &priming);
        assert_eq!(events(&out, GET).len(), results, "{rule:?}");
    }
}

#[test]
fn an_idle_standalone_stream_is_closed_by_the_server_and_events_restart_the_countdown() {
    let closing = ServerPolicy { close_idle_standalone: Some(Duration::from_secs(30)), ..policy("reference") };
    let mut s = server(closing);
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
    let _ = drain(&mut s);
    s.notify_all(at(20));
    let _ = drain(&mut s);
    assert!(closes(&drive_until(&mut s, at(49)), GET).is_empty());
    let out = drive_until(&mut s, at(50));
    assert_eq!(closes(&out, GET), vec![false]);
    // The trace says the server's own timer did it, and which setting that is.
    let recorded = ServerOutput::Record(StepKind::ServerClosedStream {
        conn: GET,
        session,
        stream: Some(StreamNo::STANDALONE),
        rule: crate::trace::CloseRule::IdleStandalone,
        after_us: 30_000_000,
    });
    assert!(out.contains(&recorded), "{out:?}");
}

#[test]
fn a_standalone_stream_resumed_with_last_event_id_is_closed_when_idle_too() {
    let closing = ServerPolicy { close_idle_standalone: Some(Duration::from_secs(30)), ..policy("reference") };
    let mut s = server(closing);
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
    let first = events(&drain(&mut s), GET);
    let priming = first[0].id.clone().expect("the reference primes the standalone stream");
    // The first GET is cut; the client resumes it.
    s.handle_disconnect(at(10), GET);
    let _ = drain(&mut s);
    let out = resume(&mut s, at(11), OTHER, &session, &priming);
    assert_eq!(resume_outcome(&out).0, Some(StreamNo::STANDALONE));
    s.notify_all(at(20));
    let _ = drain(&mut s);
    assert!(closes(&drive_until(&mut s, at(49)), OTHER).is_empty());
    assert_eq!(closes(&drive_until(&mut s, at(50)), OTHER), vec![false], "30 s after the last event on it");
}

#[test]
fn a_dead_standalone_stream_holds_its_place_until_a_write_fails() {
    for (rule, notify_notices) in
        [(DeadStream::Immediate, true), (DeadStream::OnWrite, true), (DeadStream::OnKeepalive, false)]
    {
        let mut s = server(ServerPolicy { dead_stream: rule, ..policy("ts-sdk") });
        let session = init(&mut s, at(0));
        s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
        let _ = drain(&mut s);
        s.handle_client_gone(at(1), GET);
        let _ = drain(&mut s);
        s.handle_request(at(2), OTHER, Request::get(Some(session.clone()), None));
        let expected = if rule == DeadStream::Immediate { Status::OK } else { Status::CONFLICT };
        assert_eq!(head_status(&drain(&mut s), OTHER), expected, "{rule:?}");
        if rule == DeadStream::Immediate {
            continue;
        }
        s.notify_all(at(3));
        let out = drain(&mut s);
        assert_eq!(closes(&out, GET) == vec![true], notify_notices, "{rule:?}: the failed write resets it");
        let _ = drive_until(&mut s, at(16)); // the keep-alive at 15 s notices it in any case
        s.handle_request(at(17), OTHER, Request::get(Some(session), None));
        assert_eq!(head_status(&drain(&mut s), OTHER), Status::OK, "{rule:?}");
    }
}

#[test]
fn a_second_get_can_get_400_or_replace_the_first() {
    let mut s = server(ServerPolicy { second_get: SecondGet::Reject400, ..policy("reference") });
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
    s.handle_request(at(1), OTHER, Request::get(Some(session), None));
    assert_eq!(head_status(&drain(&mut s), OTHER), Status::BAD_REQUEST);

    let mut s = server(ServerPolicy { second_get: SecondGet::Replace, ..policy("reference") });
    let session = init(&mut s, at(0));
    s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
    s.handle_request(at(1), OTHER, Request::get(Some(session), None));
    let out = drain(&mut s);
    assert_eq!(closes(&out, GET), vec![false], "the old one is ended");
    s.notify_all(at(2));
    let out = drain(&mut s);
    assert!(frames(&out, GET).is_empty());
    assert_eq!(events(&out, OTHER).len(), 1);
}

#[test]
fn an_unknown_session_gets_404_400_or_a_json_rpc_error_with_200() {
    let ghost = SessionId::from("ghost");
    for (rule, status) in [
        (UnknownSession::NotFound404, Status::NOT_FOUND),
        (UnknownSession::BadRequest400, Status::BAD_REQUEST),
        (UnknownSession::RpcError200, Status::OK),
    ] {
        let mut s = server(ServerPolicy { unknown_session: rule, ..policy("reference") });
        s.handle_request(at(0), POST, call_request(&ghost, 5, "quick", 1));
        let out = drain(&mut s);
        assert_eq!(head_status(&out, POST), status, "{rule:?}");
        let json = frames(&out, POST).into_iter().find_map(|f| match f {
            Frame::Json(ServerMessage::Error { request, code, .. }) => Some((request, code)),
            _ => None,
        });
        let expected = (rule == UnknownSession::RpcError200).then_some((Some(RequestId(5)), Some(-32001)));
        assert_eq!(json, expected, "{rule:?}");
        // DELETE keeps its own status.
        s.handle_request(at(1), OTHER, Request::delete(ghost.clone()));
        assert_eq!(head_status(&drain(&mut s), OTHER), Status::NOT_FOUND);
    }
}

#[test]
fn a_json_rpc_error_for_an_unknown_session_carries_a_null_id_for_a_get_and_the_policys_code() {
    let ghost = SessionId::from("ghost");
    let p = ServerPolicy {
        unknown_session: UnknownSession::RpcError200,
        unknown_session_code: -32600,
        ..policy("reference")
    };
    let mut s = server(p);
    s.handle_request(at(0), GET, Request::get(Some(ghost.clone()), None));
    let out = drain(&mut s);
    assert_eq!(head_status(&out, GET), Status::OK);
    let error = frames(&out, GET).into_iter().find(|f| matches!(f, Frame::Json(ServerMessage::Error { .. })));
    let error = error.expect("a JSON-RPC error body");
    assert_eq!(
        serde_json::to_string(&error).unwrap(),
        r#"{"frame":"json","type":"error","request":null,"message":"Session not found","code":-32600}"#
    );
    // An error the model states no code for keeps the bytes it always had.
    let plain = ServerMessage::Error { request: Some(RequestId(2)), message: "x".into(), code: None };
    assert_eq!(serde_json::to_string(&plain).unwrap(), r#"{"type":"error","request":2,"message":"x"}"#);
}

#[test]
fn a_server_without_sessions_answers_get_and_delete_with_its_status() {
    for status in [405, 400, 404] {
        let mut s = server(ServerPolicy { sessionless_get_status: status, ..sessionless() });
        s.handle_request(at(0), GET, Request::get(None, None));
        s.handle_request(at(0), OTHER, Request::delete(SessionId::from("x")));
        let out = drain(&mut s);
        assert_eq!((head_status(&out, GET), head_status(&out, OTHER)), (Status(status), Status(status)));
    }
}

/// Python 2.3.0's stateless mode (`sessionless_get = hold-open`): a GET is answered 200 and held
/// open with keep-alives, and a notification, which has no session to go by, is stored where no
/// connection is attached and written to nobody; DELETE is still refused. Refusing (the default)
/// answers the GET with the status and records no notification. A GET with `Last-Event-ID` is no
/// fresh GET: refused with a store, 500 or held open without one, as `resume_without_store` says.
#[test]
fn a_server_without_sessions_refuses_a_get_or_holds_it_open_with_keep_alives_and_nothing_else() {
    let keepalive = Some(Duration::from_secs(15));
    let run = |rule: SessionlessGet| {
        let mut s = server(ServerPolicy { sessionless_get: rule, keepalive, ..sessionless() });
        s.handle_request(at(0), GET, Request::get(None, None));
        s.handle_request(at(0), OTHER, Request::delete(SessionId::from("x")));
        let mut out = drain(&mut s);
        s.notify_all(at(2));
        out.extend(drain(&mut s));
        out.extend(drive_until(&mut s, at(31)));
        (s, out)
    };
    let (_, refused) = run(SessionlessGet::Refuse);
    assert_eq!(head_status(&refused, GET), Status::METHOD_NOT_ALLOWED);
    assert_eq!(closes(&refused, GET), vec![false]);
    assert!(!records(&refused).iter().any(|r| matches!(r, StepKind::EventStored { .. })), "nothing to record");

    let (mut s, held) = run(SessionlessGet::HoldOpen);
    assert_eq!(frames(&held, GET)[0], Frame::Head(ResponseHead::event_stream()));
    assert_eq!(head_status(&held, OTHER), Status::METHOD_NOT_ALLOWED, "DELETE has no session to end");
    assert!(closes(&held, GET).is_empty(), "held open");
    assert!(events(&held, GET).is_empty(), "no priming, no notification");
    assert_eq!(comments(&held, GET), 2, "keep-alives at 15 s and 30 s");
    let stored: Vec<(SessionId, StreamNo, bool)> = records(&held)
        .into_iter()
        .filter_map(|r| match r {
            StepKind::EventStored { session, stream, message, .. } => Some((session, stream, message.is_some())),
            _ => None,
        })
        .collect();
    assert_eq!(stored, vec![(SessionId::from(""), StreamNo::STANDALONE, true)], "stored where nothing reads it");
    // Its end is only its connection's.
    s.handle_disconnect(at(32), GET);
    assert!(drive_until(&mut s, at(100)).iter().all(|o| !matches!(o, ServerOutput::Send { conn: GET, .. })));

    let id = EventId::from("0.x");
    for (store, without, status) in [
        (EventStoreMode::Kept, NoStoreResume::Ignored, Status::METHOD_NOT_ALLOWED),
        (EventStoreMode::NoStore, NoStoreResume::Error500, Status::INTERNAL),
        (EventStoreMode::NoStore, NoStoreResume::Ignored, Status::OK),
    ] {
        let p = ServerPolicy {
            sessionless_get: SessionlessGet::HoldOpen,
            event_store: store,
            resume_without_store: without,
            ..sessionless()
        };
        let mut s = server(p);
        s.handle_request(at(0), GET, Request::get(None, Some(id.clone())));
        assert_eq!(head_status(&drain(&mut s), GET), status, "{store:?} {without:?}");
    }
}

/// A second standalone GET while the first is still registered (its client gone unnoticed):
/// `empty-closed` answers 200 with a stream that ends at once and keeps the first registered
/// (kotlin-sdk#715: the notifications still go there); `end-session` answers 409 and ends the
/// session, cancelling its tool (kaeawc/auto-mobile#1942); `restart-process` answers 409 and the
/// process exits, losing everything (supercorp-ai/supergateway#126).
#[test]
fn a_second_get_can_be_answered_empty_end_the_session_or_restart_the_process() {
    let second = |rule: SecondGet| {
        let mut s = server(ServerPolicy { second_get: rule, ..policy("reference") });
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "pay");
        s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
        let _ = drain(&mut s);
        s.handle_request(at(1), OTHER, Request::get(Some(session.clone()), None));
        let out = drain(&mut s);
        (s, session, out)
    };

    let (mut s, session, out) = second(SecondGet::EmptyClosed);
    assert_eq!(frames(&out, OTHER), vec![Frame::Head(ResponseHead::event_stream()), Frame::End]);
    assert_eq!(closes(&out, OTHER), vec![false]);
    let refused = StepKind::RefusedAfterHead { conn: OTHER, status: Status::CONFLICT, session: session.clone() };
    assert_eq!(records(&out), vec![refused]);
    s.notify_all(at(2));
    assert_eq!(events(&drain(&mut s), GET).len(), 1, "the first GET still receives");

    let (mut s, session, out) = second(SecondGet::EndSession);
    assert_eq!(head_status(&out, OTHER), Status::CONFLICT);
    assert_eq!(session_ends(&out), vec![SessionEndReason::StreamConflict]);
    assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
    assert_eq!(closes(&out, GET), vec![false], "the first GET ends with its session");
    assert!(!out.contains(&ServerOutput::Exit));
    s.handle_request(at(2), INIT, call_request(&session, 3, "quick", 8));
    assert_eq!(head_status(&drain(&mut s), INIT), Status::NOT_FOUND);

    let (mut s, session, out) = second(SecondGet::RestartProcess);
    assert_eq!(head_status(&out, OTHER), Status::CONFLICT, "the 409 is written before the exit");
    let exit = StepKind::ProcessExit { conn: OTHER, session: Some(session.clone()), cause: ExitCause::SecondGet };
    assert!(records(&out).contains(&exit), "{out:?}");
    assert_eq!(session_ends(&out), vec![SessionEndReason::ProcessExit]);
    assert_eq!(tool_ends(&out), vec![ToolEnd::Lost]);
    assert_eq!(closes(&out, GET), vec![true], "every connection reset");
    assert_eq!(out.last(), Some(&ServerOutput::Exit));
    s.handle_request(at(2), INIT, call_request(&session, 3, "quick", 8));
    assert!(drain(&mut s).is_empty(), "the exited process does nothing more");

    // The rules before them are unchanged: 409 and nothing else.
    let (_, _, out) = second(SecondGet::Reject409);
    assert_eq!(head_status(&out, OTHER), Status::CONFLICT);
    assert!(session_ends(&out).is_empty() && tool_ends(&out).is_empty());
}

#[test]
fn rmcp_outgoing_events_hold_an_idle_session() {
    for (reset, expires) in [(IdleReset::Requests, true), (IdleReset::RequestsAndEvents, false)] {
        let p = ServerPolicy {
            idle_ttl: Some(Duration::from_secs(60)),
            idle_rule: IdleRule::LastRequest,
            idle_reset: reset,
            ..policy("rmcp")
        };
        let mut s = server(p);
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "chatty");
        let out = drive_until(&mut s, at(100));
        assert_eq!(!session_ends(&out).is_empty(), expires, "{reset:?}");
    }
}

fn effect_tools(at_: SideEffectAt, on_abort: OnAbort) -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "job".into(),
        duration: Duration::from_secs(100),
        event_interval: None,
        idempotent: false,
        side_effect: at_,
        on_abort,
        ..ToolSpec::default()
    }]
}

fn job(s: &mut Server, session: &SessionId) -> Vec<ServerOutput> {
    call(s, at(0), POST, session, "job")
}

#[test]
fn a_side_effect_at_completion_never_happens_for_a_cancelled_run() {
    for (when, effects_at_start) in [(SideEffectAt::Start, 1), (SideEffectAt::Completion, 0)] {
        let mut s = server_with(policy("reference"), effect_tools(when, OnAbort::Ignore));
        let session = init(&mut s, at(0));
        assert_eq!(side_effects(&job(&mut s, &session)), effects_at_start, "{when:?}");
        s.handle_request(at(10), OTHER, Request::delete(session));
        let mut out = drain(&mut s);
        out.extend(drive_until(&mut s, at(200)));
        assert_eq!(side_effects(&out), 0, "{when:?}: cancelled at 10 s");
        assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
    }
    let mut s = server_with(policy("reference"), effect_tools(SideEffectAt::Completion, OnAbort::Ignore));
    let session = init(&mut s, at(0));
    let _ = job(&mut s, &session);
    assert_eq!(side_effects(&drive_until(&mut s, at(99))), 0);
    assert_eq!(side_effects(&drive_until(&mut s, at(100))), 1);
}

#[test]
fn a_tool_can_run_to_completion_after_its_session_expired() {
    for (rule, end) in [(DeleteRule::Cancel, ToolEnd::Cancelled), (DeleteRule::RunOn, ToolEnd::Completed)] {
        let p = ServerPolicy {
            idle_ttl: Some(Duration::from_secs(60)),
            idle_rule: IdleRule::LastRequest,
            expire_running_tool: rule,
            ..policy("reference")
        };
        let mut s = server_with(p, effect_tools(SideEffectAt::Completion, OnAbort::Ignore));
        let session = init(&mut s, at(0));
        let _ = job(&mut s, &session);
        let out = drive_until(&mut s, at(200));
        assert_eq!(session_ends(&out), vec![SessionEndReason::IdleExpired]);
        assert_eq!(tool_ends(&out), vec![end], "{rule:?}");
        let effects = usize::from(rule == DeleteRule::RunOn);
        assert_eq!(side_effects(&out), effects, "{rule:?}: the orphan still does its side effect");
        assert!(stored(&out).iter().all(|(_, _, m)| !matches!(m, Some(ServerMessage::ToolResult { .. }))));
    }
}

#[test]
fn typescript_delete_fires_the_abort_signal_a_tool_may_ignore() {
    for (on_abort, end) in [(OnAbort::Ignore, ToolEnd::Completed), (OnAbort::Stop, ToolEnd::Cancelled)] {
        let mut s = server_with(policy("ts-sdk"), effect_tools(SideEffectAt::Start, on_abort));
        let session = init(&mut s, at(0));
        let _ = job(&mut s, &session);
        s.handle_request(at(1), OTHER, Request::delete(session));
        let mut out = drain(&mut s);
        assert_eq!(closes(&out, POST), vec![false], "the POST ends without a response");
        out.extend(drive_until(&mut s, at(200)));
        assert_eq!(tool_ends(&out), vec![end], "{on_abort:?}");
    }
}

#[test]
fn due_stamps_give_a_burst_its_own_milliseconds_even_when_handled_late() {
    for (stamp, expected) in
        [(IdStamp::Handled, vec!["1700000000009"; 2]), (IdStamp::Due, vec!["1700000000003", "1700000000005"])]
    {
        let tools = vec![ToolSpec {
            name: "ticks".into(),
            duration: Duration::from_millis(5),
            event_interval: Some(Duration::from_millis(3)),
            idempotent: true,
            ..ToolSpec::default()
        }];
        let mut s = server_with(ServerPolicy { id_stamp: stamp, ..policy("ts-sdk") }, tools);
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "ticks");
        s.handle_timeout(at_ms(9)); // the actor woke late: both timers are past due
        let out = drain(&mut s);
        let clocks: Vec<String> =
            ids(&events(&out, POST)).iter().map(|id| id.split('_').nth(1).unwrap_or_default().to_string()).collect();
        assert_eq!(clocks, expected, "{stamp:?}");
    }
}

#[test]
fn versioned_profiles_name_their_release_and_differ_where_they_say() {
    for name in profiles::SERVER_VERSIONED_NAMES {
        let layers = profiles::builtin_layers(profiles::Role::Server, name).expect("built in").expect("valid");
        let top = layers.last().expect("a layer");
        assert!(top.meta.sdk.is_some() && !top.meta.sources.is_empty(), "{name}");
        assert!(top.extends.is_some(), "{name} extends the current profile");
    }
    assert_eq!(policy("rmcp-1.3").idle_ttl, None);
    assert_eq!(policy("rmcp").idle_ttl, Some(Duration::from_secs(300)));
    assert_eq!(policy("rmcp-0.16").second_get, SecondGet::Accept);
    assert_eq!(policy("py-sdk-1.27").idle_rule, IdleRule::LastRequest);
    assert_eq!(policy("py-sdk").idle_rule, IdleRule::NoOpenRequest);
    assert_eq!((policy("ts-sdk-1.29").keepalive, policy("ts-sdk").keepalive), (None, Some(Duration::from_secs(15))));
    assert_eq!(policy("ts-sdk-1.29").detached_request_events, DetachedEvents::Drop);
    assert_eq!(policy("ts-sdk").detached_request_events, DetachedEvents::Store);
}

// ---------------------------------------------------------------------------------------------
// No event store (`event_store = none`)
// ---------------------------------------------------------------------------------------------

fn no_store(name: &str, resume: crate::config::NoStoreResume) -> ServerPolicy {
    ServerPolicy { event_store: EventStoreMode::NoStore, resume_without_store: resume, ..policy(name) }
}

#[test]
fn without_an_event_store_events_carry_no_id_and_no_priming_is_sent() {
    for name in ["reference", "ts-sdk", "py-sdk", "rmcp"] {
        let mut s = server(no_store(name, NoStoreResume::Ignored));
        let session = init(&mut s, at(0));
        let mut out = call(&mut s, at(0), POST, &session, "chatty");
        out.extend(drive_until(&mut s, at_ms(3500)));
        let sent = events(&out, POST);
        assert_eq!(sent.len(), 3, "{name}: three progress events and no priming: {sent:?}");
        assert!(sent.iter().all(|e| e.id.is_none() && e.data.is_some()), "{name}: {sent:?}");
        // The trace still follows each event (for the oracles), under an id never sent.
        assert_eq!(stored(&out).len(), 3, "{name}");
        // A standalone GET gets no priming either.
        s.handle_request(at(4), GET, Request::get(Some(session.clone()), None));
        assert!(events(&drain(&mut s), GET).is_empty(), "{name}");
    }
}

#[test]
fn without_an_event_store_a_resume_is_refused_with_500_or_served_as_a_fresh_get() {
    // Python: `_replay_events` returns without a response, so the ASGI server answers 500.
    let mut s = server(no_store("py-sdk", NoStoreResume::Error500));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "chatty");
    let _ = drive_until(&mut s, at(2));
    let out = resume(&mut s, at(2), GET, &session, &EventId::from("anything"));
    assert_eq!(head_status(&out, GET), Status::INTERNAL);
    assert!(!records(&out).iter().any(|r| matches!(r, StepKind::Resume { .. })));
    // TypeScript: the header is ignored; the GET is the session's standalone stream, which then
    // carries new notifications and nothing of the call's stream.
    let mut s = server(no_store("ts-sdk", NoStoreResume::Ignored));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "chatty");
    let _ = drive_until(&mut s, at(2));
    let mut out = resume(&mut s, at(2), GET, &session, &EventId::from("anything"));
    assert_eq!(head_status(&out, GET), Status::OK);
    s.notify_all(at(3));
    out.extend(drain(&mut s));
    let got = events(&out, GET);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].data, Some(ServerMessage::Notification { seq: 1 }));
    // A second resume while that GET is open meets the one-GET rule (409).
    let out = resume(&mut s, at(4), OTHER, &session, &EventId::from("anything"));
    assert_eq!(head_status(&out, OTHER), Status::CONFLICT);
}

#[test]
fn with_a_store_the_same_requests_are_resumed_as_before() {
    let mut s = server(policy("py-sdk"));
    let session = init(&mut s, at(0));
    let out = call(&mut s, at(0), POST, &session, "chatty");
    let priming = events(&out, POST);
    assert_eq!(priming.len(), 1, "py-sdk primes each POST stream");
    let id = priming[0].id.clone().expect("a priming event has an id");
    s.handle_disconnect(at(1), POST);
    let out = resume(&mut s, at_ms(2500), GET, &session, &id);
    assert_eq!(head_status(&out, GET), Status::OK);
    assert!(records(&out).iter().any(|r| matches!(r, StepKind::Resume { .. })));
}

// ---------------------------------------------------------------------------------------------
// JSON response mode (`response_mode = json`)
// ---------------------------------------------------------------------------------------------

fn json_mode(name: &str) -> ServerPolicy {
    ServerPolicy { response_mode: crate::config::ResponseMode::Json, ..policy(name) }
}

#[test]
fn in_json_mode_a_call_is_answered_by_one_json_body_when_its_result_is_ready() {
    for name in ["reference", "ts-sdk", "py-sdk"] {
        let mut s = server(json_mode(name));
        let session = init(&mut s, at(0));
        let out = call(&mut s, at(0), POST, &session, "chatty");
        assert!(frames(&out, POST).is_empty(), "{name}: nothing before the result: {out:?}");
        // Neither progress nor keep-alives while it runs.
        let out = drive_until(&mut s, at(239));
        assert!(frames(&out, POST).is_empty(), "{name}: {:?}", frames(&out, POST));
        assert!(stored(&out).is_empty(), "{name}: progress is dropped, not stored");
        let out = drive_until(&mut s, at(240));
        let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
        let result = ServerMessage::ToolResult { request: RequestId(2), call: CallKey(7) };
        assert_eq!(frames(&out, POST), vec![Frame::Head(head), Frame::Json(result), Frame::End], "{name}");
        assert_eq!(closes(&out, POST), vec![false], "{name}");
    }
}

#[test]
fn in_json_mode_a_cut_before_the_result_loses_it_and_leaves_nothing_to_resume() {
    let mut s = server(json_mode("ts-sdk"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "pay");
    s.handle_disconnect(at(60), POST);
    let mut out = drain(&mut s);
    out.extend(drive_until(&mut s, at(301)));
    // The tool ran to its end and its result was produced, but no connection carried it.
    assert_eq!(tool_ends(&out), vec![ToolEnd::Completed]);
    assert!(frames(&out, POST).is_empty());
    assert!(out.iter().all(|o| !matches!(o, ServerOutput::Send { .. })), "{out:?}");
}

// ---------------------------------------------------------------------------------------------
// Bursts (`ToolSpec::burst`)
// ---------------------------------------------------------------------------------------------

fn batch_server(policy: ServerPolicy) -> Server {
    let batch = ToolSpec {
        name: "batch".into(),
        duration: Duration::from_secs(10),
        event_interval: Some(Duration::from_secs(1)),
        burst: 8,
        ..ToolSpec::default()
    };
    let mut s = Server::new(policy, vec![batch], 0, 42);
    let _ = drain(&mut s);
    s
}

#[test]
fn a_burst_emits_its_events_at_one_instant_in_order() {
    let mut s = batch_server(policy("reference"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "batch");
    let out = drive_until(&mut s, at(1));
    let steps: Vec<Option<ServerMessage>> = stored(&out).into_iter().map(|(_, _, m)| m).collect();
    assert_eq!(steps, (1..=8).map(progress).collect::<Vec<_>>());
    let out = drive_until(&mut s, at(2));
    assert_eq!(stored(&out).len(), 8, "eight more at the next tick");
}

/// The TypeScript store orders one millisecond's events by their random suffix: a client that got
/// the burst up to some event and resumes after it never gets the later-stored events whose
/// suffix sorts lower. They are lost, not only reordered.
#[test]
fn a_typescript_burst_cut_midway_loses_the_events_the_store_order_skips() {
    let mut lost_somewhere = false;
    for seen in 1..=8usize {
        let mut s = batch_server(policy("ts-sdk"));
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "batch");
        let out = drive_until(&mut s, at(1));
        let ids: Vec<String> = stored(&out).into_iter().map(|(_, id, _)| id).collect();
        assert_eq!(ids.len(), 8);
        let stamp = |id: &String| id.split('_').nth(1).map(str::to_string);
        assert!(ids.iter().all(|id| stamp(id) == stamp(&ids[0])), "one millisecond: {ids:?}");
        // The client saw the first `seen` events of the burst, then the stream broke.
        s.handle_disconnect(at_ms(1500), POST);
        let _ = drain(&mut s);
        let last = EventId::from(ids[seen - 1].clone());
        let out = resume(&mut s, at_ms(1600), GET, &session, &last);
        let replayed: BTreeSet<String> =
            events(&out, GET).into_iter().filter_map(|e| e.id).map(|id| id.0.to_string()).collect();
        let lost: Vec<&String> = ids[seen..].iter().filter(|id| !replayed.contains(*id)).collect();
        let expected: Vec<&String> = ids[seen..].iter().filter(|id| **id < ids[seen - 1]).collect();
        assert_eq!(lost, expected, "after event {seen}");
        lost_somewhere |= !lost.is_empty();
    }
    assert!(lost_somewhere, "some cut in a burst of eight loses events");
}

#[test]
fn a_store_that_goes_quiet_after_the_replay_sends_no_live_event_and_no_result() {
    for (rule, live) in [(crate::config::AfterReplay::Live, true), (crate::config::AfterReplay::Quiet, false)] {
        let mut s = server(ServerPolicy { after_replay: rule, ..policy("reference") });
        let session = init(&mut s, at(0));
        let out = call(&mut s, at(0), POST, &session, "chatty");
        let priming = events(&out, POST)[0].id.clone().expect("primed");
        let _ = drive_until(&mut s, at(3));
        s.handle_disconnect(at(3), POST);
        let _ = drain(&mut s);
        let out = resume(&mut s, at(5), GET, &session, &priming);
        // The three events missed are replayed either way.
        let replayed: Vec<SseEvent> = events(&out, GET).into_iter().filter(|e| e.data.is_some()).collect();
        assert_eq!(replayed.len(), 3, "{rule:?}");
        let out = drive_until(&mut s, at(241));
        let later = events(&out, GET);
        let result = later.iter().any(|e| matches!(e.data, Some(ServerMessage::ToolResult { .. })));
        assert_eq!(result, live, "{rule:?}");
        assert_eq!(later.iter().any(|e| matches!(e.data, Some(ServerMessage::Progress { .. }))), live, "{rule:?}");
        // Quiet: the connection is not ended either; the client waits on it.
        assert_eq!(closes(&out, GET).is_empty(), !live, "{rule:?}");
    }
}

// -----------------------------------------------------------------------------------------
// The era gate (`era_serve.rs`)
// -----------------------------------------------------------------------------------------

fn modern_call(request: u64, tool: &str, key: u32) -> Request {
    let call = ToolCall { tool: tool.into(), key: CallKey(key), idempotency_key: None, tasks: false };
    Request::modern_post(ClientMessage::CallTool { id: RequestId(request), call })
}

#[test]
fn a_dual_era_server_serves_a_modern_call_with_no_session_and_ignores_a_stale_session_header() {
    let mut s = server(policy("rmcp"));
    let session = init(&mut s, at(0));
    let mut stale = modern_call(5, "quick", 1);
    stale.session = Some(session.clone());
    s.handle_request(at(1), POST, stale);
    let out = drain(&mut s);
    assert_eq!(head_status(&out, POST), Status::OK);
    let served = StepKind::EraServed {
        conn: POST,
        request: RequestId(5),
        era: crate::era::Era::Modern,
        session: None,
        ignored: vec![crate::era::IgnoredHeader::McpSessionId],
    };
    assert_eq!(records(&out)[0], served);
    assert_eq!(side_effect_sessions(&out), vec![(NO_SESSION.clone(), RequestId(5))], "not in the legacy session");
    assert!(frames(&out, POST).iter().all(|f| !matches!(f, Frame::Head(h) if h.session.is_some())), "never echoed");
    assert_eq!(s.live_sessions(), vec![session], "the modern context is no session");
    assert!(s.is_busy());
    let out = drive_until(&mut s, at(3));
    assert_eq!(tool_ends(&out), vec![ToolEnd::Completed]);
}

#[test]
fn the_era_gate_answers_the_specs_400s_and_405s_and_lets_legacy_traffic_through() {
    let mut s = server(policy("py-sdk"));
    // A modern GET: no GET stream in the modern era.
    let mut get = Request::get(None, None);
    get.protocol_version = Some("2026-07-28".into());
    s.handle_request(at(0), GET, get);
    // Header and _meta disagree.
    let mut mismatch = modern_call(2, "quick", 1);
    mismatch.protocol_version = Some("2025-11-25".into());
    s.handle_request(at(0), POST, mismatch);
    // A version nobody knows.
    let mut unknown = modern_call(3, "quick", 1);
    unknown.protocol_version = Some("1900-01-01".into());
    unknown.meta_version = Some("1900-01-01".into());
    s.handle_request(at(0), OTHER, unknown);
    let out = drain(&mut s);
    let error = |conn| {
        frames(&out, conn).into_iter().find_map(|f| match f {
            Frame::Head(h) => Some((h.status, h.error.map(|e| e.code))),
            _ => None,
        })
    };
    assert_eq!(error(GET), Some((Status::METHOD_NOT_ALLOWED, Some(ErrorCode::Other))));
    assert_eq!(error(POST), Some((Status::BAD_REQUEST, Some(ErrorCode::HeaderMismatch))));
    assert_eq!(error(OTHER), Some((Status::BAD_REQUEST, Some(ErrorCode::UnsupportedProtocolVersion))));
    assert_eq!(side_effects(&out), 0);
    // The legacy handshake and its calls pass the gate untouched: nothing era-specific recorded.
    let session = init(&mut s, at(1));
    let out = call(&mut s, at(1), POST, &session, "quick");
    assert!(records(&out).iter().all(|r| !matches!(r, StepKind::EraServed { .. } | StepKind::EraRefused { .. })));
    assert_eq!(side_effect_sessions(&out), vec![(session, RequestId(2))]);
}

#[test]
fn a_legacy_only_server_answers_a_modern_request_with_its_own_400_and_discover_is_modern_only() {
    let mut s = server(policy("ts-sdk"));
    s.handle_request(at(0), POST, Request::modern_post(ClientMessage::Discover { id: RequestId(1) }));
    let out = drain(&mut s);
    assert_eq!(records(&out), vec![StepKind::EraRefused { conn: POST, refusal: crate::era::Refusal::LegacyNoSession }]);
    let mut s = server(policy("rmcp"));
    s.handle_request(at(0), POST, Request::modern_post(ClientMessage::Discover { id: RequestId(1) }));
    let out = drain(&mut s);
    assert!(frames(&out, POST).contains(&Frame::Json(ServerMessage::DiscoverResult { request: RequestId(1) })));
}

#[test]
fn a_crash_loses_the_modern_tools_too_and_a_restart_takes_the_new_builds_eras() {
    let mut s = server(policy("py-sdk"));
    s.handle_request(at(0), POST, modern_call(2, "quick", 1));
    let _ = drain(&mut s);
    s.crash(at(0));
    let out = drain(&mut s);
    assert_eq!(tool_ends(&out), vec![ToolEnd::Lost]);
    assert!(closes(&out, POST).contains(&true), "its connection reset");
    assert!(!s.is_busy());
    let upgrade = ServerPolicy {
        eras: Some(vec![crate::era::Era::Legacy]),
        eras_after_restart: Some(vec![crate::era::Era::Legacy, crate::era::Era::Modern]),
        ..policy("py-sdk")
    };
    assert_eq!(incarnation_policy(&upgrade, 0).eras, Some(vec![crate::era::Era::Legacy]));
    assert_eq!(incarnation_policy(&upgrade, 2).eras, upgrade.eras_after_restart);
    assert_eq!(incarnation_policy(&policy("py-sdk"), 3), policy("py-sdk"), "unset: the same build");
}

/// `on_failed_write`: a chatty tool's next event fails on a POST stream whose client is gone
/// (`dead_stream = on-write`). Dropping the stream keeps the session (the events stay stored, a
/// later request is served); ending the session forgets it (`SessionEnded { write-failed }`, a 404
/// for its next request) and lets the tool run on with nowhere to send its events.
#[test]
fn a_failed_write_drops_the_stream_or_ends_the_session() {
    for rule in [crate::config::FailedWrite::DropStream, crate::config::FailedWrite::EndSession] {
        let ends = rule == crate::config::FailedWrite::EndSession;
        let mut s =
            server(ServerPolicy { dead_stream: DeadStream::OnWrite, on_failed_write: rule, ..policy("reference") });
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "chatty");
        s.handle_client_gone(at_ms(1500), POST);
        let out = drain(&mut s);
        assert!(closes(&out, POST).is_empty(), "{rule:?}: nothing noticed before a write");
        let out = drive_until(&mut s, at(2));
        assert_eq!(closes(&out, POST), vec![true], "{rule:?}: the write fails and the stream is reset");
        let ended: Vec<SessionEndReason> = records(&out)
            .into_iter()
            .filter_map(|r| match r {
                StepKind::SessionEnded { reason, .. } => Some(reason),
                _ => None,
            })
            .collect();
        assert_eq!(ended, if ends { vec![SessionEndReason::WriteFailed] } else { vec![] }, "{rule:?}");
        assert_eq!(s.live_sessions().is_empty(), ends, "{rule:?}");
        s.handle_request(at(3), GET, Request::get(Some(session.clone()), None));
        let expected = if ends { Status::NOT_FOUND } else { Status::OK };
        assert_eq!(head_status(&drain(&mut s), GET), expected, "{rule:?}");
        // The tool runs on either way: under end-session, orphaned (its events go nowhere).
        assert!(s.is_busy(), "{rule:?}");
        let out = drive_until(&mut s, at(300));
        let completed = records(&out).iter().any(|r| matches!(r, StepKind::ToolEnded { end: ToolEnd::Completed, .. }));
        assert!(completed || ends, "{rule:?}: the tool completes in its live session");
    }
}

/// `on_failed_write = end-session` also holds for a JSON answer whose client is gone, and never
/// for a server without sessions (it has none to forget).
#[test]
fn a_failed_json_answer_ends_the_session_but_a_sessionless_server_keeps_serving() {
    let json = ServerPolicy {
        dead_stream: DeadStream::OnWrite,
        on_failed_write: crate::config::FailedWrite::EndSession,
        response_mode: crate::config::ResponseMode::Json,
        ..policy("reference")
    };
    let mut s = server(json.clone());
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "quick");
    s.handle_client_gone(at(1), POST);
    let _ = drain(&mut s);
    let out = drive_until(&mut s, at(3));
    assert_eq!(closes(&out, POST), vec![true]);
    assert!(records(&out)
        .iter()
        .any(|r| matches!(r, StepKind::SessionEnded { reason: SessionEndReason::WriteFailed, .. })));

    let mut s = server(ServerPolicy { sessions: false, ..json });
    s.policy.response_mode = crate::config::ResponseMode::Sse;
    let _ = call(&mut s, at(0), POST, &NO_SESSION, "chatty");
    s.handle_client_gone(at_ms(1500), POST);
    let _ = drain(&mut s);
    let out = drive_until(&mut s, at(2));
    assert_eq!(closes(&out, POST), vec![true]);
    assert!(!records(&out).iter().any(|r| matches!(r, StepKind::SessionEnded { .. })));
    let out = call(&mut s, at(3), OTHER, &NO_SESSION, "quick");
    assert_eq!(head_status(&out, OTHER), Status::OK, "the implicit context still serves");
}

/// `on_protocol_error`: a POST whose body does not parse is answered 400 and changes nothing, or
/// the process exits on it: recorded, every session and running tool lost, every connection
/// reset, and `Exit` asked of the actor; the dead process does nothing more.
#[test]
fn a_request_that_does_not_parse_is_answered_400_or_exits_the_process() {
    let malformed = |session: &SessionId| Request { body: None, ..call_request(session, 3, "quick", 8) };
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "pay");
    s.handle_request(at(1), OTHER, malformed(&session));
    let out = drain(&mut s);
    assert_eq!(head_status(&out, OTHER), Status::BAD_REQUEST);
    assert!(!out.contains(&ServerOutput::Exit));
    assert_eq!(s.live_sessions(), vec![session.clone()]);
    assert!(s.is_busy());

    let restart = crate::config::ProtocolErrorReaction::RestartProcess;
    let mut s = server(ServerPolicy { on_protocol_error: restart, ..policy("reference") });
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "pay");
    s.handle_request(at(1), OTHER, malformed(&session));
    let out = drain(&mut s);
    assert!(frames(&out, OTHER).is_empty(), "no answer: the process is gone");
    assert_eq!(closes(&out, POST), vec![true], "its streams are reset");
    assert_eq!(out.last(), Some(&ServerOutput::Exit));
    let steps = records(&out);
    assert_eq!(
        steps[0],
        StepKind::ProcessExit { conn: OTHER, session: Some(session.clone()), cause: Default::default() }
    );
    assert!(steps.iter().any(|r| matches!(r, StepKind::ToolEnded { end: ToolEnd::Lost, .. })));
    assert!(steps.iter().any(|r| matches!(r, StepKind::SessionEnded { reason: SessionEndReason::ProcessExit, .. })));
    assert!(s.live_sessions().is_empty() && !s.is_busy());
    s.handle_request(at(2), GET, Request::get(Some(session), None));
    assert!(drain(&mut s).is_empty(), "a dead process answers nothing");
}

#[test]
fn a_server_stating_no_eras_still_answers_a_request_naming_the_modern_version_by_the_era_rules() {
    // A legacy server of before the revision (no `eras`): the legacy-only 400, recorded.
    let mut s = server(ServerPolicy { eras: None, ..policy("ts-sdk") });
    s.handle_request(at(0), POST, modern_call(1, "quick", 1));
    let out = drain(&mut s);
    assert_eq!(records(&out), vec![StepKind::EraRefused { conn: POST, refusal: crate::era::Refusal::LegacyNoSession }]);
    assert_eq!(head_status(&out, POST), Status::BAD_REQUEST);
    assert_eq!(side_effects(&out), 0);
    // A server without sessions stating no eras serves the modern era: served as modern.
    let mut s = server(sessionless());
    s.handle_request(at(0), POST, modern_call(2, "quick", 1));
    let out = drain(&mut s);
    let served = StepKind::EraServed {
        conn: POST,
        request: RequestId(2),
        era: crate::era::Era::Modern,
        session: None,
        ignored: Vec::new(),
    };
    assert_eq!(records(&out)[0], served);
}

#[test]
fn a_progress_tick_that_falls_on_the_tools_end_is_swallowed_by_its_result() {
    // 3 s of work with progress every second: ticks at 1 s and 2 s; the one at 3 s is the result.
    let mut s = server_with(policy("reference"), vec![tool("ticker", 3, Some(Duration::from_secs(1)), false)]);
    let session = init(&mut s, at(0));
    let mut out = call(&mut s, at(0), POST, &session, "ticker");
    out.extend(drive_until(&mut s, at(10)));
    let sent: Vec<Option<ServerMessage>> =
        events(&out, POST).into_iter().filter(|e| !e.is_priming()).map(|e| e.data).collect();
    let result = ServerMessage::ToolResult { request: RequestId(2), call: CallKey(7) };
    assert_eq!(sent, vec![progress(1), progress(2), Some(result)]);
    assert_eq!(tool_ends(&out), vec![ToolEnd::Completed]);
}

#[test]
fn an_operator_delete_ends_the_session_as_a_delete_would_and_answers_nobody() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(1), POST, &session, "marathon");
    assert!(s.operator_delete(at(2), &session));
    let out = drain(&mut s);
    assert_eq!(session_ends(&out), vec![SessionEndReason::Deleted]);
    assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled], "the reference server cancels on DELETE");
    assert!(frames(&out, POST).iter().all(|f| !matches!(f, Frame::Head(_))), "nobody is answered");
    assert!(s.live_sessions().is_empty());
    // The client learns of it from its next request's 404; a second delete finds nothing.
    s.handle_request(at(3), OTHER, call_request(&session, 3, "quick", 8));
    assert_eq!(head_status(&drain(&mut s), OTHER), Status::NOT_FOUND);
    assert!(!s.operator_delete(at(4), &session));
    assert!(drain(&mut s).is_empty());
}

#[test]
fn a_disconnect_cancellation_the_server_ignores_is_recorded_and_the_tool_runs_on() {
    let mut s = server(ServerPolicy { disconnect_cancel_ignored: true, ..sessionless() });
    s.handle_request(at(0), POST, sessionless_call(2, "quick", 7));
    let _ = drain(&mut s);
    s.handle_disconnect(at(1), POST);
    let ignored = StepKind::CancelIgnored { session: NO_SESSION.clone(), request: RequestId(2), call: CallKey(7) };
    assert_eq!(records(&drain(&mut s)), vec![ignored]);
    assert_eq!(tool_ends(&drive_until(&mut s, at(2))), vec![ToolEnd::Completed]);
}

/// Two clients' requests numbered 2 on a server without sessions, and one client's cancel of
/// its request 2: served apart (the SDKs' stateless modes) the cancel finds nothing and both
/// tools run on; with one in-flight map for every client it cancels both, the other client's too.
#[test]
fn a_cancel_on_a_server_without_sessions_ends_nothing_unless_one_map_serves_every_client() {
    let run = |rule| {
        let mut s = server(ServerPolicy { sessionless_cancel: rule, ..sessionless() });
        s.handle_request(at(0), POST, sessionless_call(2, "marathon", 7));
        s.handle_request(at(0), OTHER, sessionless_call(2, "marathon", 8));
        let _ = drain(&mut s);
        s.handle_request(at(1), GET, Request::post(None, ClientMessage::Cancelled { request: RequestId(2) }));
        let out = drain(&mut s);
        assert_eq!(head_status(&out, GET), Status::ACCEPTED);
        tool_ends(&out)
    };
    assert_eq!(run(crate::config::SessionlessCancel::Ignore), vec![]);
    assert_eq!(run(crate::config::SessionlessCancel::ByRequestId), vec![ToolEnd::Cancelled, ToolEnd::Cancelled]);
}

#[test]
fn a_server_answering_unknown_sessions_with_a_json_rpc_error_still_serves_a_live_one() {
    let p = ServerPolicy { unknown_session: crate::config::UnknownSession::RpcError200, ..policy("reference") };
    let mut s = server(p);
    let session = init(&mut s, at(0));
    let out = call(&mut s, at(1), POST, &session, "quick");
    assert!(records(&out).iter().all(|r| !matches!(r, StepKind::Rejected { .. })), "{out:?}");
    assert_eq!(side_effect_sessions(&out), vec![(session, RequestId(2))]);
    assert_eq!(tool_ends(&drive_until(&mut s, at(3))), vec![ToolEnd::Completed]);
}

#[test]
fn a_cancelled_notification_stops_only_the_request_it_names() {
    let mut s = server(policy("reference"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "marathon");
    s.handle_request(at(0), OTHER, call_request(&session, 3, "pay", 8));
    let _ = drain(&mut s);
    s.handle_request(at(1), GET, Request::post(Some(session), ClientMessage::Cancelled { request: RequestId(3) }));
    let out = drain(&mut s);
    let ended: Vec<(CallKey, ToolEnd)> = records(&out)
        .into_iter()
        .filter_map(|r| match r {
            StepKind::ToolEnded { call, end, .. } => Some((call, end)),
            _ => None,
        })
        .collect();
    assert_eq!(ended, vec![(CallKey(8), ToolEnd::Cancelled)]);
    assert!(s.is_busy(), "the marathon runs on");
}

#[test]
fn a_dual_era_servers_modern_stream_events_carry_no_id_to_resume_from() {
    let mut s = server(policy("rmcp"));
    s.handle_request(at(0), POST, modern_call(5, "chatty", 1));
    let mut out = drain(&mut s);
    out.extend(drive_until(&mut s, at(3)));
    let sent = events(&out, POST);
    assert!(!sent.is_empty(), "{out:?}");
    assert!(sent.iter().all(|e| e.id.is_none()), "{sent:?}");
}

#[test]
fn an_opaque_event_id_is_looked_up_only_in_the_resuming_sessions_own_store() {
    // Python's opaque ids (found by lookup) with a store of each session's own: a session resumes
    // its own stream, and another session naming the same id learns nothing of it.
    let mut s = server(ServerPolicy { store: crate::config::StoreScope::PerSession, ..policy("py-sdk") });
    let a = init(&mut s, at(0));
    let b = init(&mut s, at(0));
    let mut out = call(&mut s, at(0), POST, &a, "chatty");
    out.extend(drive_until(&mut s, at(3)));
    let issued = ids(&events(&out, POST));
    assert!(issued.len() >= 3, "{issued:?}");
    s.handle_disconnect(at(3), POST);
    let _ = drain(&mut s);
    let first = EventId::from(issued[0].as_str());
    let own = resume(&mut s, at(4), GET, &a, &first);
    assert!(
        matches!(resume_outcome(&own), (Some(_), ResumeOutcome::Replayed { replayed }) if replayed >= 2),
        "{own:?}"
    );
    assert_eq!(ids(&events(&own, GET))[..2], issued[1..3]);
    let other = resume(&mut s, at(4), OTHER, &b, &first);
    assert_eq!(resume_outcome(&other), (None, ResumeOutcome::Empty { open: false }));
    assert_eq!(frames(&other, OTHER), vec![Frame::Head(ResponseHead::event_stream()), Frame::End]);
}

#[test]
fn deleting_one_session_leaves_another_sessions_tool_running() {
    let mut s = server(policy("reference"));
    let a = init(&mut s, at(0));
    let b = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &a, "pay");
    let _ = call(&mut s, at(0), GET, &b, "pay");
    s.handle_request(at(10), OTHER, Request::delete(a));
    let out = drain(&mut s);
    assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled], "only A's tool");
    assert!(frames(&out, GET).is_empty(), "B's stream goes on: {out:?}");
    let out = drive_until(&mut s, at(300));
    assert_eq!(tool_ends(&out), vec![ToolEnd::Completed], "B's tool runs to its end");
}

#[test]
fn a_zero_interval_is_no_interval_a_tool_with_it_sends_no_progress() {
    let zero = ToolSpec { event_interval: Some(Duration::ZERO), ..tool("zero", 2, None, true) };
    let mut s = Server::new(policy("reference"), vec![zero], 0, 42);
    let _ = drain(&mut s);
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "zero");
    assert_eq!(s.poll_timeout(), Some(at(2)), "nothing is due before the tool's end");
    let out = drive_until(&mut s, at(2));
    assert_eq!(tool_ends(&out), vec![ToolEnd::Completed]);
    let progress = events(&out, POST).iter().filter(|e| matches!(e.data, Some(ServerMessage::Progress { .. }))).count();
    assert_eq!(progress, 0, "{out:?}");
}

// ---------------------------------------------------------------------------------------------
// The Go SDK's answers: 400 to an id it cannot replay after, 409 to a resume of a claimed
// stream, 400 to a resume without a store, and an idle timer that only POSTs pause
// ---------------------------------------------------------------------------------------------

#[test]
fn go_sdk_refuses_an_id_it_cannot_replay_after_with_a_400_that_names_no_head() {
    let mut s = server(policy("go-sdk"));
    let session = init(&mut s, at(0));
    let out = resume(&mut s, at(1), GET, &session, &EventId::from("nope-3"));
    assert_eq!(head_status(&out, GET), Status::BAD_REQUEST);
    assert_eq!(resume_outcome(&out).1, ResumeOutcome::Rejected { status: Status::BAD_REQUEST, head: None });
    // Evicted: the same 400, where the reference server names the head in a 410.
    let bounded = |name: &str| ServerPolicy {
        retention: Retention { max_events: Some(100), ..policy(name).retention },
        ..policy(name)
    };
    let (_, _, out) = evicted_resume(bounded("go-sdk"));
    assert_eq!(head_status(&out, GET), Status::BAD_REQUEST);
    assert_eq!(resume_outcome(&out).1, ResumeOutcome::Rejected { status: Status::BAD_REQUEST, head: None });
    let (_, _, out) = evicted_resume(bounded("reference"));
    assert_eq!(head_status(&out, GET), Status::GONE);
}

#[test]
fn go_sdk_refuses_a_resume_of_a_stream_still_claimed_by_its_connection_with_409() {
    let mut s = server(policy("go-sdk"));
    let session = init(&mut s, at(0));
    let out = call(&mut s, at(0), POST, &session, "chatty");
    let priming = events(&out, POST)[0].id.clone().expect("primed");
    let _ = drive_until(&mut s, at(2));
    let out = resume(&mut s, at(2), GET, &session, &priming);
    assert_eq!(head_status(&out, GET), Status::CONFLICT);
    assert!(events(&out, GET).is_empty(), "refused before any replay");
    assert!(closes(&out, POST).is_empty(), "the old connection keeps the stream");
    // The step names the connection that kept it, and that the store still held the events.
    let claimed = records(&out).into_iter().find_map(|r| match r {
        StepKind::Resume { held, claimed_by, .. } => Some((held, claimed_by)),
        _ => None,
    });
    assert_eq!(claimed, Some((true, Some(POST))));
    let live = drive_until(&mut s, at(3));
    assert_eq!(events(&live, POST)[0].data, progress(3));
    // take-over: the same resume replays and takes the stream.
    let mut s = server(ServerPolicy { resume_while_attached: ResumeWhileAttached::TakeOver, ..policy("go-sdk") });
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "chatty");
    let _ = drive_until(&mut s, at(2));
    let out = resume(&mut s, at(2), GET, &session, &priming);
    assert_eq!(head_status(&out, GET), Status::OK);
    assert_eq!(closes(&out, POST), vec![false]);
    // Once its connection is gone the stream is resumed as usual.
    let mut s = server(policy("go-sdk"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "chatty");
    s.handle_disconnect(at_ms(1_500), POST);
    let _ = drive_until(&mut s, at(2));
    let out = resume(&mut s, at(2), GET, &session, &priming);
    assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 2 });
    assert!(records(&out).iter().all(|r| !matches!(r, StepKind::Resume { claimed_by: Some(_), .. })));
}

#[test]
fn a_resume_without_an_event_store_gets_400_from_the_go_sdk() {
    for (rule, status) in [(NoStoreResume::Error400, Status::BAD_REQUEST), (NoStoreResume::Error500, Status::INTERNAL)]
    {
        let p = ServerPolicy { event_store: EventStoreMode::NoStore, resume_without_store: rule, ..policy("go-sdk") };
        let mut s = server(p);
        let session = init(&mut s, at(0));
        let out = resume(&mut s, at(1), GET, &session, &EventId::from("x-1"));
        assert_eq!(head_status(&out, GET), status, "{rule:?}");
    }
}

#[test]
fn no_open_post_lets_a_session_with_an_open_get_expire_but_holds_it_while_a_post_is_open() {
    for (rule, expires_with_get_open) in [(IdleRule::NoOpenPost, true), (IdleRule::NoOpenRequest, false)] {
        let mut s = server(ServerPolicy { idle_rule: rule, ..idle_policy("go-sdk") });
        let session = init(&mut s, at(0));
        s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
        let out = drive_until(&mut s, at(61));
        assert_eq!(session_ends(&out).is_empty(), !expires_with_get_open, "{rule:?}");
    }
    let mut s = server(idle_policy("go-sdk"));
    let session = init(&mut s, at(0));
    let _ = call(&mut s, at(0), POST, &session, "marathon");
    assert!(session_ends(&drive_until(&mut s, at(100))).is_empty(), "an open POST holds the session");
    s.handle_disconnect(at(100), POST);
    assert_eq!(session_ends(&drive_until(&mut s, at(160))), vec![SessionEndReason::IdleExpired]);
}
