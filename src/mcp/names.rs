//! Names of MCP tools: switchboard offers `server_tool` (opencode's spelling) and accepts Claude
//! Code's `mcp__server__tool` in grants and calls. A server name is a `[mcp.NAME]` key.

/// The name the model is offered for tool `tool` of server `server`.
pub fn offered_name(server: &str, tool: &str) -> String {
    format!("{server}_{tool}")
}

/// Splits `mcp__server__tool` or `server_tool` into (server, tool) when `server` is one of
/// `servers`. For `server_tool` the longest configured server name wins, so servers `a` and
/// `a_b` do not shadow each other.
pub fn split<'a>(name: &'a str, servers: &[String]) -> Option<(String, &'a str)> {
    if let Some(rest) = name.strip_prefix("mcp__") {
        let (server, tool) = rest.split_once("__")?;
        return servers
            .iter()
            .find(|s| s.as_str() == server)
            .filter(|_| !tool.is_empty())
            .map(|s| (s.clone(), tool));
    }
    servers
        .iter()
        .filter(|s| {
            name.len() > s.len() + 1
                && name.starts_with(s.as_str())
                && name.as_bytes()[s.len()] == b'_'
        })
        .max_by_key(|s| s.len())
        .map(|s| (s.clone(), &name[s.len() + 1..]))
}

/// The server a grant names, for messages (`mcp__fs__x` and `fs_x` → `fs`).
pub fn server_part(name: &str) -> &str {
    match name.strip_prefix("mcp__") {
        Some(rest) => rest.split("__").next().unwrap_or(rest),
        None => name.split('_').next().unwrap_or(name),
    }
}

/// Whether a grant rule pattern may name tools of `server` (so the server is worth starting):
/// the server's name itself (`context7`, `mcp__context7`), a tool of it (`context7_x`), or a glob
/// other than a bare `*` that can match one of its tools (`sequential-thinking*`).
pub fn mentions(pattern: &str, server: &str) -> bool {
    // Grant patterns are lower case (`canonical_tool_name`); compare the server the same way.
    let server = server.to_ascii_lowercase();
    let server = server.as_str();
    if pattern == server || pattern == format!("mcp__{server}") {
        return true;
    }
    let prefixes = [format!("{server}_"), format!("mcp__{server}__")];
    if prefixes.iter().any(|p| pattern.starts_with(p.as_str())) {
        return true;
    }
    // A glob: its literal head must be compatible with one of the prefixes.
    match pattern.find(['*', '?', '[']) {
        Some(at) if pattern != "*" => {
            let head = &pattern[..at];
            !head.is_empty()
                && prefixes
                    .iter()
                    .any(|p| p.starts_with(head) || head.starts_with(p.as_str()))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_split_and_the_longest_server_wins() {
        let servers = vec!["fs".to_string(), "fs_extra".to_string()];
        assert_eq!(
            split("fs_read_file", &servers),
            Some(("fs".into(), "read_file"))
        );
        assert_eq!(
            split("fs_extra_x", &servers),
            Some(("fs_extra".into(), "x"))
        );
        assert_eq!(
            split("mcp__fs__read_file", &servers),
            Some(("fs".into(), "read_file"))
        );
        assert_eq!(split("mcp__git__log", &servers), None);
        assert_eq!(split("git_log", &servers), None);
        assert_eq!(split("fs_", &servers), None);
        assert_eq!(split("read", &servers), None);
        assert_eq!(server_part("mcp__git__log"), "git");
        assert_eq!(server_part("git_log"), "git");
        assert!(mentions("fs_*", "fs") && mentions("mcp__fs__read", "fs"));
        assert!(!mentions("fsx_read", "fs"));
        assert!(mentions("fs", "fs") && mentions("mcp__fs", "fs"));
        assert!(mentions("sequential-thinking*", "sequential-thinking"));
        assert!(mentions("seq*", "sequential-thinking"));
        assert!(!mentions("*", "fs") && !mentions("git*", "fs") && !mentions("fsx", "fs"));
    }
}
