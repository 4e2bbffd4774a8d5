//! The MCP server: sessions, per-stream event logs, tools, idle expiry. (Being written.)

use crate::config::{ServerPolicy, ToolSpec};
use crate::http::{Frame, Request};
use crate::ids::{ConnId, SessionId};
use crate::time::Instant;
use crate::trace::StepKind;

/// Something the server asks its actor to do or record.
#[must_use]
#[derive(Clone, Debug, PartialEq)]
pub enum ServerOutput {
    /// Write a frame on a connection.
    Send { conn: ConnId, frame: Frame },
    /// Close a connection: after `Frame::End` for a clean end, or `abrupt` for a reset.
    Close { conn: ConnId, abrupt: bool },
    /// Record a step.
    Record(StepKind),
}

/// The server's state.
#[derive(Debug)]
pub struct Server {
    _policy: ServerPolicy,
}

impl Server {
    /// A fresh server process. `epoch` counts restarts (it goes into session ids so that ids
    /// never repeat across restarts); `id_seed` seeds the opaque ids some schemes need.
    pub fn new(policy: ServerPolicy, _tools: Vec<ToolSpec>, _epoch: u32, _id_seed: u64) -> Self {
        Server { _policy: policy }
    }

    /// A request arrived on `conn`.
    pub fn handle_request(&mut self, _now: Instant, _conn: ConnId, _request: Request) {
        todo!()
    }

    /// The peer closed `conn` (client gone, load balancer cut).
    pub fn handle_disconnect(&mut self, _now: Instant, _conn: ConnId) {
        todo!()
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, _now: Instant) {
        todo!()
    }

    /// When `handle_timeout` must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        todo!()
    }

    pub fn poll_output(&mut self) -> Option<ServerOutput> {
        todo!()
    }

    /// The process dies: records the loss of every session and running tool.
    pub fn crash(&mut self, _now: Instant) {
        todo!()
    }

    /// Sessions the server still knows.
    pub fn live_sessions(&self) -> Vec<SessionId> {
        todo!()
    }
}
