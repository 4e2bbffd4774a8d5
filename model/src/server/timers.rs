//! The server's timer table: every pending timer (a tool's next progress or completion, a
//! connection's keep-alive and idle close, a session's idle expiry) ordered by due instant, so
//! that `poll_timeout` and `handle_timeout` cost the same however many sessions, streams and
//! tools are open. Each entry is refreshed where the state it is derived from changes
//! (`refresh_tool`, `refresh_conn`, `refresh_idle`); debug builds check the table against a
//! scan of that state (`scan`, the earlier implementation) on every poll, as `lb.rs` does.

use super::{Server, Timer};
use crate::ids::{ConnId, SessionId};
use crate::time::{Instant, TimerTable};

/// Each pending timer's due instant (ties at one instant run in `Timer` order, as the scan's
/// `min` did).
pub(super) type Timers = TimerTable<Timer>;

impl Server {
    /// Files tool `id`'s next due instant (after it starts, ticks or ends).
    pub(super) fn refresh_tool(&mut self, id: u64) {
        let due = self.running.get(&id).and_then(|tool| tool.next_due());
        self.timers.set(Timer::Tool(id), due);
    }

    /// Files `conn`'s keep-alive and idle close (after it opens, is written to or goes).
    pub(super) fn refresh_conn(&mut self, conn: ConnId) {
        let open = self.conns.get(&conn);
        let (keepalive, close) = (open.and_then(|o| o.next_keepalive), open.and_then(|o| o.close_at));
        self.timers.set(Timer::Keepalive(conn), keepalive);
        self.timers.set(Timer::Close(conn), close);
    }

    /// Files `session`'s idle expiry (after its countdown changes or it ends).
    pub(super) fn refresh_idle(&mut self, session: &SessionId) {
        let due = self.sessions.get(session).and_then(|s| Some(s.idle_since? + self.policy.idle_ttl?));
        self.timers.set(Timer::Idle(session.clone()), due);
    }

    /// The earliest timer due at or before `now`, checked against the scan in debug builds. The
    /// Tasks store's sweep is asked of the store each time rather than filed: a shared store
    /// (`server.tasks.store = "shared"`) changes its deadline under every replica.
    pub(super) fn next_timer(&self, now: Instant) -> Option<(Instant, Timer)> {
        let sweep = self.task_deadline().map(|at| (at, Timer::TaskSweep));
        let first = self.timers.first().map(|(at, timer)| (at, timer.clone())).into_iter().chain(sweep).min();
        debug_assert_eq!(
            first,
            self.scan().min(),
            "the server's timer table is refreshed after every change to a tool, connection or session"
        );
        first.filter(|(at, _)| *at <= now)
    }

    /// Every pending timer, derived from the state (the table's reference in debug builds).
    fn scan(&self) -> impl Iterator<Item = (Instant, Timer)> + '_ {
        let tools = self.running.iter().filter_map(|(id, tool)| Some((tool.next_due()?, Timer::Tool(*id))));
        let keepalives =
            self.conns.iter().filter_map(|(conn, open)| open.next_keepalive.map(|at| (at, Timer::Keepalive(*conn))));
        let idle = self.sessions.iter().filter_map(|(id, session)| {
            let deadline = session.idle_since? + self.policy.idle_ttl?;
            Some((deadline, Timer::Idle(id.clone())))
        });
        let closes = self.conns.iter().filter_map(|(conn, open)| open.close_at.map(|at| (at, Timer::Close(*conn))));
        let tasks = self.task_deadline().map(|at| (at, Timer::TaskSweep));
        tools.chain(keepalives).chain(idle).chain(closes).chain(tasks)
    }
}
