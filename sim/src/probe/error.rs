//! What can stop a probe.

use thiserror::Error;

/// What can stop a probe.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ProbeError {
    #[error("bad url {url:?}: {problem}")]
    /// The URL is not `http://host[:port]/path`.
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        problem: String,
    },
    #[error("{0} is not a loopback address; pass --allow-remote to probe it anyway")]
    /// The URL's host is not loopback and remote probing was not allowed.
    NotLoopback(String),
    #[error("http: {0}")]
    /// An HTTP exchange failed.
    Http(String),
    #[error("timed out: {0}")]
    /// A request or a read took longer than its bound.
    Timeout(String),
    #[error("protocol: {0}")]
    /// The server answered something the probe cannot use.
    Protocol(String),
    #[error("{path}: {problem}")]
    /// A file, process or socket could not be used.
    Io {
        /// The file, process or socket.
        path: String,
        /// The error.
        problem: String,
    },
    #[error("no session: {0}")]
    /// `initialize` succeeded without an `Mcp-Session-Id` (a sessionless server).
    NoSession(String),
    #[error("nothing usable answered at {url}: {why}; no profile written")]
    /// `basics` could not complete an MCP `initialize` (connection refused, no HTTP, an answer
    /// that is no JSON-RPC): the probe reached nothing and decides nothing.
    Unreachable {
        /// The URL probed.
        url: String,
        /// The failed exchange, in one line.
        why: String,
    },
    #[error("no scenario {name:?} (known: {known})")]
    /// `--scenario` (or `--run`) named no probe scenario (run).
    UnknownScenario {
        /// The name given.
        name: String,
        /// The names known, comma-separated.
        known: String,
    },
}
