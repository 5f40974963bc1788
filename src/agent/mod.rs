//! Agent definitions: markdown files whose frontmatter declares a role and whose body is the
//! system prompt.
//!
//! Loading never drops a file silently: each ends as loaded, skipped (with a reason) or an error,
//! and every problem carries file:line:col.

pub mod definition;
pub mod deliver;
pub mod discovery;
pub mod frontmatter;
pub mod gate;
pub mod grants;
pub mod parse;
pub mod permission;
pub mod policy;
pub mod references;
pub mod render;
pub mod schema;
mod shape;

pub use definition::{Agent, Budget, Mode};
pub use discovery::{
    load, load_cached, AgentSet, FileReport, LoadOptions, ParseCache, STANDARD_DIRS,
};
pub use grants::ToolGrants;
pub use permission::{Action, Permission};
pub use policy::Refusal;
pub use references::{DelegationRef, DelegationRefKind};
