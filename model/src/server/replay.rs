//! Resumption: locating a `Last-Event-ID` in the per-stream logs (retention applied), replaying
//! what follows it, and the policy's answer to an id it cannot honour (evicted or unknown).

use super::streams::ConnKind;
use super::Server;
use crate::config::{AfterReplay, ConnAfterResponse, EventIdScheme, ReplayScope, ResumeWhileAttached, Unhonourable};
use crate::http::{ErrorBody, ErrorCode, Frame, ResponseHead, Status};
use crate::ids::{ConnId, EventId, SessionId, StreamNo};
use crate::sse::{stream_hint, LogKey, Position, StoredEvent, StreamHint, StreamLog};
use crate::time::{micros, Instant};
use crate::trace::{ResumeOutcome, RetentionBound, StepKind};

/// Where a `Last-Event-ID` led.
#[derive(Debug)]
pub(super) struct Located {
    pub(super) key: Option<LogKey>,
    /// The resuming session's stream writing into that log.
    pub(super) target: Option<StreamNo>,
    pub(super) position: Position,
}

/// A `GET` with `Last-Event-ID` being answered.
#[derive(Debug)]
pub(super) struct Resumption {
    pub(super) conn: ConnId,
    pub(super) session: SessionId,
    pub(super) last_event_id: EventId,
    pub(super) located: Located,
}

impl Located {
    const NOWHERE: Located = Located { key: None, target: None, position: Position::Unknown };
}

impl Server {
    pub(super) fn resume(&mut self, now: Instant, conn: ConnId, session: &SessionId, last_event_id: EventId) {
        let located = self.locate(now, session, &last_event_id);
        let resumption = Resumption { conn, session: session.clone(), last_event_id, located };
        if let Some(old) = self.claimed_elsewhere(&resumption) {
            // The stream still has its own connection: refused before any replay, the old
            // connection keeps it (`resume_while_attached = reject409`).
            let status = Status::CONFLICT;
            self.record_resume_as(&resumption, ResumeOutcome::Rejected { status, head: None }, Some(old));
            let error = ErrorBody { code: ErrorCode::StreamAlreadyOpen, head_event_id: None };
            return self.respond_status(conn, ResponseHead::error(status, error));
        }
        match resumption.located.position {
            Position::Honourable(seq) => self.replay(now, &resumption, seq),
            Position::Evicted(seq) => self.unhonourable(now, &resumption, self.policy.evicted_id, Some(seq)),
            Position::Unknown => self.unhonourable(now, &resumption, self.policy.unknown_id, None),
        }
    }

    /// Finds the log and position a `Last-Event-ID` names, the way the policy's scheme does.
    pub(super) fn locate(&mut self, now: Instant, session: &SessionId, id: &EventId) -> Located {
        let Some(state) = self.sessions.get(session) else { return Located::NOWHERE };
        let key = match stream_hint(self.policy.event_ids, id) {
            None => None,
            Some(StreamHint::Number(n)) => state.streams.get(&n).map(|s| s.key.clone()),
            Some(StreamHint::Label(label)) => state.streams.values().find(|s| s.label == label).map(|s| s.key.clone()),
            Some(StreamHint::Lookup) => self.store.find_issuer(id, |key| match key {
                LogKey::Session(owner, _) => owner == session,
                LogKey::Shared(_) => true,
            }),
        };
        let Some(key) = key else { return Located::NOWHERE };
        self.store.expire(&key, now);
        let position = self.store.log(&key).map_or(Position::Unknown, |log| log.position(id));
        // In a shared store the log may hold another session's stream under the same key: the
        // resuming session's own stream with that key (its newest) is what gets attached.
        let target = state.streams.iter().rev().find(|(_, s)| s.key == key).map(|(n, _)| *n);
        Located { key: Some(key), target, position }
    }

    /// An honourable resume: replay per the rule, then attach. Under `replay_scope = store` the
    /// replay is drawn from every log of the store the id was found in (the session's own logs,
    /// or every log of a store shared across sessions), not only the id's stream's.
    pub(super) fn replay(&mut self, now: Instant, r: &Resumption, seq: u32) {
        let by_id_order = self.policy.event_ids == EventIdScheme::TsSdk;
        let events = match (&r.located.key, self.resumed_log(r), self.policy.replay_scope) {
            (_, None, _) => Vec::new(),
            (Some(key), Some(_), ReplayScope::Store) => {
                let session = &r.session;
                let in_store = |k: &LogKey| match (k, key) {
                    (LogKey::Session(owner, _), LogKey::Session(..)) => owner == session,
                    (LogKey::Shared(_), LogKey::Shared(_)) => true,
                    _ => false,
                };
                self.store.replay_across(key, &r.last_event_id, self.policy.replay, by_id_order, in_store)
            }
            (_, Some(log), _) if by_id_order => log.replay_by_id_order(&r.last_event_id, self.policy.replay),
            (_, Some(log), _) => log.replay_by_seq(seq, self.policy.replay),
        };
        // Under `replay-and-close` the replay goes out and the connection ends, the stream left
        // with the connection that claims it: the step names that one.
        let claimed_by = self.closed_for_claim(r);
        self.record_resume_as(r, ResumeOutcome::Replayed { replayed: count(&events) }, claimed_by);
        self.open_resumed(now, r, &events);
        self.attach_resumed(now, r);
    }

    /// A `Last-Event-ID` the server cannot honour: evicted when `given_seq` is known, else unknown.
    pub(super) fn unhonourable(&mut self, now: Instant, r: &Resumption, rule: Unhonourable, given_seq: Option<u32>) {
        let log = self.resumed_log(r);
        match rule {
            Unhonourable::Gone410 | Unhonourable::Conflict409 => {
                let status = if rule == Unhonourable::Gone410 { Status::GONE } else { Status::CONFLICT };
                let code =
                    if given_seq.is_some() { ErrorCode::ResumeWindowExceeded } else { ErrorCode::UnknownEventId };
                // The head named is the newest event the server no longer holds: resuming after
                // it replays everything still held, so the reported gap is exactly the loss.
                // (Naming the newest event instead would make the client skip held events, and
                // the tool's result with them when the stream has finished.)
                let head = log.and_then(|log| if given_seq.is_some() { log.last_evicted_id() } else { log.head_id() });
                self.record_resume(r, ResumeOutcome::Rejected { status, head: head.clone() });
                let error = ErrorBody { code, head_event_id: head };
                self.respond_status(r.conn, ResponseHead::error(status, error));
            }
            Unhonourable::SilentHead => {
                let skipped = given_seq.zip(log).map_or(0, |(seq, log)| log.issued_after(seq));
                self.record_resume(r, ResumeOutcome::SilentHead { skipped });
                self.open_resumed(now, r, &[]);
                self.attach_resumed(now, r);
            }
            Unhonourable::FromOldest => {
                let events: Vec<StoredEvent> = log.map(|log| log.retained().cloned().collect()).unwrap_or_default();
                let skipped = given_seq.zip(log).map_or(0, |(seq, log)| log.evicted_after(seq));
                self.record_resume(r, ResumeOutcome::FromOldest { skipped, replayed: count(&events) });
                self.open_resumed(now, r, &events);
                self.attach_resumed(now, r);
            }
            Unhonourable::EmptyClosed => {
                self.record_resume(r, ResumeOutcome::Empty { open: false });
                self.respond_status(r.conn, ResponseHead::event_stream());
            }
            Unhonourable::EmptyOpen => {
                self.record_resume(r, ResumeOutcome::Empty { open: true });
                self.open_resumed(now, r, &[]);
            }
            // A refusal that names no head: the client learns only that this resume failed.
            Unhonourable::BadRequest400 => {
                self.record_resume(r, ResumeOutcome::Rejected { status: Status::BAD_REQUEST, head: None });
                let error = ErrorBody { code: ErrorCode::Other, head_event_id: None };
                self.respond_status(r.conn, ResponseHead::error(Status::BAD_REQUEST, error));
            }
        }
    }

    /// Under `resume_while_attached = reject409`: the connection that still claims the live
    /// stream the resume names, if another does.
    fn claimed_elsewhere(&self, r: &Resumption) -> Option<ConnId> {
        if self.policy.resume_while_attached != ResumeWhileAttached::Reject409 {
            return None;
        }
        let stream = self.stream(&r.session, r.located.target?)?;
        stream.attached.filter(|&old| !stream.finished && old != r.conn)
    }

    /// Under `resume_while_attached = replay-and-close`: the connection that still claims the
    /// stream a resume names, for which [`Server::attach_resumed`] closes the resuming one after
    /// its replay (Python's writer, closed while the stream is still in `_request_streams`).
    fn closed_for_claim(&self, r: &Resumption) -> Option<ConnId> {
        if self.policy.resume_while_attached != ResumeWhileAttached::ReplayAndClose
            || self.policy.after_replay == AfterReplay::Quiet
        {
            return None;
        }
        let stream = self.stream(&r.session, r.located.target?)?;
        if stream.finished && self.policy.finished_resume == ConnAfterResponse::Close {
            return None;
        }
        stream.attached.filter(|&old| old != r.conn)
    }

    pub(super) fn resumed_log(&self, r: &Resumption) -> Option<&StreamLog> {
        r.located.key.as_ref().and_then(|key| self.store.log(key))
    }

    /// Answers 200 `text/event-stream` on the resuming connection and replays `events` on it.
    pub(super) fn open_resumed(&mut self, now: Instant, r: &Resumption, events: &[StoredEvent]) {
        self.send(r.conn, Frame::Head(ResponseHead::event_stream()));
        self.open_sse_conn(now, r.conn, &r.session, ConnKind::Resumed);
        for event in events {
            self.send(r.conn, Frame::Event(self.wire(event)));
        }
    }

    /// After a resume's replay: a finished stream ends the connection (or, under
    /// `finished_resume = stay-open`, keeps it open); a live one takes it as its receiver (ending
    /// the one it had, unless `resume_while_attached` closes the resuming one instead), with a
    /// priming event if the policy sends one. With no stream of its own to attach to, the
    /// connection stays open and receives only keep-alives.
    pub(super) fn attach_resumed(&mut self, now: Instant, r: &Resumption) {
        let Some(stream) = r.located.target else { return };
        let Some(state) = self.stream(&r.session, stream) else { return };
        if state.finished && self.policy.finished_resume == ConnAfterResponse::Close {
            return self.end_conn(now, r.conn);
        }
        if self.policy.after_replay == AfterReplay::Quiet {
            // The store replayed what was missed and forwards nothing more.
            return;
        }
        if self.closed_for_claim(r).is_some() {
            return self.end_conn(now, r.conn);
        }
        if let Some(old) = state.attached.filter(|old| *old != r.conn) {
            self.end_conn(now, old);
        }
        if let Some(state) = self.stream_mut(&r.session, stream) {
            state.server_closed = false;
        }
        self.attach(&r.session, stream, r.conn);
        if stream == StreamNo::STANDALONE {
            // A resumed standalone GET is the session's standalone stream from now on: it gets
            // the idle close (`close_idle_standalone`) as the first GET did.
            self.resumed_standalone(now, r.conn);
        }
        if self.policy.priming.resume {
            self.append(now, &r.session, stream, None);
        }
    }

    /// Whether a log one of `session`'s own streams writes into holds every event issued after
    /// `id` there: a resume from `id` could have been honoured. It reads the logs directly,
    /// whatever the id scheme says of where `id` lives, so it is evidence beside the lookup
    /// (`locate`). Only the session's own logs count: in a store shared across sessions, or one
    /// that numbers each stream alike, another log may hold an id of the same text.
    pub(super) fn holds(&self, session: &SessionId, id: &EventId) -> bool {
        self.in_own_logs(session, id, |p| matches!(p, Position::Honourable(_)))
    }

    /// Whether a log one of `session`'s own streams writes into issued `id` and has since
    /// evicted events after it: read from the logs, beside the lookup, as [`Server::holds`] is.
    pub(super) fn evicted(&self, session: &SessionId, id: &EventId) -> bool {
        self.in_own_logs(session, id, |p| matches!(p, Position::Evicted(_)))
    }

    /// Whether `id` stands as `wanted` says in a log one of `session`'s own streams writes into.
    fn in_own_logs(&self, session: &SessionId, id: &EventId, wanted: impl Fn(&Position) -> bool) -> bool {
        let Some(state) = self.sessions.get(session) else { return false };
        state.streams.values().any(|stream| self.store.log(&stream.key).is_some_and(|log| wanted(&log.position(id))))
    }

    pub(super) fn record_resume(&mut self, r: &Resumption, outcome: ResumeOutcome) {
        self.record_resume_as(r, outcome, None)
    }

    /// [`Server::record_resume`], for a resume refused, or ended after its replay, because
    /// `claimed_by` still held its stream.
    fn record_resume_as(&mut self, r: &Resumption, outcome: ResumeOutcome, claimed_by: Option<ConnId>) {
        let replayed = matches!(outcome, ResumeOutcome::Replayed { .. });
        let held = !replayed && self.holds(&r.session, &r.last_event_id);
        let evicted = (!replayed && !held && self.evicted(&r.session, &r.last_event_id)).then(|| {
            let retention = self.store.retention();
            RetentionBound { max_events: retention.max_events, window_us: retention.window.map(micros) }
        });
        let finished = r.located.target.and_then(|stream| self.stream(&r.session, stream)).is_some_and(|s| s.finished);
        self.record(StepKind::Resume {
            session: r.session.clone(),
            last_event_id: r.last_event_id.clone(),
            stream: r.located.target,
            outcome,
            held,
            evicted,
            claimed_by,
            finished,
        });
    }
}

fn count(events: &[StoredEvent]) -> u32 {
    u32::try_from(events.len()).unwrap_or(u32::MAX)
}
