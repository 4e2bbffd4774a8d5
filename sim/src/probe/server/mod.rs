//! `mcpsim probe server`: [`scenarios`] are short scripts through the fault proxy, each writing a
//! trace judged by the oracles and deciding fingerprint fields; [`keepalive`] times the server's
//! close of an idle kept-alive connection beside them; [`eras`] asks which protocol eras it serves; [`tasks`] watches its task store; [`run`] runs them all and reports.

pub mod eras;
pub mod keepalive;
pub mod path;
pub mod run;
pub mod scenarios;
pub mod tasks;
