//! `mcpsim probe`: the same questions asked of a real server over loopback.
pub mod rt_check;
