//! `mcpsim probe server`: [`scenarios`] are short scripts through the fault proxy, each writing a
//! trace judged by the oracles and deciding fingerprint fields; [`keepalive`] times the server's
//! close of an idle kept-alive connection beside them; [`run`] runs them all and reports.

pub mod keepalive;
pub mod path;
pub mod run;
pub mod scenarios;
