//! `mcpsim probe client`: a real MCP client observed from the server side, one [`runs`] per fault.

pub mod runs;
