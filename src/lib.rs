//! switchboard: a runtime for multi-agent workflows whose agents are markdown files.
//!
//! Read ARCHITECTURE.md first: it names the modules and follows one delegation through them.

pub mod agent;
pub mod cli;
pub mod config;
pub mod contract;
pub mod eval;
pub mod knowledge;
pub mod lint;
pub mod markdown;
pub mod mcp;
pub mod model;
pub mod problem;
pub mod project;
pub mod report;
#[cfg(feature = "restate")]
pub mod restate;
pub mod runtime;
pub mod serve;
pub mod telemetry;
pub mod tools;
pub mod workflow;
pub mod yaml;
