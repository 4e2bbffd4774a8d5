//! The design note's decision procedure for a closed SSE stream (`classify_close`, `next_action`).
//!
//! This is the only place the rule lives; the `reference` client calls it on every stream that
//! ends without its response. The rule, in the note's words: a reset, a timeout or a 5xx is a
//! *transport* fact, so keep the session and resume with `Last-Event-ID`; a 404 is a *session*
//! fact, so re-initialize and treat in-flight calls as unknown outcome; a 409/410 means the session
//! lives but events were lost, so resume at the head the server names and report a gap; a clean
//! `event: close` ends the session, so stop. Anything else: refuse to guess.

use crate::http::Status;
use crate::ids::EventId;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// What the client knows when a stream closes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamClose {
    /// The HTTP status that ended the stream; `None` for a transport-level end (a reset — the
    /// model's form of the note's "timeout" too, since a load balancer's idle timeout reaches
    /// the client as a reset —, a refused connection, or a body that ended before its response).
    pub status: Option<Status>,
    /// The server sent `event: close` before the stream ended.
    pub close_event: bool,
    /// The last event id the client has persisted for this stream.
    pub last_event_id_seen: Option<EventId>,
    /// The head event id the server advertised in a resume-window-exceeded error body.
    pub server_head_event_id: Option<EventId>,
}

/// The four ways a stream can have closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StreamOutcome {
    /// A transport fact: the session lives; resume the stream.
    Reconnectable,
    /// The server no longer knows the session.
    SessionTerminated,
    /// The session lives but the server cannot replay what the client missed.
    EventsLost,
    /// The server announced the session's end with `event: close`.
    ServerClosed,
}

/// What to do about a closed stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum NextAction {
    /// `GET` with `Last-Event-ID: last_event_id`, after backoff.
    Resume {
        /// The `Last-Event-ID` sent.
        last_event_id: EventId,
    },
    /// Discard the session id, `initialize` again, and report every in-flight call as *unknown
    /// outcome* (never blindly re-run a non-idempotent tool).
    Reinitialize,
    /// Report a gap to the application, then resume from `head` (events after it).
    ResumeAtHead {
        /// The head event id the server named.
        head: EventId,
    },
    /// Stop reconnecting; the session is ending.
    Stop,
}

/// Closes the procedure refuses to act on, rather than guess whether the session survived.
#[derive(Clone, Debug, PartialEq, Eq, Error, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "kebab-case")]
pub enum DecisionError {
    /// A status the procedure has no rule for.
    #[error("unexpected close status {status}; refusing to guess whether the session survived")]
    UnexpectedStatus {
        /// The HTTP status.
        status: u16,
    },
    /// The stream is reconnectable but no event id was ever persisted for it.
    #[error(
        "reconnectable close but Last-Event-ID was never persisted; resumption is impossible and a \
         blind retry risks duplicate side effects on non-idempotent tools"
    )]
    NeverPersisted,
    /// The server reported lost events without naming its head.
    #[error("server reported lost events without advertising a head id; cannot reconnect at head safely")]
    NoHeadAdvertised,
}

/// Sorts a close into one of the four outcomes.
pub fn classify_close(close: &StreamClose) -> Result<StreamOutcome, DecisionError> {
    if close.close_event {
        return Ok(StreamOutcome::ServerClosed);
    }
    match close.status {
        None => Ok(StreamOutcome::Reconnectable),
        Some(s) if (500..600).contains(&s.0) => Ok(StreamOutcome::Reconnectable),
        Some(Status::NOT_FOUND) => Ok(StreamOutcome::SessionTerminated),
        Some(Status::CONFLICT) | Some(Status::GONE) => Ok(StreamOutcome::EventsLost),
        Some(s) => Err(DecisionError::UnexpectedStatus { status: s.0 }),
    }
}

/// The outcome of a close and the action it calls for: the decision table.
///
/// | the stream ended with | outcome | action |
/// |---|---|---|
/// | a reset, a refused connection, a 5xx | `Reconnectable` | `Resume` after the last persisted id (none persisted: `NeverPersisted`) |
/// | 404 | `SessionTerminated` | `Reinitialize`; in-flight calls are unknown outcomes |
/// | 409 or 410 | `EventsLost` | `ResumeAtHead` the server named, and report a gap (no head: `NoHeadAdvertised`) |
/// | `event: close` | `ServerClosed` | `Stop` |
/// | any other status | — | `UnexpectedStatus`: refuse to guess |
///
/// ```
/// use mcpsim_model::decision::{next_action, DecisionError, NextAction, StreamClose, StreamOutcome};
/// use mcpsim_model::http::Status;
/// use mcpsim_model::ids::EventId;
///
/// let close = |status: Option<u16>, seen: Option<&str>, head: Option<&str>| StreamClose {
///     status: status.map(Status),
///     close_event: false,
///     last_event_id_seen: seen.map(EventId::from),
///     server_head_event_id: head.map(EventId::from),
/// };
///
/// // A reset (no status): a transport fact, so resume where the client left off.
/// assert_eq!(
///     next_action(&close(None, Some("0-7"), None)),
///     Ok((StreamOutcome::Reconnectable, NextAction::Resume { last_event_id: EventId::from("0-7") }))
/// );
/// // 404: the server no longer knows the session.
/// assert_eq!(next_action(&close(Some(404), Some("0-7"), None))?.1, NextAction::Reinitialize);
/// // 410 naming its head: the session lives, the events in between are lost.
/// assert_eq!(
///     next_action(&close(Some(410), Some("0-7"), Some("0-42")))?.1,
///     NextAction::ResumeAtHead { head: EventId::from("0-42") }
/// );
/// // `event: close` ends the session, whatever else is known.
/// let closed = StreamClose { close_event: true, ..close(None, Some("0-7"), None) };
/// assert_eq!(next_action(&closed)?, (StreamOutcome::ServerClosed, NextAction::Stop));
/// // What the procedure refuses to guess about.
/// assert_eq!(next_action(&close(None, None, None)), Err(DecisionError::NeverPersisted));
/// assert_eq!(next_action(&close(Some(403), Some("0-7"), None)), Err(DecisionError::UnexpectedStatus { status: 403 }));
/// # Ok::<(), DecisionError>(())
/// ```
pub fn next_action(close: &StreamClose) -> Result<(StreamOutcome, NextAction), DecisionError> {
    let outcome = classify_close(close)?;
    let action = match outcome {
        StreamOutcome::Reconnectable => {
            let last = close.last_event_id_seen.clone().ok_or(DecisionError::NeverPersisted)?;
            NextAction::Resume { last_event_id: last }
        }
        StreamOutcome::SessionTerminated => NextAction::Reinitialize,
        StreamOutcome::EventsLost => {
            let head = close.server_head_event_id.clone().ok_or(DecisionError::NoHeadAdvertised)?;
            NextAction::ResumeAtHead { head }
        }
        StreamOutcome::ServerClosed => NextAction::Stop,
    };
    Ok((outcome, action))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(status: Option<u16>, seen: Option<&str>, head: Option<&str>) -> StreamClose {
        StreamClose {
            status: status.map(Status),
            close_event: false,
            last_event_id_seen: seen.map(EventId::from),
            server_head_event_id: head.map(EventId::from),
        }
    }

    type Decided = Result<(StreamOutcome, NextAction), DecisionError>;

    fn resume(id: &str) -> Decided {
        Ok((StreamOutcome::Reconnectable, NextAction::Resume { last_event_id: EventId::from(id) }))
    }

    /// The note's decision boundary as a table: (status, last seen, head) → result.
    #[test]
    fn decision_table() {
        use StreamOutcome::*;
        let table: Vec<(StreamClose, Decided)> = vec![
            (close(None, Some("1-4"), None), resume("1-4")),
            (close(Some(500), Some("1-4"), None), resume("1-4")),
            (close(Some(502), Some("1-4"), None), resume("1-4")),
            (close(Some(503), Some("1-0"), None), resume("1-0")),
            (close(Some(599), Some("9"), None), resume("9")),
            (close(None, None, None), Err(DecisionError::NeverPersisted)),
            (close(Some(503), None, None), Err(DecisionError::NeverPersisted)),
            (close(Some(404), Some("1-4"), None), Ok((SessionTerminated, NextAction::Reinitialize))),
            (close(Some(404), None, None), Ok((SessionTerminated, NextAction::Reinitialize))),
            (
                close(Some(410), Some("1-4"), Some("1-90")),
                Ok((EventsLost, NextAction::ResumeAtHead { head: EventId::from("1-90") })),
            ),
            (
                close(Some(409), None, Some("1-90")),
                Ok((EventsLost, NextAction::ResumeAtHead { head: EventId::from("1-90") })),
            ),
            (close(Some(410), Some("1-4"), None), Err(DecisionError::NoHeadAdvertised)),
            (close(Some(200), Some("1-4"), None), Err(DecisionError::UnexpectedStatus { status: 200 })),
            (close(Some(400), Some("1-4"), None), Err(DecisionError::UnexpectedStatus { status: 400 })),
            (close(Some(401), None, None), Err(DecisionError::UnexpectedStatus { status: 401 })),
            (close(Some(600), None, None), Err(DecisionError::UnexpectedStatus { status: 600 })),
        ];
        for (input, expected) in table {
            assert_eq!(next_action(&input), expected, "for {input:?}");
        }
    }

    #[test]
    fn close_event_stops_whatever_the_status() {
        for status in [None, Some(200), Some(404), Some(503)] {
            let mut c = close(status, Some("1-1"), None);
            c.close_event = true;
            assert_eq!(next_action(&c), Ok((StreamOutcome::ServerClosed, NextAction::Stop)));
        }
    }

    #[test]
    fn errors_explain_themselves() {
        let msg = DecisionError::UnexpectedStatus { status: 418 }.to_string();
        assert!(msg.contains("418") && msg.contains("refusing to guess"), "{msg}");
    }
}
