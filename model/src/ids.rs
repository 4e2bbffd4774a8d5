//! Identifiers, each a newtype with one documented text form.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::{Arc, LazyLock};

/// The `Mcp-Session-Id` a server mints on `initialize`. Opaque to the client. The text is shared
/// (`Arc<str>`): ids are copied into every step, timer and log entry that names them, and a copy is
/// then a count, not an allocation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(pub Arc<str>);

/// The empty id: the implicit context a server without sessions serves every request in, and the
/// name a client holding no session gives its streams (`Client::app_session`), so that the events
/// the server records and those the application is handed name the same session. One shared
/// copy: an `Arc<str>` cannot be built in a `const`.
pub static NO_SESSION: LazyLock<SessionId> = LazyLock::new(|| SessionId::from(""));

impl SessionId {
    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where something happened, for a sentence: "in session 0-1", or "with no session" for the
    /// empty id a sessionless server (or a modern request) works under.
    pub fn placed(&self) -> Placed<'_> {
        Placed(self)
    }
}

/// [`SessionId::placed`]'s phrase.
pub struct Placed<'a>(&'a SessionId);

impl std::fmt::Display for Placed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 .0.is_empty() {
            f.write_str("with no session")
        } else {
            write!(f, "in session {}", self.0)
        }
    }
}

/// The SSE `id` field, sent back by a resuming client as `Last-Event-ID`. Opaque to the client;
/// each server profile has its own encoding (see `config::EventIdScheme`). Shared text, as
/// [`SessionId`]'s.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EventId(pub Arc<str>);

impl EventId {
    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A JSON-RPC request id, numbered by the client from 1 in each client process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(pub u64);

/// The application's identity for one logical tool call ("charge order 17"): the same key is sent
/// again whenever the call is re-sent, so the server's ledger can tell a duplicate execution from
/// two calls. It stands for the call's arguments, which a real re-send repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallKey(pub u32);

/// One HTTP exchange (one request, its response) on one connection, as numbered by whoever
/// opened it. Client, load balancer and server each have their own numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ConnId(pub u64);

/// A stream inside one server session: 0 is the standalone GET stream, n ≥ 1 the n-th POST
/// stream the session opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StreamNo(pub u32);

impl StreamNo {
    /// The standalone GET stream of a session.
    pub const STANDALONE: StreamNo = StreamNo(0);
}

macro_rules! display_as {
    ($ty:ty, $fmt:literal) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, $fmt, self.0)
            }
        }
    };
}

display_as!(SessionId, "{}");
display_as!(EventId, "{}");
display_as!(RequestId, "#{}");
display_as!(CallKey, "call{}");
display_as!(ConnId, "c{}");
display_as!(StreamNo, "stream{}");

impl From<&str> for EventId {
    fn from(s: &str) -> Self {
        EventId(s.into())
    }
}

impl From<String> for EventId {
    fn from(s: String) -> Self {
        EventId(s.into())
    }
}

impl From<String> for SessionId {
    fn from(s: String) -> Self {
        SessionId(s.into())
    }
}

impl From<&str> for SessionId {
    fn from(s: &str) -> Self {
        SessionId(s.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_id_reads_in_its_documented_text_form() {
        let shown = [
            SessionId::from("0-1").to_string(),
            EventId::from("0-1-4").to_string(),
            RequestId(3).to_string(),
            CallKey(2).to_string(),
            ConnId(7).to_string(),
            StreamNo(1).to_string(),
        ];
        assert_eq!(shown, ["0-1", "0-1-4", "#3", "call2", "c7", "stream1"]);
    }

    #[test]
    fn a_session_is_placed_in_words_and_the_empty_one_as_no_session() {
        assert_eq!(SessionId::from("0-1").placed().to_string(), "in session 0-1");
        assert_eq!(SessionId::from("").placed().to_string(), "with no session");
    }
}
