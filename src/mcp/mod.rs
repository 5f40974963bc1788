//! MCP both ways, on the official Rust SDK (`rmcp`).
//!
//! - [`client`]: tools from the MCP servers the project declares (`[mcp.NAME]`), started at
//!   session start, offered to agents that grant them as `NAME_tool` (or `mcp__NAME__tool`).
//! - The server side, `switchboard mcp`, is [`crate::serve`]: it runs sessions, so it lives above
//!   the runtime, which uses this module.
//! - [`names`]: the two spellings of an MCP tool's name, shared by grants, lint and the runtime.
//! - [`env`]: `${VAR}` in a server's declaration, expanded when it starts. Servers come from
//!   switchboard.toml and from opencode.json / .mcp.json (`crate::config::foreign_mcp`).
//!
//! docs/mcp.md is the user's page; thoughts/shared/decisions/2026-11-23-mcp-both-ways.md says why.

pub mod client;
pub mod env;
pub mod names;

pub use client::{CallRecord, McpTools, ServerReport};
