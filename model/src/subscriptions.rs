//! `subscriptions/listen` (the 2026-07-28 revision, SEP-2575; docs/eras.md "Subscriptions"): the
//! long-lived POST whose SSE response replaces the GET stream for change notifications.
//!
//! What the sources say, and what the model takes from them:
//!
//! - The spec (`basic/patterns/subscriptions.mdx`): the client opts in with a filter; the server
//!   acknowledges first (`notifications/subscriptions/acknowledged`, :52-59) and then sends the
//!   change notifications on that response stream (:83-89). A subscription ends when the client
//!   closes the stream, the server ends it gracefully with a result (:128-149), or the transport
//!   closes; "a transport that closes without it indicates an unexpected disconnect, which the
//!   client MAY treat as a trigger to reconnect" (:156-158). There is no resumption
//!   (`transports/streamable-http.mdx:157`): what the server emits while no listen stream is
//!   open reaches nobody, and the server has nothing to report it by.
//! - python `mcp` 2.3.0: the server fans events out to the listen streams open at that instant
//!   (`mcp/server/subscriptions.py:94-125`, `InMemorySubscriptionBus`; "Delivery is
//!   fire-and-forget with no replay", :21-22). The client driver raises `SubscriptionLost` to
//!   the application on an abrupt end — "re-listen and refetch" — and does not re-listen by
//!   itself (`mcp/client/subscriptions.py:1-7,71-72,184-190`).
//! - rmcp 3.11.0: a client subscription ends `SubscriptionEnd::Abrupt` when "the transport
//!   closed without a final result. Call `Peer::listen` again after reconnecting; subscription
//!   streams are not resumable" (`src/service/client.rs:437-450`). A server serves
//!   `subscriptions/listen` only when its handler implements `accepted_subscription_filter`
//!   (default `None`: method not found, `src/handler/server.rs:534-545,178-190`).
//!
//! So the gap is not announced by the server (there is no event id to compare); the client SDKs
//! announce the end of the stream instead, and the application's refetch after it re-listens
//! covers what it missed. `client.subscriptions.on_abrupt_end` says which: `tell-app` (both SDKs)
//! or `relisten` (a client that takes the spec's "MAY reconnect" and re-listens on its own,
//! telling the application nothing: the loss is silent), or `keep-flag` (a client that neither
//! tells nor re-listens and keeps believing it is subscribed: go-sdk#1229). The oracle
//! `no-silent-notification-loss` (`oracle/subscriptions.rs`) judges it.

use serde::{Deserialize, Serialize};

/// A client's use of `subscriptions/listen` (`client.subscriptions`). The default opens no listen
/// stream (and is left out of traces, so traces recorded before it existed keep their bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientSubscriptions {
    /// In the modern era the application opens a `subscriptions/listen` stream when the client
    /// connects (the legacy era's standalone `GET` is `open_standalone_stream`).
    pub listen: bool,
    /// What an abrupt end of the listen stream (no graceful result) does.
    pub on_abrupt_end: AbruptEnd,
}

/// What the client does when its listen stream ends without the server's graceful result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AbruptEnd {
    /// The application is told the subscription was lost (python `SubscriptionLost`, rmcp
    /// `SubscriptionEnd::Abrupt`) and re-listens, refetching what it depends on once the new
    /// stream is acknowledged: what it missed is covered.
    #[default]
    TellApp,
    /// The client re-listens by itself and the application is told nothing (the spec's "MAY
    /// treat as a trigger to reconnect", subscriptions.mdx:156-158, and nothing more): what the
    /// server emitted in between is lost silently.
    Relisten,
    /// Neither: the stream's end is not reported to the subscription, which the client keeps
    /// believing open, and nothing re-listens; the application never hears another change
    /// (go-sdk `mcp/client.go:1388-1397`: the `resourceSubs` flag stays set when the listen stream
    /// ends without an error, and a second `Subscribe` is a no-op; modelcontextprotocol/go-sdk#1229).
    KeepFlag,
}

impl AbruptEnd {
    /// Whether the application is told at the abrupt end itself.
    pub fn tells_app(self) -> bool {
        self == AbruptEnd::TellApp
    }
}

/// A server's change notifications (`server.subscriptions`). The default publishes none, so the
/// steps below appear only in runs that ask for them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSubscriptions {
    /// At each `notify_interval` tick the server process publishes one change notification (a
    /// `notifications/tools/list_changed`) to every listen stream open on it at that instant, and
    /// records it (`change-emitted`) whether any is open or not. Listen requests are answered
    /// either way (the server application serves them: python's `MCPServer` by default,
    /// mcp/server/mcpserver/server.py:184,205-209; rmcp when the handler implements
    /// `accepted_subscription_filter`).
    pub changes: bool,
    /// How a change reaches listen streams: those of the process that emitted it
    /// (`per-process`, python's default `InMemorySubscriptionBus`) or those of every replica
    /// (`shared`, a bus over a pub/sub backend). Left out of traces at its default.
    #[serde(default, skip_serializing_if = "is_default")]
    pub bus: Bus,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// The fan-out of change notifications across a fleet (`server.subscriptions.bus`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bus {
    /// Each process writes its changes to its own listen streams only (python 2.3.0
    /// `InMemorySubscriptionBus`, mcp/server/subscriptions.py:94-125; rmcp's `SubscriptionSink`
    /// belongs to one request on one process).
    #[default]
    PerProcess,
    /// Every change reaches the listen streams of every replica ("Implement this over an external
    /// pub/sub backend (Redis, NATS, ...) to fan events out across replicas",
    /// mcp/server/subscriptions.py:72-80).
    Shared,
}

/// The id of a change notification: the process that emitted it and its number there, so that ids
/// never repeat across replicas and restarts.
pub fn change_id(prefix: &str, n: u32) -> String {
    format!("{prefix}-c{n}")
}

/// The text the application is handed when its subscription ends abruptly (python 2.3.0
/// mcp/client/subscriptions.py:186-190).
pub const LOST_ABRUPT: &str = "the subscription ended without the server's graceful close; re-listen and refetch";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_tell_app_rule_tells_the_application_at_an_abrupt_end() {
        let rule = |text: &str| serde_json::from_value::<AbruptEnd>(serde_json::Value::from(text)).unwrap();
        assert!(rule("tell-app").tells_app());
        assert!(!rule("relisten").tells_app(), "a client that re-listens on its own tells nothing");
        assert!(ClientSubscriptions::default().on_abrupt_end.tells_app());
    }
}
