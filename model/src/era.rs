//! Protocol eras: the handshake-based revisions up to 2025-11-25 ("legacy") and the stateless
//! 2026-07-28 revision ("modern"), chosen per request.
//!
//! Pure rules, no state of their own except the client's per-origin cache ([`EraCache`]):
//! - [`answer`]: what a server that serves some eras answers one HTTP request (the spec's 400s,
//!   405s and ignored headers, `docs/eras.md` "What the sources say");
//! - [`ClientEra`] and [`EraCache`]: how a client chooses (legacy only, modern only, or auto:
//!   probe, fall back, cache per origin, re-probe when the cached era fails);
//! - [`compatibility`]: whether a client and a server can talk at all (the spec's compatibility
//!   matrix, versioning.mdx:159-172), which `matrix` shows instead of a verdict when they cannot.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The protocol version string of the legacy era the model speaks.
pub const LEGACY_VERSION: &str = "2025-11-25";
/// The protocol version string of the modern era.
pub const MODERN_VERSION: &str = "2026-07-28";

/// JSON-RPC `HeaderMismatch` (2026-07-28 streamable-http.mdx:558,600-603).
pub const HEADER_MISMATCH: i64 = -32020;
/// JSON-RPC `MissingRequiredClientCapability` (changelog.mdx:64-66; ext-tasks tasks.md).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// JSON-RPC `UnsupportedProtocolVersion` (versioning.mdx:59, streamable-http.mdx:263-267).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// JSON-RPC `Method not found`, answered with 404 by a modern server (streamable-http.mdx:270-273).
pub const METHOD_NOT_FOUND: i64 = -32601;

/// A protocol era.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Era {
    /// The `initialize` handshake, `Mcp-Session-Id`, the GET stream, `Last-Event-ID` (2025-11-25
    /// and earlier).
    #[serde(rename = "2025-11-25")]
    Legacy,
    /// Per-request `_meta` and `MCP-Protocol-Version`, no session, no GET, no resumption; closing
    /// a response stream cancels its request (2026-07-28).
    #[serde(rename = "2026-07-28")]
    Modern,
}

impl Era {
    /// The version string.
    pub const fn version(self) -> &'static str {
        match self {
            Era::Legacy => LEGACY_VERSION,
            Era::Modern => MODERN_VERSION,
        }
    }

    /// The era of a version string, if the model knows it: the handshake revisions are legacy
    /// (python-sdk mcp_types/version.py:33-38), 2026-07-28 is modern.
    pub fn of_version(version: &str) -> Option<Era> {
        match version {
            "2024-11-05" | "2025-03-26" | "2025-06-18" | LEGACY_VERSION => Some(Era::Legacy),
            MODERN_VERSION => Some(Era::Modern),
            _ => None,
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        })
    }
}

/// The eras a server serves, each at most once, legacy first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EraSet {
    /// Serves the legacy era.
    pub legacy: bool,
    /// Serves the modern era.
    pub modern: bool,
}

impl EraSet {
    /// The set of the eras in a list.
    pub fn of(eras: &[Era]) -> EraSet {
        EraSet { legacy: eras.contains(&Era::Legacy), modern: eras.contains(&Era::Modern) }
    }

    /// Whether it holds `era`.
    pub fn serves(self, era: Era) -> bool {
        match era {
            Era::Legacy => self.legacy,
            Era::Modern => self.modern,
        }
    }

    /// Both eras: a dual-era server (versioning.mdx:38-39,174-183).
    pub fn dual(self) -> bool {
        self.legacy && self.modern
    }

    /// The versions it would name in an `UnsupportedProtocolVersionError`.
    pub fn supported(self) -> Vec<&'static str> {
        [Era::Modern, Era::Legacy].into_iter().filter(|e| self.serves(*e)).map(Era::version).collect()
    }
}

/// The eras a server profile serves: its `eras` field, or, when the profile does not say, what
/// its `sessions` field implied before eras existed (sessions: legacy only; none: modern only).
pub fn served_eras(eras: Option<&[Era]>, sessions: bool) -> EraSet {
    match eras {
        Some(list) => EraSet::of(list),
        None if sessions => EraSet { legacy: true, modern: false },
        None => EraSet { legacy: false, modern: true },
    }
}

// ---------------------------------------------------------------------------------------------
// The server's answer to one request
// ---------------------------------------------------------------------------------------------

/// The HTTP method of a request to the MCP endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpVerb {
    /// `POST`: a JSON-RPC message.
    Post,
    /// `GET`: the legacy standalone stream (or a resumption).
    Get,
    /// `DELETE`: the legacy end of a session.
    Delete,
}

/// What of one request decides its era.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EraRequest {
    /// The method.
    pub verb: HttpVerb,
    /// The `MCP-Protocol-Version` header, if any.
    pub header_version: Option<String>,
    /// The `io.modelcontextprotocol/protocolVersion` in the body's `_meta`, if any (POST only).
    pub meta_version: Option<String>,
    /// Whether the body is an `initialize` request.
    pub initialize: bool,
    /// Whether it carries `Mcp-Session-Id`.
    pub session_id: bool,
    /// Whether it carries `Last-Event-ID`.
    pub last_event_id: bool,
}

impl EraRequest {
    /// A modern POST as the 2026-07-28 revision writes it: header and `_meta` agree.
    pub fn modern_post() -> EraRequest {
        EraRequest {
            verb: HttpVerb::Post,
            header_version: Some(MODERN_VERSION.to_string()),
            meta_version: Some(MODERN_VERSION.to_string()),
            initialize: false,
            session_id: false,
            last_event_id: false,
        }
    }

    /// A legacy `initialize` POST: no version header yet (2025-11-25 clients send it only after
    /// the handshake), no `_meta` version.
    pub fn legacy_initialize() -> EraRequest {
        EraRequest {
            verb: HttpVerb::Post,
            header_version: None,
            meta_version: None,
            initialize: true,
            session_id: false,
            last_event_id: false,
        }
    }

    /// A legacy request after the handshake: the negotiated version header and the session id.
    pub fn legacy_request(verb: HttpVerb) -> EraRequest {
        EraRequest {
            verb,
            header_version: Some(LEGACY_VERSION.to_string()),
            meta_version: None,
            initialize: false,
            session_id: true,
            last_event_id: false,
        }
    }

    /// The era the request asks for, as a dual-era server reads it: `initialize` is legacy
    /// whatever it names (rmcp 3.11.0 tower.rs:550-560); else a modern `_meta` or header version
    /// is modern, and no version at all is legacy (a request without the header is 2025-03-26,
    /// streamable-http.mdx:277-281; rmcp tower.rs:576-583).
    fn asks_for(&self) -> Asked {
        if self.initialize {
            return Asked::Era(Era::Legacy);
        }
        let version = self.meta_version.as_deref().or(self.header_version.as_deref());
        match version {
            None => Asked::Era(Era::Legacy),
            Some(v) => match Era::of_version(v) {
                Some(era) => Asked::Era(era),
                None => Asked::Unknown,
            },
        }
    }
}

enum Asked {
    Era(Era),
    Unknown,
}

/// A header the modern era ignores (streamable-http.mdx:683-687).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IgnoredHeader {
    /// `Mcp-Session-Id`: ignored, never minted or echoed.
    McpSessionId,
    /// `Last-Event-ID`: ignored, streams are not resumable.
    LastEventId,
}

/// Why a request is refused before any method runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Refusal {
    /// 400 `HeaderMismatch` (-32020): the header disagrees with `_meta`, or a required header is
    /// missing (streamable-http.mdx:256-261,598-626).
    HeaderMismatch,
    /// 400 `UnsupportedProtocolVersion` (-32022) naming the supported versions
    /// (streamable-http.mdx:263-267, versioning.mdx:48-67).
    UnsupportedVersion,
    /// 405 Method Not Allowed: GET or DELETE outside the legacy era (streamable-http.mdx:683-684).
    MethodNotAllowed,
    /// A legacy-only server's own 400 to a modern request: not defined by the spec
    /// (versioning.mdx:167); TypeScript 1.32.2 answers 400 -32000 "Server not initialized"
    /// (server/webStandardStreamableHttp.js:737-746). Not a recognized modern error, so an auto
    /// client falls back on it.
    LegacyNoSession,
}

impl Refusal {
    /// The HTTP status.
    pub const fn status(self) -> u16 {
        match self {
            Refusal::MethodNotAllowed => 405,
            _ => 400,
        }
    }

    /// The JSON-RPC error code of the body, if the body is a modern error.
    pub const fn modern_code(self) -> Option<i64> {
        match self {
            Refusal::HeaderMismatch => Some(HEADER_MISMATCH),
            Refusal::UnsupportedVersion => Some(UNSUPPORTED_PROTOCOL_VERSION),
            Refusal::MethodNotAllowed | Refusal::LegacyNoSession => None,
        }
    }
}

/// What a server answers a request, before any method runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EraAnswer {
    /// Served under the legacy era (sessions, GET, resumption as the legacy profile says).
    Legacy,
    /// Served statelessly under the modern era; these headers were present and ignored.
    Modern {
        /// The legacy headers the request carried, ignored.
        ignored: Vec<IgnoredHeader>,
    },
    /// Refused.
    Refused(Refusal),
}

/// The answer of a server serving `eras` to `request` (2026-07-28 streamable-http.mdx, "Protocol
/// Version Header", "Server Validation", "Backward Compatibility").
pub fn answer(eras: EraSet, request: &EraRequest) -> EraAnswer {
    // Header and body must agree whenever both are present (streamable-http.mdx:256-261).
    if let (Some(h), Some(m)) = (&request.header_version, &request.meta_version) {
        if h != m {
            return EraAnswer::Refused(Refusal::HeaderMismatch);
        }
    }
    let era = match request.asks_for() {
        Asked::Era(era) => era,
        Asked::Unknown if eras.modern => return EraAnswer::Refused(Refusal::UnsupportedVersion),
        // A legacy server's own answer to a version it does not know (TS 1.32.2
        // webStandardStreamableHttp.js:774-779: 400 "Unsupported protocol version").
        Asked::Unknown => return EraAnswer::Refused(Refusal::LegacyNoSession),
    };
    match (era, request.verb) {
        (Era::Legacy, _) if eras.legacy => EraAnswer::Legacy,
        (Era::Modern, HttpVerb::Get | HttpVerb::Delete) | (Era::Legacy, HttpVerb::Get | HttpVerb::Delete) => {
            // No legacy era here (or a modern GET): there is no GET stream and no session.
            EraAnswer::Refused(Refusal::MethodNotAllowed)
        }
        (Era::Legacy, HttpVerb::Post) => {
            // A modern-only server and a legacy POST: a handshake version named in the header is
            // unsupported; no header at all is a missing required header (versioning.mdx:170).
            if request.header_version.is_some() {
                EraAnswer::Refused(Refusal::UnsupportedVersion)
            } else {
                EraAnswer::Refused(Refusal::HeaderMismatch)
            }
        }
        (Era::Modern, HttpVerb::Post) if eras.modern => {
            let mut ignored = Vec::new();
            if request.session_id {
                ignored.push(IgnoredHeader::McpSessionId);
            }
            if request.last_event_id {
                ignored.push(IgnoredHeader::LastEventId);
            }
            EraAnswer::Modern { ignored }
        }
        (Era::Modern, HttpVerb::Post) => EraAnswer::Refused(Refusal::LegacyNoSession),
    }
}

/// How a session-ful dual-era server serves a modern request (`server.modern_session`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModernSession {
    /// With no session: none is minted or echoed, `Mcp-Session-Id` is ignored
    /// (streamable-http.mdx:683-687; python-sdk _streamable_http_modern.py:375-402; rmcp
    /// tower.rs:224-231).
    #[default]
    Sessionless,
    /// A misconfiguration no pinned SDK has: the server runs the modern request through its
    /// legacy session manager, minting a session for it (and its tool runs on after a cut, as a
    /// legacy one does). `era-consistent` breaks on it.
    Minted,
}

// ---------------------------------------------------------------------------------------------
// The client's choice
// ---------------------------------------------------------------------------------------------

/// How a client chooses its era (`client.era`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EraMode {
    /// Always the `initialize` handshake (TypeScript 1.32.2; rmcp 3.11.0 `serve`).
    Legacy,
    /// Always modern; no fallback (rmcp `ClientLifecycleMode::Discover`).
    Modern,
    /// Probe, fall back to `initialize` on an answer that is not a recognized modern error
    /// (Python `mcp.Client` by default; rmcp `ClientLifecycleMode::Auto`).
    Auto,
}

/// A client's era rule (`client.era`): the mode, and for `auto` its cache and fallback rules.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientEra {
    /// Legacy, modern or auto.
    pub mode: EraMode,
    /// With `auto`: what the determination is cached for.
    #[serde(default = "per_connection")]
    pub cache: EraCacheScope,
    /// With `auto`: whether a failure of the cached era (a legacy session answered 400/405, or a
    /// modern request answered a non-modern 4xx) drops it so the next connect probes again
    /// (versioning.mdx:148-152).
    #[serde(default)]
    pub reprobe_on_failure: bool,
    /// With `auto`: whether a probe that gets no answer (a transport error or a timeout) falls
    /// back to legacy (rmcp: after 10 s) or fails the connect (Python: the error propagates).
    #[serde(default)]
    pub fallback_on_no_answer: bool,
}

fn per_connection() -> EraCacheScope {
    EraCacheScope::Connection
}

impl ClientEra {
    /// A fixed mode (the auto rules at their defaults).
    pub const fn fixed(mode: EraMode) -> ClientEra {
        ClientEra { mode, cache: EraCacheScope::Connection, reprobe_on_failure: false, fallback_on_no_answer: false }
    }

    /// The legacy-only rule.
    pub const LEGACY: ClientEra = ClientEra::fixed(EraMode::Legacy);
    /// The modern-only rule.
    pub const MODERN: ClientEra = ClientEra::fixed(EraMode::Modern);
}

/// The rules of an auto client (the part of [`ClientEra`] `auto` reads).
pub type AutoEra = ClientEra;

/// What an auto client's era determination is cached for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EraCacheScope {
    /// One client object: every new connect probes again (Python `Client`, rmcp).
    Connection,
    /// The origin (the spec's SHOULD, versioning.mdx:148-152).
    Origin,
}

/// What the probe got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeAnswer {
    /// A `DiscoverResult` (or any success) listing a modern version.
    Modern,
    /// A recognized modern JSON-RPC error (`-32020`, `-32021`, `-32022` with a mutual version,
    /// 404 with `-32601`): the server is modern; correct the request, don't fall back
    /// (streamable-http.mdx:650-665).
    ModernError,
    /// `-32022` naming no version this client speaks and no handshake version: modern-only and
    /// disjoint (python-sdk client/_probe.py:75-79).
    Disjoint,
    /// Any other 4xx, or a body that is not a modern error (streamable-http.mdx:663-665).
    NotModern,
    /// No answer: a transport error or the probe's timeout.
    NoAnswer,
}

/// What the client does after its probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// Speak this era.
    Use(Era),
    /// Give up the connect: no era is shared.
    Fail,
}

/// The outcome of an auto client's probe (versioning.mdx:132-146; python-sdk client/_probe.py;
/// rmcp service/client.rs:896-944).
pub fn after_probe(auto: &AutoEra, got: ProbeAnswer) -> ProbeOutcome {
    match got {
        ProbeAnswer::Modern | ProbeAnswer::ModernError => ProbeOutcome::Use(Era::Modern),
        ProbeAnswer::Disjoint => ProbeOutcome::Fail,
        ProbeAnswer::NotModern => ProbeOutcome::Use(Era::Legacy),
        ProbeAnswer::NoAnswer if auto.fallback_on_no_answer => ProbeOutcome::Use(Era::Legacy),
        ProbeAnswer::NoAnswer => ProbeOutcome::Fail,
    }
}

/// What a probe (a modern request) gets from a server serving `eras`.
pub fn probe(eras: EraSet) -> ProbeAnswer {
    match answer(eras, &EraRequest::modern_post()) {
        EraAnswer::Modern { .. } => ProbeAnswer::Modern,
        EraAnswer::Refused(r) if r.modern_code().is_some() => ProbeAnswer::ModernError,
        EraAnswer::Refused(_) | EraAnswer::Legacy => ProbeAnswer::NotModern,
    }
}

/// The era a client starts a connect with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectStart {
    /// Speak this era at once (a fixed mode, or a cached determination).
    Speak(Era),
    /// Send the probe first.
    Probe,
}

/// An auto client's cache of era determinations, by origin. Sans-IO: the caller says when a
/// connect starts, what the probe got, and when the cached era failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EraCache {
    known: BTreeMap<String, Era>,
}

impl EraCache {
    /// An empty cache.
    pub fn new() -> EraCache {
        EraCache::default()
    }

    /// How a client with rule `mode` starts a connect to `origin`.
    pub fn start(&self, mode: &ClientEra, origin: &str) -> ConnectStart {
        match mode.mode {
            EraMode::Legacy => ConnectStart::Speak(Era::Legacy),
            EraMode::Modern => ConnectStart::Speak(Era::Modern),
            EraMode::Auto => match (mode.cache, self.known.get(origin)) {
                (EraCacheScope::Origin, Some(era)) => ConnectStart::Speak(*era),
                _ => ConnectStart::Probe,
            },
        }
    }

    /// The probe to `origin` got `got`: the outcome, remembered when the cache is per origin.
    pub fn probed(&mut self, auto: &AutoEra, origin: &str, got: ProbeAnswer) -> ProbeOutcome {
        let outcome = after_probe(auto, got);
        if let (EraCacheScope::Origin, ProbeOutcome::Use(era)) = (auto.cache, outcome) {
            self.known.insert(origin.to_string(), era);
        }
        outcome
    }

    /// The cached era of `origin` failed (the server was upgraded or rolled back): forgotten when
    /// the rule re-probes, so the next connect probes again.
    pub fn failed(&mut self, auto: &AutoEra, origin: &str) {
        if auto.reprobe_on_failure {
            self.known.remove(origin);
        }
    }

    /// The cached era of `origin`, if any.
    pub fn cached(&self, origin: &str) -> Option<Era> {
        self.known.get(origin).copied()
    }
}

/// The era a client uses, derived when the profile does not say: the handshake with sessions,
/// modern without (what `client.sessions` implied before eras existed).
pub fn client_era(era: Option<&ClientEra>, sessions: bool) -> ClientEra {
    match era {
        Some(e) => e.clone(),
        None if sessions => ClientEra::LEGACY,
        None => ClientEra::MODERN,
    }
}

// ---------------------------------------------------------------------------------------------
// Can they talk at all?
// ---------------------------------------------------------------------------------------------

/// Whether a client and a server can talk (versioning.mdx:159-172).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compatibility {
    /// They talk in this era.
    Works(Era),
    /// The server refuses the client's first request with this status before any call.
    RefusedBeforeAnyCall(u16),
    /// A modern-only client against a legacy-only server: "Fails", with the server's answer left
    /// to the implementation (versioning.mdx:167).
    Undefined,
}

impl Compatibility {
    /// What `matrix` writes in place of a verdict; `None` when they talk.
    pub fn matrix_text(self) -> Option<String> {
        match self {
            Compatibility::Works(_) => None,
            Compatibility::RefusedBeforeAnyCall(status) => Some(format!("incompatible: {status} before any call")),
            Compatibility::Undefined => {
                Some("incompatible: modern client, legacy-only server (undefined by the spec)".to_string())
            }
        }
    }
}

/// The compatibility of a client choosing by `client` with a server serving `server`.
pub fn compatibility(client: &ClientEra, server: EraSet) -> Compatibility {
    match client.mode {
        EraMode::Legacy => match answer(server, &EraRequest::legacy_initialize()) {
            EraAnswer::Legacy => Compatibility::Works(Era::Legacy),
            EraAnswer::Refused(r) => Compatibility::RefusedBeforeAnyCall(r.status()),
            EraAnswer::Modern { .. } => Compatibility::Works(Era::Modern),
        },
        EraMode::Modern => match answer(server, &EraRequest::modern_post()) {
            EraAnswer::Modern { .. } => Compatibility::Works(Era::Modern),
            EraAnswer::Refused(Refusal::LegacyNoSession) => Compatibility::Undefined,
            EraAnswer::Refused(r) => Compatibility::RefusedBeforeAnyCall(r.status()),
            EraAnswer::Legacy => Compatibility::Works(Era::Legacy),
        },
        EraMode::Auto => match after_probe(client, probe(server)) {
            ProbeOutcome::Use(Era::Legacy) if !server.legacy => Compatibility::RefusedBeforeAnyCall(400),
            ProbeOutcome::Use(era) => Compatibility::Works(era),
            ProbeOutcome::Fail => Compatibility::RefusedBeforeAnyCall(400),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEGACY: EraSet = EraSet { legacy: true, modern: false };
    const MODERN: EraSet = EraSet { legacy: false, modern: true };
    const DUAL: EraSet = EraSet { legacy: true, modern: true };

    fn auto(cache: EraCacheScope, reprobe: bool) -> AutoEra {
        AutoEra { mode: EraMode::Auto, cache, reprobe_on_failure: reprobe, fallback_on_no_answer: false }
    }

    #[test]
    fn the_era_list_serializes_as_version_strings() {
        let eras: Vec<Era> = serde_json::from_str(r#"["2025-11-25","2026-07-28"]"#).expect("two versions");
        assert_eq!(eras, vec![Era::Legacy, Era::Modern]);
        assert!(EraSet::of(&eras).dual());
        assert_eq!(DUAL.supported(), vec!["2026-07-28", "2025-11-25"]);
    }

    #[test]
    fn the_json_rpc_error_codes_are_the_revisions_numbers() {
        // The 2026-07-28 revision's errors take -32020..-32022 from JSON-RPC's range for server
        // errors; "Method not found" is JSON-RPC's own. A probe of a real server reads them.
        assert_eq!(
            [HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION],
            [-32020, -32021, -32022]
        );
        assert_eq!(METHOD_NOT_FOUND, -32601);
        assert_eq!(Refusal::UnsupportedVersion.modern_code(), Some(UNSUPPORTED_PROTOCOL_VERSION));
    }

    #[test]
    fn eras_are_named_legacy_and_modern_in_messages() {
        assert_eq!(format!("served as {} then as {}", Era::Legacy, Era::Modern), "served as legacy then as modern");
    }

    #[test]
    fn only_a_server_serving_both_eras_is_dual() {
        assert!(DUAL.dual());
        assert!(!LEGACY.dual() && !MODERN.dual() && !EraSet::default().dual());
    }

    #[test]
    fn without_an_eras_field_sessions_decide_as_before() {
        assert_eq!(served_eras(None, true), LEGACY);
        assert_eq!(served_eras(None, false), MODERN);
        assert_eq!(served_eras(Some(&[Era::Legacy, Era::Modern]), true), DUAL);
        assert_eq!(client_era(None, true), ClientEra::LEGACY);
        assert_eq!(client_era(None, false), ClientEra::MODERN);
    }

    #[test]
    fn a_dual_era_server_serves_each_request_in_the_era_it_asks_for() {
        assert_eq!(answer(DUAL, &EraRequest::legacy_initialize()), EraAnswer::Legacy);
        assert_eq!(answer(DUAL, &EraRequest::legacy_request(HttpVerb::Get)), EraAnswer::Legacy);
        assert_eq!(answer(DUAL, &EraRequest::modern_post()), EraAnswer::Modern { ignored: vec![] });
        // An initialize naming the modern version is still the handshake (rmcp tower.rs:550-560).
        let mut init = EraRequest::legacy_initialize();
        init.header_version = Some(MODERN_VERSION.into());
        assert_eq!(answer(DUAL, &init), EraAnswer::Legacy);
    }

    #[test]
    fn header_and_meta_that_disagree_are_a_header_mismatch() {
        let mut r = EraRequest::modern_post();
        r.header_version = Some(LEGACY_VERSION.into());
        let got = answer(DUAL, &r);
        assert_eq!(got, EraAnswer::Refused(Refusal::HeaderMismatch));
        assert_eq!((Refusal::HeaderMismatch.status(), Refusal::HeaderMismatch.modern_code()), (400, Some(-32020)));
    }

    #[test]
    fn an_unknown_version_is_unsupported_with_the_supported_list() {
        let mut r = EraRequest::modern_post();
        r.header_version = Some("1900-01-01".into());
        r.meta_version = Some("1900-01-01".into());
        assert_eq!(answer(MODERN, &r), EraAnswer::Refused(Refusal::UnsupportedVersion));
        assert_eq!(Refusal::UnsupportedVersion.modern_code(), Some(-32022));
        assert_eq!(MODERN.supported(), vec!["2026-07-28"]);
    }

    #[test]
    fn modern_get_and_delete_are_405_and_legacy_headers_are_ignored() {
        for verb in [HttpVerb::Get, HttpVerb::Delete] {
            assert_eq!(
                answer(MODERN, &EraRequest::legacy_request(verb)),
                EraAnswer::Refused(Refusal::MethodNotAllowed)
            );
            let mut modern_get = EraRequest::modern_post();
            modern_get.verb = verb;
            modern_get.meta_version = None;
            assert_eq!(answer(DUAL, &modern_get), EraAnswer::Refused(Refusal::MethodNotAllowed));
        }
        let mut stale = EraRequest::modern_post();
        stale.session_id = true;
        stale.last_event_id = true;
        assert_eq!(
            answer(DUAL, &stale),
            EraAnswer::Modern { ignored: vec![IgnoredHeader::McpSessionId, IgnoredHeader::LastEventId] }
        );
    }

    #[test]
    fn a_modern_only_server_refuses_a_legacy_initialize_with_400() {
        assert_eq!(answer(MODERN, &EraRequest::legacy_initialize()), EraAnswer::Refused(Refusal::HeaderMismatch));
        let mut named = EraRequest::legacy_initialize();
        named.header_version = Some(LEGACY_VERSION.into());
        named.initialize = false;
        assert_eq!(answer(MODERN, &named), EraAnswer::Refused(Refusal::UnsupportedVersion));
    }

    #[test]
    fn a_legacy_only_server_answers_a_modern_request_with_its_own_400() {
        assert_eq!(answer(LEGACY, &EraRequest::modern_post()), EraAnswer::Refused(Refusal::LegacyNoSession));
        assert_eq!(Refusal::LegacyNoSession.modern_code(), None);
        assert_eq!(probe(LEGACY), ProbeAnswer::NotModern);
        assert_eq!(probe(DUAL), ProbeAnswer::Modern);
    }

    #[test]
    fn auto_falls_back_only_on_answers_that_are_not_modern() {
        let a = auto(EraCacheScope::Connection, false);
        assert_eq!(after_probe(&a, ProbeAnswer::Modern), ProbeOutcome::Use(Era::Modern));
        assert_eq!(after_probe(&a, ProbeAnswer::ModernError), ProbeOutcome::Use(Era::Modern));
        assert_eq!(after_probe(&a, ProbeAnswer::NotModern), ProbeOutcome::Use(Era::Legacy));
        assert_eq!(after_probe(&a, ProbeAnswer::Disjoint), ProbeOutcome::Fail);
        assert_eq!(after_probe(&a, ProbeAnswer::NoAnswer), ProbeOutcome::Fail);
        let rmcp = AutoEra { fallback_on_no_answer: true, ..a };
        assert_eq!(after_probe(&rmcp, ProbeAnswer::NoAnswer), ProbeOutcome::Use(Era::Legacy));
    }

    #[test]
    fn a_per_origin_cache_skips_the_probe_until_the_era_fails() {
        let a = auto(EraCacheScope::Origin, true);
        let mode = a.clone();
        let mut cache = EraCache::new();
        assert_eq!(cache.start(&mode, "https://a"), ConnectStart::Probe);
        assert_eq!(cache.probed(&a, "https://a", ProbeAnswer::NotModern), ProbeOutcome::Use(Era::Legacy));
        assert_eq!(cache.start(&mode, "https://a"), ConnectStart::Speak(Era::Legacy));
        assert_eq!(cache.start(&mode, "https://b"), ConnectStart::Probe);
        cache.failed(&a, "https://a");
        assert_eq!(cache.start(&mode, "https://a"), ConnectStart::Probe);
    }

    #[test]
    fn without_reprobe_a_failed_era_stays_cached_and_per_connection_never_caches() {
        let sticky = auto(EraCacheScope::Origin, false);
        let mut cache = EraCache::new();
        cache.probed(&sticky, "o", ProbeAnswer::NotModern);
        cache.failed(&sticky, "o");
        assert_eq!(cache.cached("o"), Some(Era::Legacy));
        let per_conn = auto(EraCacheScope::Connection, true);
        let mut cache = EraCache::new();
        cache.probed(&per_conn, "o", ProbeAnswer::Modern);
        assert_eq!(cache.start(&per_conn, "o"), ConnectStart::Probe);
    }

    #[test]
    fn the_compatibility_matrix_of_the_spec() {
        let a = auto(EraCacheScope::Connection, false);
        // versioning.mdx:166-172, row by row.
        assert_eq!(compatibility(&ClientEra::MODERN, MODERN), Compatibility::Works(Era::Modern));
        assert_eq!(compatibility(&ClientEra::MODERN, LEGACY), Compatibility::Undefined);
        assert_eq!(compatibility(&a, MODERN), Compatibility::Works(Era::Modern));
        assert_eq!(compatibility(&a, LEGACY), Compatibility::Works(Era::Legacy));
        assert_eq!(compatibility(&ClientEra::LEGACY, MODERN), Compatibility::RefusedBeforeAnyCall(400));
        assert_eq!(compatibility(&ClientEra::LEGACY, DUAL), Compatibility::Works(Era::Legacy));
        assert_eq!(compatibility(&ClientEra::LEGACY, LEGACY), Compatibility::Works(Era::Legacy));
        assert_eq!(compatibility(&ClientEra::MODERN, DUAL), Compatibility::Works(Era::Modern));
        assert_eq!(compatibility(&a, DUAL), Compatibility::Works(Era::Modern));
        assert_eq!(
            Compatibility::RefusedBeforeAnyCall(400).matrix_text().as_deref(),
            Some("incompatible: 400 before any call")
        );
        assert_eq!(Compatibility::Works(Era::Legacy).matrix_text(), None);
    }

    #[test]
    fn a_version_nobody_knows_is_unsupported_where_the_modern_era_is_served_and_the_legacy_400_elsewhere() {
        let mut unknown = EraRequest::modern_post();
        unknown.header_version = Some("1900-01-01".into());
        unknown.meta_version = Some("1900-01-01".into());
        assert_eq!(answer(MODERN, &unknown), EraAnswer::Refused(Refusal::UnsupportedVersion));
        assert_eq!(answer(DUAL, &unknown), EraAnswer::Refused(Refusal::UnsupportedVersion));
        // A legacy-only server (TypeScript 1.32.2): its own 400, not the modern era's error.
        assert_eq!(answer(LEGACY, &unknown), EraAnswer::Refused(Refusal::LegacyNoSession));
    }

    #[test]
    fn an_auto_client_falling_back_to_the_handshake_is_refused_where_no_legacy_era_is_served() {
        // A server listing no era at all (`eras = []`): the probe gets the legacy 400, the
        // fallback handshake is refused too.
        let none = EraSet::of(&[]);
        assert_eq!(probe(none), ProbeAnswer::NotModern);
        let a = auto(EraCacheScope::Connection, false);
        assert_eq!(compatibility(&a, none), Compatibility::RefusedBeforeAnyCall(400));
    }
}
