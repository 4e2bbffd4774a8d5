//! `no-silent-notification-loss`: every change notification a server emitted while an
//! application believed it was subscribed (`subscriptions/listen`, `subscriptions.rs`)
//! reached it, or the application was told afterwards that its subscription ended.
//!
//! Why not `no-silent-event-loss`: that invariant judges events *stored* on a stream (each has a
//! place in a log and an id a resumption can name). A change emitted while no listen stream is
//! open is stored nowhere and named by no id: the 2026-07-28 revision has no resumption, so no
//! server can report the gap (there is nothing like a 409/410 to give). What can tell the
//! application is the client: an abrupt end of its stream (python `SubscriptionLost`, rmcp
//! `SubscriptionEnd::Abrupt`) means "re-listen and refetch", and the refetch after the next
//! acknowledgment covers every change before it. So the loss is judged against the
//! application's belief, not a stream's log: a change is lost silently when it was emitted while
//! the application believed it was subscribed (from a `listen-open` until an
//! `app-subscription-lost`), never reached it (`app-change`), and no `app-subscription-lost`
//! came after it. A change written to some listen stream while the client held one that is still
//! open when the run ends is in flight, not lost (a change written to none is lost whatever the
//! client holds: on a fleet whose processes each fan out only to their own listen streams, a
//! change on another replica never reaches it).

use super::{Invariant, InvariantId, TraceIndex, Violation};
use crate::ids::ConnId;
use crate::trace::StepKind;
use std::collections::{BTreeMap, BTreeSet};

pub(super) const NO_SILENT_NOTIFICATION_LOSS: Invariant = Invariant {
    id: InvariantId::NoSilentNotificationLoss,
    name: InvariantId::NoSilentNotificationLoss.name(),
    description: "Every change notification emitted while an application believed it was subscribed \
                  (subscriptions/listen) reaches it, or the application is told afterwards that its subscription \
                  ended.",
    check: silent_notification_losses_in,
};

/// One client's view: its belief, its listen connection, what it was handed.
#[derive(Default)]
struct Listener {
    /// The application believes it is subscribed.
    believing: bool,
    /// The listen connection acknowledged last, while it has not ended.
    open_conn: Option<ConnId>,
    /// The changes emitted while it believed, not yet settled: (change, order, the connection
    /// then open).
    owed: Vec<(String, usize, Option<ConnId>)>,
    delivered: BTreeSet<String>,
    /// Connections that ended.
    ended: BTreeSet<ConnId>,
}

fn silent_notification_losses_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let mut clients: BTreeMap<u32, Listener> = BTreeMap::new();
    // Changes written to some listen stream, by the emitting process or through a shared bus.
    let mut written: BTreeSet<&str> = BTreeSet::new();
    for (order, step) in ix.others() {
        let client = step.client.unwrap_or(0);
        match &step.kind {
            StepKind::ListenOpen { conn, .. } => {
                let l = clients.entry(client).or_default();
                l.believing = true;
                l.open_conn = Some(*conn);
            }
            StepKind::ConnEnd { conn, .. } => {
                if let Some(l) = clients.get_mut(&client) {
                    l.ended.insert(*conn);
                    if l.open_conn == Some(*conn) {
                        l.open_conn = None;
                    }
                }
            }
            // A process that (re)starts believes in no subscription: the old one died with the
            // old process, and the new one's `listen` either opens (its acknowledgment's refetch
            // covers every change before it) or fails at its call, which the application sees.
            // (A swarm sweep of the modern client against python behind nginx read a change
            // emitted after a restart whose `listen` was refused 503 as lost in silence.)
            StepKind::ClientStart { .. } => {
                if let Some(l) = clients.get_mut(&client) {
                    l.believing = false;
                    l.owed.clear();
                    l.open_conn = None;
                }
            }
            StepKind::AppSubscriptionLost { .. } => {
                if let Some(l) = clients.get_mut(&client) {
                    // The application re-listens and refetches: every change owed so far is covered.
                    l.believing = false;
                    l.owed.clear();
                }
            }
            StepKind::AppChange { change } => {
                if let Some(l) = clients.get_mut(&client) {
                    l.delivered.insert(change.clone());
                }
            }
            StepKind::ChangeEmitted { change, listeners } => {
                if *listeners > 0 {
                    written.insert(change);
                }
                for l in clients.values_mut().filter(|l| l.believing) {
                    l.owed.push((change.clone(), order, l.open_conn));
                }
            }
            StepKind::ChangeRelayed { change, listeners } if *listeners > 0 => {
                written.insert(change);
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (client, l) in clients {
        for (change, order, via) in &l.owed {
            if l.delivered.contains(change) {
                continue;
            }
            // Written to a stream while the client held one still open at the end: in flight.
            if written.contains(change.as_str()) && via.is_some_and(|c| !l.ended.contains(&c)) {
                continue;
            }
            out.push((client, change.clone(), *order));
        }
    }
    // One violation per client, at its first silently lost change.
    let mut by_client: BTreeMap<u32, Vec<(String, usize)>> = BTreeMap::new();
    for (client, change, order) in out {
        by_client.entry(client).or_default().push((change, order));
    }
    by_client
        .into_iter()
        .map(|(client, lost)| {
            let (first, order) = lost[0].clone();
            let last = &lost[lost.len() - 1].0;
            let at = ix.trace.steps.get(order).map(|s| s.at()).unwrap_or_default();
            Violation {
                invariant: InvariantId::NoSilentNotificationLoss,
                step: order,
                at,
                subject: format!("client {client} subscription"),
                detail: format!(
                    "{} change notifications emitted while the application believed it was subscribed never reached \
                     it, and it was never told its subscription ended ({first} to {last})",
                    lost.len()
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{client_start, TraceBuilder};
    use super::super::{check_all, InvariantId};
    use crate::http::ConnEnd;
    use crate::ids::{ConnId, RequestId};
    use crate::trace::{StepKind, Trace};

    fn broken(t: &Trace) -> Vec<(usize, String)> {
        check_all(t)
            .into_iter()
            .filter(|v| v.invariant == InvariantId::NoSilentNotificationLoss)
            .map(|v| (v.step, v.subject))
            .collect()
    }

    fn open(conn: u64) -> StepKind {
        StepKind::ListenOpen { conn: ConnId(conn), subscription: RequestId(conn) }
    }

    /// Change `n`, written to a listen stream (`written`) or to none.
    fn emitted(n: u32, written: bool) -> StepKind {
        StepKind::ChangeEmitted { change: format!("c{n}"), listeners: u32::from(written) }
    }

    fn handed(n: u32) -> StepKind {
        StepKind::AppChange { change: format!("c{n}") }
    }

    fn cut(conn: u64) -> StepKind {
        StepKind::ConnEnd { conn: ConnId(conn), end: ConnEnd::Reset }
    }

    fn told() -> StepKind {
        StepKind::AppSubscriptionLost { reason: "lost".into() }
    }

    #[test]
    fn a_change_emitted_between_a_cut_and_a_silent_relisten_is_lost_silently() {
        let t = TraceBuilder::new()
            .client(open(1))
            .server(emitted(1, true))
            .app(handed(1))
            .at(10)
            .client(cut(1))
            .at(11)
            .server(emitted(2, false))
            .at(12)
            .client(open(2))
            .server(emitted(3, true))
            .app(handed(3))
            .build();
        assert_eq!(broken(&t), vec![(4, "client 0 subscription".to_string())]);
    }

    /// A client process that restarts believes in no subscription until its new `listen` is
    /// acknowledged: a change emitted after the restart, its `listen` refused, is owed to nobody;
    /// the same change with no restart (the stream cut, nobody told) is lost in silence.
    #[test]
    fn a_restarted_process_believes_in_no_subscription_until_it_listens_again() {
        let restart = client_start(false, false, false);
        let run = |restarted: bool| {
            let mut t = TraceBuilder::new().client(open(1)).at(10).client(cut(1));
            if restarted {
                t = t.client(restart.clone());
            }
            t.at(11).server(emitted(1, false)).build()
        };
        assert!(broken(&run(true)).is_empty());
        assert_eq!(broken(&run(false)), vec![(2, "client 0 subscription".to_string())]);
    }

    #[test]
    fn telling_the_application_after_the_change_covers_it() {
        let t = TraceBuilder::new()
            .client(open(1))
            .at(10)
            .client(cut(1))
            .server(emitted(1, false))
            .app(told())
            .at(12)
            .client(open(2))
            .build();
        assert!(broken(&t).is_empty());
        // Told before the change and re-subscribed after it: the refetch at the new ack covers it.
        let t = TraceBuilder::new()
            .client(open(1))
            .at(10)
            .client(cut(1))
            .app(told())
            .server(emitted(1, false))
            .at(12)
            .client(open(2))
            .build();
        assert!(broken(&t).is_empty());
    }

    #[test]
    fn changes_before_any_subscription_and_in_flight_at_the_end_are_owed_to_nobody() {
        let t = TraceBuilder::new().server(emitted(1, false)).client(open(1)).server(emitted(2, true)).build();
        assert!(broken(&t).is_empty());
        // Written to no stream while the client held one (another replica's change, fanned out to
        // its own listeners only): lost, though the client's stream is still open.
        let t = TraceBuilder::new().client(open(1)).server(emitted(1, false)).build();
        assert_eq!(broken(&t), vec![(1, "client 0 subscription".to_string())]);
    }

    #[test]
    fn a_change_written_to_a_stream_that_broke_before_it_arrived_is_lost() {
        // Written to the open stream, which then broke before the change reached the
        // application: not in flight any more, and nobody told the application.
        let t = TraceBuilder::new()
            .client(open(1))
            .server(emitted(1, true))
            .at(10)
            .client(cut(1))
            .at(12)
            .client(open(2))
            .build();
        assert_eq!(broken(&t), vec![(1, "client 0 subscription".to_string())]);
    }

    #[test]
    fn a_change_relayed_to_the_replica_holding_the_stream_is_in_flight() {
        // Emitted on a replica with no listener of its own and relayed by the shared bus to the
        // one holding the client's open stream: in flight at the end, not lost.
        let relayed = |listeners| StepKind::ChangeRelayed { change: "c1".into(), listeners };
        let t = TraceBuilder::new().client(open(1)).server(emitted(1, false)).server(relayed(1)).build();
        assert!(broken(&t).is_empty());
        // Relayed to a replica where no listener is open: written nowhere, lost.
        let t = TraceBuilder::new().client(open(1)).server(emitted(1, false)).server(relayed(0)).build();
        assert_eq!(broken(&t), vec![(1, "client 0 subscription".to_string())]);
    }

    #[test]
    fn another_connection_ending_leaves_the_listen_stream_open() {
        // A call's POST connection (2) ends cleanly while the listen stream (1) stays open; a
        // change written to the stream afterwards is in flight at the end, not lost.
        let done = StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Clean };
        let t = TraceBuilder::new().client(open(1)).at(10).client(done).at(11).server(emitted(1, true)).build();
        assert!(broken(&t).is_empty());
        // The listen stream's own end still makes the change lost.
        let t = TraceBuilder::new().client(open(1)).at(10).client(cut(1)).at(11).server(emitted(1, true)).build();
        assert_eq!(broken(&t), vec![(2, "client 0 subscription".to_string())]);
    }
}
