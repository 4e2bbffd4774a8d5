//! Idle expiry: when a session's idle countdown runs, under the policy's `IdleRule`.

use super::Server;
use crate::config::IdleRule;
use crate::ids::SessionId;
use crate::time::Instant;

impl Server {
    /// Whether the session's idle countdown is held under the policy's rule.
    pub(super) fn holds_session(&self, session: &SessionId) -> bool {
        let open_conn = || self.conns.values().any(|c| &c.session == session);
        let tool_runs = || self.running.values().any(|t| &t.session == session && !t.orphaned);
        match self.policy.idle_rule {
            IdleRule::LastRequest => false,
            IdleRule::NoOpenRequest => open_conn(),
            IdleRule::NoOpenPost => self.conns.values().any(|c| {
                &c.session == session
                    && matches!(c.kind, super::streams::ConnKind::Request | super::streams::ConnKind::Json)
            }),
            IdleRule::NeverWhileBusy => open_conn() || tool_runs(),
        }
    }

    /// Re-evaluates the idle countdown after something changed; a finished request restarts it.
    pub(super) fn touch_idle(&mut self, now: Instant, session: &SessionId, request: bool) {
        // Without sessions there is nothing to expire.
        if !self.policy.sessions {
            return;
        }
        let held = self.holds_session(session);
        let Some(state) = self.sessions.get_mut(session) else { return };
        if held {
            state.idle_since = None;
        } else if request || state.idle_since.is_none() {
            state.idle_since = Some(now);
        }
        self.refresh_idle(session);
    }
}
