//! The server driven directly with hand-written requests.

use super::*;
use crate::config::Unhonourable;
use crate::config::{ReplayRule, Retention};
use crate::http::SseEvent;
use crate::http::ToolCall;
use crate::ids::{CallKey, EventId, RequestId};
use crate::profiles;
use crate::trace::ResumeOutcome;

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

fn server(policy: ServerPolicy) -> Server {
    let mut s = Server::new(policy, tools(), 0, 42);
    assert_eq!(drain(&mut s), vec![ServerOutput::Record(StepKind::ServerStart { epoch: 0 })]);
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
    let call = ToolCall { tool: tool.into(), key: CallKey(key), idempotency_key: None };
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
    events.iter().map(|e| e.id.as_ref().expect("every event has an id").0.clone()).collect()
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
            StepKind::EventStored { session, id, message, .. } => Some((session, id.0, message)),
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
    // A POST stream id of the same scheme resumes fine.
    let out = call(&mut s, at(5), POST, &session, "chatty");
    let priming = events(&out, POST)[0].id.clone().expect("an id");
    s.handle_disconnect(at(5), POST);
    let _ = drive_until(&mut s, at(8));
    let out = resume(&mut s, at(8), GET, &session, &priming);
    assert_eq!(resume_outcome(&out), (Some(StreamNo(1)), ResumeOutcome::Replayed { replayed: 3 }));
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
        stored(&run).into_iter().map(|(_, id, _)| id).filter(|id| id.as_str() > priming.0.as_str()).collect();
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
            StepKind::SessionEnded { session: session.clone(), reason: SessionEndReason::ServerRestart },
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
        let call = ToolCall { tool: "quick".into(), key: CallKey(7), idempotency_key: Some("k7".into()) };
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
        Frame::Json(ServerMessage::Error { request: RequestId(2), message: "unknown tool nope".into() })
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
    out.extend(resume(&mut s, at(40), OTHER, &session, &EventId(last)));
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

fn sessionless_call(request: u64, tool: &str, key: u32) -> Request {
    let call = ToolCall { tool: tool.into(), key: CallKey(key), idempotency_key: None };
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
    let mut s = server(policy("stateless-2026"));
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
    assert_eq!(side_effect_sessions(&out), vec![(NO_SESSION, RequestId(2)), (NO_SESSION, RequestId(3))]);
    assert!(events(&out, POST).is_empty(), "no priming event: there is nothing to resume");
    let out = drive_until(&mut s, at(3));
    assert_eq!(ids(&events(&out, POST)), vec!["0.1-0"], "ids carry the epoch");
    assert_eq!(tool_ends(&out), vec![ToolEnd::Completed, ToolEnd::Completed]);
    assert!(s.live_sessions().is_empty());
}

#[test]
fn a_server_without_sessions_answers_every_get_and_delete_405_and_never_expires() {
    let mut p = policy("stateless-2026");
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
    let mut s = server(policy("stateless-2026"));
    s.handle_request(at(0), POST, sessionless_call(2, "pay", 7));
    let _ = drain(&mut s);
    s.handle_disconnect(at(60), POST);
    let out = drain(&mut s);
    assert_eq!(
        records(&out),
        vec![StepKind::ToolEnded {
            session: NO_SESSION,
            request: RequestId(2),
            call: CallKey(7),
            end: ToolEnd::Cancelled
        }]
    );
    assert!(frames(&out, POST).is_empty(), "nothing is written on the dead connection");
    assert_eq!(s.poll_timeout(), None, "nothing left to run");
    // The client re-issues the call under a new id: the side effect runs a second time.
    s.handle_request(at(61), OTHER, sessionless_call(3, "pay", 7));
    let out = drain(&mut s);
    assert_eq!(side_effect_sessions(&out), vec![(NO_SESSION, RequestId(3))]);
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
    assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
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
        let mut s = Server::new(policy("stateless-2026"), tools(), epoch, 42);
        s.handle_request(at(0), POST, sessionless_call(2, "quick", 1));
        let mut out = drain(&mut s);
        out.extend(drive_until(&mut s, at(2)));
        stored(&out).into_iter().map(|(_, id, _)| id).collect::<Vec<_>>()
    };
    assert_eq!((run(0), run(1)), (vec!["0.1-0".to_string()], vec!["1.1-0".to_string()]));
    let mut s = Server::new(policy("stateless-2026"), tools(), 0, 42);
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
