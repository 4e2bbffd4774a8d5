//! `subscriptions/listen` on the server (`crate::subscriptions`): a listen POST is answered with
//! an SSE stream that stays open, acknowledged first (subscriptions.mdx:52-59); each change the
//! process publishes (`server.subscriptions.changes`, at the scenario's `notify_interval`) is
//! written to the listen streams open on this process at that instant and to no other: nothing is
//! kept for a stream opened later, there is no resumption (python 2.3.0
//! mcp/server/subscriptions.py:21-22,94-125). A listen stream carries the server's keep-alives
//! like any open SSE answer, and its end is only the connection's (no graceful result is
//! modelled: the server never ends a subscription on its own initiative but by crashing).

use super::streams::ConnKind;
use super::Server;
use crate::http::{EventKind, Frame, ResponseHead, ServerMessage, SseEvent};
use crate::ids::NO_SESSION;
use crate::ids::{ConnId, RequestId};
use crate::subscriptions::change_id;
use crate::time::Instant;
use crate::trace::StepKind;

impl Server {
    /// A `subscriptions/listen` request on `conn` (served in the sessionless context).
    pub(super) fn listen(&mut self, now: Instant, conn: ConnId, id: RequestId) {
        self.send(conn, Frame::Head(ResponseHead::event_stream()));
        // An open SSE answer attached to no stream: it gets keep-alives, and its end (the
        // client gone, a cut) forgets it like any other.
        self.open_sse_conn(now, conn, &NO_SESSION, ConnKind::Held);
        self.listeners.insert(conn, id);
        self.write(now, conn, Frame::Event(message_event(ServerMessage::ListenAck { subscription: id })));
    }

    /// The process publishes one change: written to every listen stream open on it now, recorded
    /// whether any is open or not. No effect unless `server.subscriptions.changes`.
    pub(super) fn publish_change(&mut self, now: Instant) {
        if !self.policy.subscriptions.changes {
            return;
        }
        if let Some(context) = self.modern.as_mut() {
            context.publish_change(now);
            return self.drain_modern();
        }
        if self.policy.sessions {
            // A legacy-only process has no listen streams; its notifications go to GET streams.
            return;
        }
        self.changes += 1;
        let change = change_id(&format!("r{}.{}", self.replica, self.epoch), self.changes);
        let open = self.open_listeners();
        self.record(StepKind::ChangeEmitted { change: change.clone(), listeners: open.len() as u32 });
        self.write_change(now, &open, &change);
        self.published = Some(change);
    }

    /// The change this process published last, for the fleet's shared bus to relay (taken once).
    pub fn take_published_change(&mut self) -> Option<String> {
        match self.modern.as_mut() {
            Some(context) => context.published.take(),
            None => self.published.take(),
        }
    }

    /// A change another replica published reaches this process's listen streams (a shared bus,
    /// `server.subscriptions.bus = shared`): written to those open now, recorded.
    pub fn relay_change(&mut self, now: Instant, change: &str) {
        if self.crashed {
            return;
        }
        if let Some(context) = self.modern.as_mut() {
            context.relay_change(now, change);
            return self.drain_modern();
        }
        if self.policy.sessions {
            return;
        }
        let open = self.open_listeners();
        self.record(StepKind::ChangeRelayed { change: change.to_string(), listeners: open.len() as u32 });
        self.write_change(now, &open, change);
    }

    fn open_listeners(&self) -> Vec<(ConnId, RequestId)> {
        self.listeners.iter().filter(|(conn, _)| self.conns.contains_key(conn)).map(|(c, r)| (*c, *r)).collect()
    }

    fn write_change(&mut self, now: Instant, open: &[(ConnId, RequestId)], change: &str) {
        for (conn, subscription) in open {
            let message = ServerMessage::Changed { subscription: *subscription, change: change.to_string() };
            self.write(now, *conn, Frame::Event(message_event(message)));
        }
    }

    /// `conn` is gone: it is no listen stream any more.
    pub(super) fn forget_listener(&mut self, conn: ConnId) {
        self.listeners.remove(&conn);
    }
}

/// A message event with no id: a listen stream is not resumable (streamable-http.mdx:157).
fn message_event(message: ServerMessage) -> SseEvent {
    SseEvent { id: None, retry_ms: None, kind: EventKind::Message, data: Some(message) }
}

#[cfg(test)]
mod tests {
    use super::super::{Server, ServerOutput};
    use crate::config::ServerPolicy;
    use crate::http::{ClientMessage, Frame, Request, ServerMessage};
    use crate::ids::{ConnId, RequestId};
    use crate::profiles;
    use crate::time::Instant;
    use crate::trace::StepKind;

    fn server(name: &str, changes: bool) -> Server {
        let mut policy: ServerPolicy = profiles::server(name).expect("a listed profile");
        policy.subscriptions.changes = changes;
        let mut s = Server::new(policy, Vec::new(), 0, 7);
        while s.poll_output().is_some() {}
        s
    }

    fn drain(s: &mut Server) -> Vec<ServerOutput> {
        std::iter::from_fn(|| s.poll_output()).collect()
    }

    fn listen(s: &mut Server, conn: u64) -> Vec<ServerOutput> {
        s.handle_request(Instant(0), ConnId(conn), Request::modern_post(ClientMessage::Listen { id: RequestId(conn) }));
        drain(s)
    }

    /// What was written on `conn` and what was recorded.
    fn messages_on(out: &[ServerOutput], conn: u64) -> Vec<ServerMessage> {
        out.iter()
            .filter_map(|o| match o {
                ServerOutput::Send { conn: c, frame: Frame::Event(e) } if *c == ConnId(conn) => e.data.clone(),
                _ => None,
            })
            .collect()
    }

    fn emitted(out: &[ServerOutput]) -> Vec<(String, u32)> {
        out.iter()
            .filter_map(|o| match o {
                ServerOutput::Record(StepKind::ChangeEmitted { change, listeners }) => {
                    Some((change.clone(), *listeners))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_listen_stream_is_acknowledged_first_and_gets_only_the_changes_emitted_while_it_is_open() {
        // Both the modern-only server and a dual-era one (its modern context) serve it.
        for name in ["stateless-2026", "py-sdk"] {
            let mut s = server(name, true);
            let out = listen(&mut s, 1);
            assert_eq!(messages_on(&out, 1), vec![ServerMessage::ListenAck { subscription: RequestId(1) }], "{name}");
            s.notify_all(Instant(1_000));
            let out = drain(&mut s);
            assert_eq!(emitted(&out), vec![("r0.0-c1".to_string(), 1)], "{name}");
            let changed = ServerMessage::Changed { subscription: RequestId(1), change: "r0.0-c1".into() };
            assert_eq!(messages_on(&out, 1), vec![changed], "{name}");
            // The stream goes: the next change reaches nobody, and a stream opened later never
            // gets it (no replay).
            s.handle_disconnect(Instant(2_000), ConnId(1));
            drain(&mut s);
            s.notify_all(Instant(3_000));
            assert_eq!(emitted(&drain(&mut s)), vec![("r0.0-c2".to_string(), 0)], "{name}");
            let out = listen(&mut s, 2);
            assert_eq!(messages_on(&out, 2), vec![ServerMessage::ListenAck { subscription: RequestId(2) }], "{name}");
        }
    }

    #[test]
    fn a_change_relayed_from_another_replica_reaches_the_open_listen_streams_and_is_recorded() {
        for name in ["stateless-2026", "py-sdk"] {
            let mut s = server(name, true);
            listen(&mut s, 1);
            s.relay_change(Instant(1_000), "r1.0-c1");
            let out = drain(&mut s);
            let relayed = StepKind::ChangeRelayed { change: "r1.0-c1".into(), listeners: 1 };
            assert!(out.contains(&ServerOutput::Record(relayed)), "{name}: {out:?}");
            let changed = ServerMessage::Changed { subscription: RequestId(1), change: "r1.0-c1".into() };
            assert_eq!(messages_on(&out, 1), vec![changed], "{name}");
        }
    }

    #[test]
    fn without_changes_nothing_is_published_or_recorded() {
        let mut s = server("stateless-2026", false);
        listen(&mut s, 1);
        s.notify_all(Instant(1_000));
        assert!(emitted(&drain(&mut s)).is_empty());
    }

    #[test]
    fn a_published_change_is_handed_to_the_bus_once_and_nothing_when_none_was_published() {
        for name in ["stateless-2026", "py-sdk"] {
            let mut s = server(name, true);
            assert_eq!(s.take_published_change(), None, "{name}: nothing published yet");
            s.notify_all(Instant(1_000));
            drain(&mut s);
            assert_eq!(s.take_published_change(), Some("r0.0-c1".to_string()), "{name}");
            assert_eq!(s.take_published_change(), None, "{name}: taken once");
        }
        let mut quiet = server("stateless-2026", false);
        quiet.notify_all(Instant(1_000));
        assert_eq!(quiet.take_published_change(), None);
    }
}
