//! The client's protocol era (`ClientPolicy::era`, `crate::era`): which era each connect speaks,
//! the `server/discover` probe of an auto client, its per-origin cache, and re-probing when the
//! cached era fails.
//!
//! - legacy: the `initialize` handshake, as before (nothing recorded);
//! - modern: no handshake, no session, no standalone GET; every request carries
//!   `MCP-Protocol-Version` and the `_meta` version (2026-07-28 streamable-http.mdx:250-255), and a
//!   broken stream is re-issued with a new request id (changelog.mdx:28), whatever the profile's
//!   close rule for the legacy era;
//! - auto: probe with a modern `server/discover`; a success or a recognized modern error means
//!   modern, any other answer falls back to `initialize`, no answer falls back or fails as the
//!   rule says ([`era::after_probe`]; versioning.mdx:126-146; python-sdk mcp/client/_probe.py:52-110;
//!   rmcp service/client.rs:896-944). The determination is cached per origin when the rule says
//!   so, and forgotten when a request of the cached era is refused in a way only another era
//!   explains (versioning.mdx:148-152): the call, which never ran, waits for the new probe and is
//!   sent again once.
//!
//! A client whose profile states no `era` never enters this file's rules.

use super::{Client, Handshake, Owner, Purpose};
use crate::era::{ConnectStart, Era, EraCache, EraMode, ProbeAnswer, ProbeOutcome};
use crate::http::{ClientMessage, ErrorCode, Request, ResponseHead, Status};
use crate::ids::CallKey;
use crate::time::Instant;
use crate::trace::StepKind;
use std::collections::BTreeSet;

/// The origin the model's client talks to: one endpoint (behind the balancer, if any).
const ORIGIN: &str = "mcp";

/// What the client knows of eras.
#[derive(Debug, Default)]
pub(super) struct EraState {
    /// The era the current connect speaks; `None` before one is chosen, or without an era rule.
    pub(super) era: Option<Era>,
    cache: EraCache,
    /// Calls already sent again after their era failed (each is, at most once).
    resent: BTreeSet<CallKey>,
}

/// Whether an error body is a recognized modern error (streamable-http.mdx:650-665).
fn modern_error(head: &ResponseHead) -> bool {
    matches!(
        head.error.as_ref().map(|e| e.code),
        Some(ErrorCode::HeaderMismatch | ErrorCode::UnsupportedProtocolVersion)
    )
}

impl Client {
    /// Whether the current connect speaks the modern era.
    pub(super) fn speaks_modern(&self) -> bool {
        self.era.era == Some(Era::Modern)
    }

    /// A POST of `body` in the current era: modern (version header and `_meta`, no session), or
    /// legacy in the session held.
    pub(super) fn post_request(&self, body: ClientMessage) -> Request {
        if self.speaks_modern() {
            Request::modern_post(body)
        } else {
            Request::post(self.session.clone(), body)
        }
    }

    /// A connect starts: returns `true` when the era rule took it over (modern at once, or a
    /// probe sent); `false` leaves the legacy handshake to the caller.
    pub(super) fn era_connect(&mut self) -> bool {
        let Some(rule) = self.policy.era.clone() else { return false };
        match self.era.cache.start(&rule, ORIGIN) {
            ConnectStart::Speak(era) => {
                self.era.era = Some(era);
                if rule.mode != EraMode::Legacy {
                    self.record(StepKind::EraChosen { era, probed: false });
                }
                if era == Era::Modern {
                    self.become_ready();
                    return true;
                }
                false
            }
            ConnectStart::Probe => {
                self.era.era = None;
                self.handshake = Handshake::Initializing;
                let id = self.take_request_id();
                self.open(Purpose::Probe, Request::modern_post(ClientMessage::Discover { id }), false);
                true
            }
        }
    }

    /// The probe's answer head arrived (its body adds nothing the model reads).
    pub(super) fn probe_answered(&mut self, now: Instant, head: &ResponseHead) {
        let got = if head.status.is_success() {
            ProbeAnswer::Modern
        } else if modern_error(head) {
            ProbeAnswer::ModernError
        } else {
            ProbeAnswer::NotModern
        };
        self.probed(now, got);
    }

    /// The probe's connection ended before any answer.
    pub(super) fn probe_unanswered(&mut self, now: Instant) {
        self.probed(now, ProbeAnswer::NoAnswer);
    }

    fn probed(&mut self, now: Instant, got: ProbeAnswer) {
        let Some(rule) = self.policy.era.clone() else { return };
        match self.era.cache.probed(&rule, ORIGIN, got) {
            ProbeOutcome::Use(era) => {
                self.era.era = Some(era);
                self.record(StepKind::EraChosen { era, probed: true });
                match era {
                    Era::Modern => self.become_ready(),
                    Era::Legacy => self.legacy_initialize(),
                }
            }
            ProbeOutcome::Fail => self.init_failed(now, "the probe found no protocol era in common".into()),
        }
    }

    /// A call's POST was refused (`status`, `head`): when the client chooses its era itself
    /// (auto) and the refusal says the server no longer serves the cached era (a modern request
    /// answered by a 400/405 that is no modern error; a legacy one answered by a modern error),
    /// the era is forgotten, the call (which never ran) waits, and the client connects again.
    /// Returns whether it did so; each call is sent again this way at most once.
    pub(super) fn era_failed(&mut self, key: CallKey, status: Status, head: &ResponseHead) -> bool {
        let Some(rule) = self.policy.era.clone() else { return false };
        let failed = match self.era.era {
            Some(Era::Modern) => !modern_error(head) && matches!(status.0, 400 | 405),
            Some(Era::Legacy) => modern_error(head),
            None => false,
        };
        if rule.mode != EraMode::Auto || !failed || !self.era.resent.insert(key) {
            return false;
        }
        self.era.cache.failed(&rule, ORIGIN);
        let note = format!(
            "HTTP {status}: the server no longer serves the {} era; probe again",
            self.era.era.map_or("", |e| e.version())
        );
        self.record_decision(Owner::Call(key), None, None, Some(note));
        self.era.era = None;
        self.session = None;
        self.handshake = Handshake::Idle;
        // The old session's standalone stream goes with it: the next session opens its own
        // (`become_ready`), without the old one's Last-Event-ID.
        if let Some(conn) = self.standalone.as_mut().and_then(|s| s.conn.take()) {
            self.abort(conn);
        }
        if self.standalone.is_some() {
            self.standalone = Some(super::Stream::default());
        }
        self.mark_for_resend(key);
        self.begin_initialize();
        true
    }
}
