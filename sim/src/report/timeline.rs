//! A trace as a readable timeline: one line a step, simulated time first.

use mcpsim_model::decision::NextAction;
use mcpsim_model::http::Body;
use mcpsim_model::time::format_micros;
use mcpsim_model::trace::{ResumeOutcome, RetentionBound, Step, StepKind, Trace};

/// One line describing a step: `  1m01.234s  lb      idle cut c2 after 60.000s`.
pub fn line(step: &Step) -> String {
    line_with_width(step, ACTOR_WIDTH)
}

/// Room for the actor column: the longest actor name.
const ACTOR_WIDTH: usize = 6;

fn line_with_width(step: &Step, width: usize) -> String {
    format!("{:>11}  {:<width$}  {}", format_micros(step.t), actor(step), describe(&step.kind))
}

/// Who did a step: the actor, with the client's index in a multi-client trace (`client1`, `app0`)
/// and the replica's in a multi-replica one (`server#2`, as the balancer's routing names it).
pub(crate) fn actor(step: &Step) -> String {
    match (step.client, step.replica) {
        (Some(client), _) => format!("{}{client}", step.actor),
        (None, Some(replica)) => format!("{}#{replica}", step.actor),
        (None, None) => step.actor.to_string(),
    }
}

/// The whole timeline of a trace. The actor column widens for client indexes, if there are any.
pub fn render(trace: &Trace) -> String {
    let width = trace.steps.iter().map(|s| actor(s).len()).max().unwrap_or(0).max(ACTOR_WIDTH);
    let mut out = String::new();
    for step in &trace.steps {
        out.push_str(&line_with_width(step, width));
        out.push('\n');
    }
    out
}

/// `hop1: ` when a chain step names its hop (a chain of several intermediaries), else nothing.
pub(crate) fn at_hop(hop: Option<u32>) -> String {
    hop.map(|h| format!("hop{h}: ")).unwrap_or_default()
}

/// What a step did, in words.
pub fn describe(kind: &StepKind) -> String {
    use StepKind::*;
    match kind {
        Send { conn, request } => format!("{conn} → {request}"),
        Response { conn, head } => {
            let body = match head.body {
                Body::Empty => "",
                Body::Json => " json",
                Body::EventStream => " event-stream",
            };
            let mut s = format!("{conn} ← {}{body}", head.status);
            if let Some(sess) = &head.session {
                s.push_str(&format!(" session={sess}"));
            }
            if let Some(err) = &head.error {
                s.push_str(&format!(" {:?}", err.code));
                if let Some(h) = &err.head_event_id {
                    s.push_str(&format!(" head={h}"));
                }
            }
            s
        }
        Event { conn, event } => {
            let id = event.id.as_ref().map(|i| format!(" id={i}")).unwrap_or_default();
            let retry = event.retry_ms.map(|r| format!(" retry={r}ms")).unwrap_or_default();
            match &event.data {
                Some(m) => format!("{conn} ← event{id}{retry}: {m}"),
                None if event.is_priming() => format!("{conn} ← priming event{id}{retry}"),
                None => format!("{conn} ← event: close{id}"),
            }
        }
        Comment { conn } => format!("{conn} ← : keepalive"),
        Json { conn, message } => format!("{conn} ← json: {message}"),
        ConnEnd { conn, end } => format!("{conn} ended: {end}"),
        Decision { call, outcome, action, error } => {
            let who = call.map(|c| format!("{c}: ")).unwrap_or_else(|| "standalone stream: ".into());
            let outcome = outcome.map(|o| format!("{o:?} → ")).unwrap_or_default();
            match (action, error) {
                (_, Some(e)) => format!("{who}decision refused: {e}"),
                (Some(a), None) => format!("{who}{outcome}{}", describe_action(a)),
                (None, None) => format!("{who}{outcome}no action"),
            }
        }
        InitializeBackoff { attempt, delay_us } => {
            format!("initialize: attempt {} in {}", attempt + 1, format_micros(*delay_us))
        }
        Backoff { call, attempt, delay_us } => {
            let who = call.map(|c| c.to_string()).unwrap_or_else(|| "standalone stream".into());
            format!("{who}: reconnect attempt {attempt} in {}", format_micros(*delay_us))
        }
        StreamGivenUp { call } => format!("{call}: stream given up, no more reconnects"),
        ClientStart { restored, .. } => {
            if *restored {
                "client process started with durable state".into()
            } else {
                "client process started".into()
            }
        }
        ConnReused { conn, idle_us } => {
            format!("{conn} sent on a kept-alive connection, idle {}", format_micros(*idle_us))
        }
        HttpResent { conn, written: true } => {
            format!("{conn}: the kept-alive connection ended before any answer; the HTTP library sends it again")
        }
        HttpResent { conn, written: false } => {
            format!("{conn}: the kept-alive connection was closed as it was sent; the HTTP library sends it again")
        }
        ClientTimedOut { conn, silent_us, head: true } => {
            format!("gave {conn} up: no response head after {} (its http.headers_timeout)", format_micros(*silent_us))
        }
        ClientTimedOut { conn, silent_us, head: false } => {
            format!("gave {conn} up: no byte of its body for {} (its http.body_timeout)", format_micros(*silent_us))
        }
        LbIdleCut { conn, idle_us, hop } => {
            format!("{}idle cut {conn} after {}", at_hop(*hop), format_micros(*idle_us))
        }
        LbUpstreamReused { conn, replica, idle_us } => {
            format!("{conn} → server#{replica} on a kept-alive upstream connection, idle {}", format_micros(*idle_us))
        }
        LbResent { conn, reused } => {
            let which = if *reused { "kept-alive" } else { "fresh" };
            format!(
                "{conn}: the {which} upstream connection ended before any answer; the balancer sends the request again"
            )
        }
        KeepAliveClosed { idle_us } => {
            format!("server closes a kept-alive connection idle {}", format_micros(*idle_us))
        }
        ServerClosedStream { conn, session, stream, rule, after_us } => {
            let stream = stream.map(|s| format!(" {s}")).unwrap_or_default();
            format!(
                "server closes {conn} (session {session}{stream}) on its own timer: {} = {}",
                rule.setting(),
                format_micros(*after_us)
            )
        }
        EventDropped { session, stream, call, answer } => {
            let of = call.map(|c| format!(" of {c}")).unwrap_or_default();
            let what = if *answer { "the answer" } else { "an event" };
            format!(
                "server DROPPED {what}{of} ({session} {stream}): it had closed the stream itself and, with no \
                 client attached, stored it nowhere"
            )
        }
        LbLifetimeCut { conn, age_us, hop } => {
            format!("{}lifetime cut {conn} after {}", at_hop(*hop), format_micros(*age_us))
        }
        LbUpstreamKept { conn, hop } => format!("{}{conn}: client side only, the upstream stays open", at_hop(*hop)),
        LbRouted { conn, replica, session, hop } => {
            let s = session.as_ref().map(|s| format!(" (session {s})")).unwrap_or_default();
            format!("{}{conn} → server#{replica}{s}", at_hop(*hop))
        }
        LbAnswered { conn, status, hop } if status.0 < 500 => {
            let who = hop.map_or("the balancer".to_string(), |h| format!("hop{h}"));
            format!("{conn} answered {status} by {who} itself, passing nothing on (a route reload or a deploy of the proxy)")
        }
        LbAnswered { conn, status, hop: None } => {
            format!("{conn} answered {status} by the balancer itself (no replica reachable, a held response cut, or a kept-alive upstream connection closed under the request)")
        }
        LbAnswered { conn, status, hop: Some(h) } => {
            format!("hop{h}: {conn} answered {status} by the hop itself (upstream unreachable, slow or cut)")
        }
        LbTimedOut { conn, waited_us, hop } => {
            format!(
                "{}first-byte timeout on {conn}: no response head after {}",
                at_hop(*hop),
                format_micros(*waited_us)
            )
        }
        LbGaveUp { conn } => {
            format!("{conn} given up: what the balancer wrote to the client went unacknowledged (TCP retransmissions)")
        }
        LbHeaderDropped { conn, header, hop } => {
            format!("{}dropped {} from {conn}'s request", at_hop(Some(*hop)), header.wire_name())
        }
        LbResponseHeaderDropped { conn, header, hop } => {
            format!("{}dropped {} from the response on {conn}", at_hop(Some(*hop)), header.wire_name())
        }
        LbFlushed { conn, frames, held_us, hop } => {
            format!(
                "{}released {frames} buffered frame(s) of {conn}, held up to {}",
                at_hop(*hop),
                format_micros(*held_us)
            )
        }
        LbHolding { conn, frames, held_us, hop } => {
            format!(
                "{}still holds {frames} frame(s) of {conn} at the end, the first for {}",
                at_hop(*hop),
                format_micros(*held_us)
            )
        }
        LbDiscarded { conn, frames, held_us, hop } => {
            format!(
                "{}dropped {frames} held frame(s) of {conn} with the connection, the first held for {}",
                at_hop(*hop),
                format_micros(*held_us)
            )
        }
        SessionCreated { session, client } => format!("session {session} created for {client}"),
        SessionEnded { session, reason, idle_ttl_us } => match idle_ttl_us {
            Some(ttl) => format!("session {session} ended ({reason:?}, idle TTL {})", format_micros(*ttl)),
            None => format!("session {session} ended ({reason:?})"),
        },
        SideEffect { session, request, call, tool, idempotent } => {
            let kind = if *idempotent { "idempotent" } else { "NON-IDEMPOTENT" };
            format!("SIDE EFFECT {tool} {call} ({kind}) for {request} {}", session.placed())
        }
        EventStored { session, stream, seq, id, message, .. } => match message {
            Some(m) => format!("stored {stream}#{seq} id={id} in {session}: {m}"),
            None => format!("stored {stream}#{seq} id={id} in {session}: priming"),
        },
        Resume { session, last_event_id, stream, outcome, held, evicted, claimed_by, finished } => {
            let on = stream.map(|s| format!(" {s}")).unwrap_or_default();
            let on = if *finished { format!("{on} (finished)") } else { on };
            let held = match (held, claimed_by) {
                (true, Some(old)) => format!(" ({old} still claims the stream; its store still held every event after it)"),
                (false, Some(old)) => format!(" ({old} still claims the stream)"),
                (true, None) => " (yet its store still held every event after it)".to_string(),
                (false, None) => String::new(),
            };
            let evicted = evicted.map(|bound| format!(" (its store evicted what followed it; {})", describe_bound(bound)));
            format!(
                "resume{on} of {session} after {last_event_id}: {}{held}{}",
                describe_resume(outcome),
                evicted.unwrap_or_default()
            )
        }
        Rejected { conn, status, session } => {
            format!(
                "{conn} rejected {status}{}",
                session.as_ref().map(|s| format!(" (session {s})")).unwrap_or_default()
            )
        }
        RefusedAfterHead { conn, status, session } => format!(
            "{conn} refused {status} (session {session}) after its 200 head was committed: the client gets an event stream that ends at once"
        ),
        ToolEnded { session, request, call, end } => format!("tool {call} {request} in {session}: {end:?}"),
        CancelIgnored { session, request, call } => format!(
            "tool {call} {request} in {session}: its stream's connection ended, which the server says cancels it, but it runs on"
        ),
        ServerStart { epoch, .. } => format!("server process started (epoch {epoch})"),
        ProcessExit { conn, session, cause } => format!(
            "server process EXITED on {} on {conn}{}",
            match cause {
                mcpsim_model::trace::ExitCause::ProtocolError => "the unparseable request",
                mcpsim_model::trace::ExitCause::SecondGet => "a second standalone GET",
            },
            session.as_ref().map(|s| format!(" (session {s})")).unwrap_or_default()
        ),
        AppCall { call, tool, idempotent } => {
            format!("app calls {tool} {call}{}", if *idempotent { " (idempotent)" } else { "" })
        }
        AppEvent { id, message, .. } => {
            format!("app ← {message}{}", id.as_ref().map(|i| format!(" (id {i})")).unwrap_or_default())
        }
        AppGap { call, after, head, .. } => {
            let who = call.map(|c| format!("{c}: ")).unwrap_or_default();
            let after = after.as_ref().map(|a| a.to_string()).unwrap_or_else(|| "start".into());
            format!("app ← {who}GAP: events after {after} up to {head} may be lost")
        }
        AppResult { call, session, .. } => format!("app ← result of {call} (session {session})"),
        AppError { call, error } => format!("app ← error for {call}: {error}"),
        AppUnknownOutcome { call, reason } => format!("app ← UNKNOWN OUTCOME for {call}: {reason}"),
        AppSessionLost { session } => format!("app ← session {session} lost"),
        AppReinitialize { session } => {
            format!("app starts a new session, leaving {session} to the server (no DELETE)")
        }
        AppStreamLost { session, after } => {
            let after = after.as_ref().map(|a| a.to_string()).unwrap_or_else(|| "start".into());
            format!("app ← STREAM LOST: the standalone stream of {session} was given up after {after}")
        }
        EraServed { conn, request, era, session, ignored } => {
            let mut s = format!("{conn} {request} served {era} ({})", era.version());
            if let Some(sess) = session {
                s.push_str(&format!(" in session {sess}"));
            }
            if !ignored.is_empty() {
                s.push_str(&format!(" ignoring {ignored:?}"));
            }
            s
        }
        EraRefused { conn, refusal } => format!("{conn} refused {} {refusal:?}", refusal.status()),
        EraChosen { era, probed } => format!("era {era}{}", if *probed { " (probed)" } else { "" }),
        TaskCreated { task, call, replica, ttl_us } => {
            let ttl = ttl_us.map(format_micros).unwrap_or_else(|| "unlimited".to_string());
            format!("task {} created for {call} on replica {replica}, ttl {ttl}", task.0)
        }
        TaskIdReceived { task, call } => format!("got task id {} for {call}", task.0),
        TaskIdForgotten { task } => format!("forgot task id {}", task.0),
        TaskInputRequired { task } => format!("task {} asks for input (input_required): its work waits", task.0),
        TaskInputReceived { task } => format!("task {} got its input (tasks/update): its work goes on", task.0),
        TaskEnded { task, status } => format!("task {} ended {status:?}", task.0),
        TaskRecordRemoved { task, work_running, lost } => {
            let how = if *lost { " with the process that held its store" } else { "" };
            format!("task {} record removed{how}{}", task.0, if *work_running { " while its work runs" } else { "" })
        }
        AppTaskOutcome { task, call, status } => format!("app ← task {} of {call}: {status:?}", task.0),
        AppTaskLost { task, call } => format!("app ← task {} of {call} LOST", task.0),
        ChangeEmitted { change, listeners: 0 } => format!("change {change} emitted: NO listen stream open"),
        ChangeEmitted { change, listeners } => format!("change {change} emitted to {listeners} listen stream(s)"),
        ChangeRelayed { change, listeners } => {
            format!("change {change} relayed by the shared bus to {listeners} listen stream(s)")
        }
        ListenOpen { conn, subscription } => format!("{conn}: subscription {subscription} acknowledged"),
        AppChange { change } => format!("app ← change {change}"),
        AppSubscriptionLost { reason } => format!("app ← subscription LOST: {reason}"),
        Fault { fault } => format!("FAULT {fault}"),
        BlackHoled { conns, connect: true, .. } => {
            let what: Vec<String> = conns.iter().map(|c| c.to_string()).collect();
            format!("BLACK HOLE swallowed the connect of {}: its SYNs go unanswered while it lasts", what.join(", "))
        }
        BlackHoled { conns, idle, connect: false } => {
            let mut what: Vec<String> = conns.iter().map(|c| c.to_string()).collect();
            if *idle > 0 {
                what.push(format!("{idle} kept-alive idle"));
            }
            format!("BLACK HOLE caught {}: dead for good, neither end told", what.join(", "))
        }
        Liveness { deadline } => format!("faults over; every call must resolve by {}", format_micros(*deadline)),
        Bounds { max_reconnects_per_hour, max_delivery_delay_us: None } => {
            format!("bounds: at most {max_reconnects_per_hour} reconnects an hour")
        }
        Bounds { max_reconnects_per_hour, max_delivery_delay_us: Some(d) } => format!(
            "bounds: at most {max_reconnects_per_hour} reconnects an hour, events delivered within {}",
            mcpsim_model::time::format_micros(*d)
        ),
        RunEnd { client_session, server_sessions, other_client_sessions } => {
            let held = |s: &Option<mcpsim_model::ids::SessionId>| {
                s.as_ref().map(|s| s.to_string()).unwrap_or_else(|| "none".into())
            };
            let clients = if other_client_sessions.is_empty() {
                format!("client holds {}", held(client_session))
            } else {
                let each = std::iter::once(client_session).chain(other_client_sessions);
                each.enumerate().map(|(i, s)| format!("client{i} holds {}", held(s))).collect::<Vec<_>>().join(", ")
            };
            let live: Vec<String> = server_sessions.iter().map(|s| s.to_string()).collect();
            format!("run ends: {clients}; server sessions [{}]", live.join(", "))
        }
    }
}

/// What a server did with a `Last-Event-ID`: `replayed 3`, `SILENT head, skipped 140`, ….
/// A store's retention bounds, as a `resume` step names them: `retention 100 events, no window`.
fn describe_bound(bound: RetentionBound) -> String {
    let count = bound.max_events.map_or("unbounded".to_string(), |m| format!("{m} events"));
    let window = bound.window_us.map_or("no window".to_string(), |w| format!("a {} window", format_micros(w)));
    format!("retention {count}, {window}")
}

pub(crate) fn describe_resume(outcome: &ResumeOutcome) -> String {
    match outcome {
        ResumeOutcome::Replayed { replayed } => format!("replayed {replayed}"),
        ResumeOutcome::Rejected { status, head } => {
            format!("rejected {status}{}", head.as_ref().map(|h| format!(" head={h}")).unwrap_or_default())
        }
        ResumeOutcome::SilentHead { skipped } => format!("SILENT head, skipped {skipped}"),
        ResumeOutcome::FromOldest { skipped, replayed } => {
            format!("replayed {replayed} from the oldest, SILENTLY skipped {skipped}")
        }
        ResumeOutcome::Empty { open } => format!("empty 200, {}", if *open { "left open" } else { "closed" }),
    }
}

fn describe_action(action: &NextAction) -> String {
    match action {
        NextAction::Resume { last_event_id } => format!("resume after {last_event_id}"),
        NextAction::Reinitialize => "re-initialize".to_string(),
        NextAction::ResumeAtHead { head } => format!("report a gap, resume after {head}"),
        NextAction::Stop => "stop".to_string(),
    }
}

/// True for steps a reader can skip in a compact view (keep-alives, stored events).
pub fn is_noise(kind: &StepKind) -> bool {
    matches!(kind, StepKind::Comment { .. } | StepKind::EventStored { .. })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpsim_model::ids::{CallKey, SessionId};
    use mcpsim_model::trace::Actor;

    fn step(actor: Actor, client: Option<u32>, kind: StepKind) -> Step {
        Step { seq: 0, t: 1_000_000, actor, client, replica: None, conn_client: None, kind }
    }

    #[test]
    fn a_client_step_names_its_client_only_in_a_multi_client_trace() {
        let call = StepKind::AppCall { call: CallKey(1), tool: "crawl".into(), idempotent: true };
        assert_eq!(
            line(&step(Actor::App, None, call.clone())),
            "     1.000s  app     app calls crawl call1 (idempotent)"
        );
        assert_eq!(actor(&step(Actor::App, Some(1), call.clone())), "app1");
        let mut trace = Trace::new(0, serde_json::json!({}));
        trace.steps = vec![
            step(
                Actor::Client,
                Some(1),
                StepKind::ClientStart {
                    restored: false,
                    durable: false,
                    by_class: false,
                    max_attempts: None,
                    on_give_up: None,
                },
            ),
            step(Actor::App, Some(0), call),
        ];
        let text = render(&trace);
        assert!(text.contains("  client1  client process started\n"), "{text}");
        assert!(text.contains("  app0     app calls"), "{text}");
    }

    #[test]
    fn run_end_lists_every_clients_session_when_there_are_several() {
        let (a, b) = (SessionId::from("A"), SessionId::from("B"));
        let one = StepKind::RunEnd {
            client_session: Some(a.clone()),
            server_sessions: vec![a.clone()],
            other_client_sessions: vec![],
        };
        assert_eq!(describe(&one), "run ends: client holds A; server sessions [A]");
        let two = StepKind::RunEnd {
            client_session: None,
            server_sessions: vec![b.clone()],
            other_client_sessions: vec![Some(b)],
        };
        assert_eq!(describe(&two), "run ends: client0 holds none, client1 holds B; server sessions [B]");
    }
}
