//! MCP both ways, against real third-party programs installed by `scripts/fetch-test-deps.sh`:
//! the reference server `@modelcontextprotocol/server-everything` (npm) over stdio and over
//! streamable HTTP on 127.0.0.1, a server written with the Python SDK that dies mid-call, and the
//! Python SDK's client driving `switchboard mcp`. Missing dependencies fail the tests (they are
//! not skipped), naming the script.

use std::path::{Path, PathBuf};

use serde_json::Value;
use switchboard::config::Config;
use switchboard::mcp::{CallRecord, ServerReport};
use switchboard::project::Project;
use switchboard::runtime::{Event, EventKind};

fn cache() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache")
}

/// The installed reference server, or a failure that says how to install it.
fn everything() -> PathBuf {
    let bin = cache().join("npm/node_modules/.bin/mcp-server-everything");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/fetch-test-deps.sh (CI's .ci/run does) before cargo test",
        bin.display()
    );
    bin
}

/// The venv's Python with the `mcp` SDK, or a failure that says how to install it.
fn python() -> PathBuf {
    let bin = cache().join("venv/bin/python");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/fetch-test-deps.sh (CI's .ci/run does) before cargo test",
        bin.display()
    );
    bin
}

/// Runs agent `lead` (granted `tools`) with `[mcp.*]` config `toml`, on a script of tool calls.
async fn run_lead(
    tools: &str,
    toml: &str,
    calls: &[(&str, &str)],
) -> (tempfile::TempDir, Vec<Event>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/lead.md"),
        format!("---\ndescription: uses MCP tools\nmode: primary\ntools: {tools}\n---\nWork.\n"),
    )
    .unwrap();
    let config = Config::parse(toml, "switchboard.toml").unwrap();
    let project = Project::open(dir.path()).unwrap();
    let mut script = String::from("agents:\n  lead:\n    - turns:\n");
    for (name, args) in calls {
        script.push_str(&format!(
            "        - tool_calls:\n            - name: {name}\n              arguments: {args}\n"
        ));
    }
    script.push_str("        - content: done\n");
    let (outcome, events) =
        crate::support::scripted::run_agent(&project, config, &script, "lead", "x").await;
    assert_eq!(outcome.answer, "done", "{outcome:?}");
    (dir, events)
}

fn servers(events: &[Event]) -> Vec<&ServerReport> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::McpServer(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn calls(events: &[Event]) -> Vec<&CallRecord> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::McpCall(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn results(events: &[Event]) -> Vec<(bool, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                is_error, output, ..
            } => Some((*is_error, output.clone())),
            _ => None,
        })
        .collect()
}

fn offered_tools(events: &[Event]) -> Option<usize> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::ModelRequest { tools, .. } => Some(*tools),
        _ => None,
    })
}

#[tokio::test]
async fn reference_server_over_stdio_gives_granted_tools_only() {
    let toml = format!(
        "[mcp.every]\ncommand = \"{}\"\nargs = [\"stdio\"]\nstartup_timeout_secs = 30\n",
        everything().display()
    );
    let (_dir, events) = run_lead(
        "[read, every_echo, mcp__every__get-sum]",
        &toml,
        &[
            ("every_echo", "{message: hello}"),
            ("mcp__every__get-sum", "{a: 2, b: 40}"),
            ("every_get-env", "{}"),
            ("mcp__every__get-sum", "{a: nope}"),
            ("every_echo", "{message: again}"),
        ],
    )
    .await;
    let started = servers(&events);
    assert_eq!(started.len(), 1);
    assert_eq!(started[0].error, None, "{started:?}");
    assert!(started[0].tools.iter().any(|t| t == "echo"), "{started:?}");
    // read + echo + get-sum, though the server lists many more tools.
    assert_eq!(offered_tools(&events), Some(3));
    let c = calls(&events);
    assert_eq!(c.len(), 5, "{c:?}");
    assert!(c[..2]
        .iter()
        .all(|c| !c.is_error && !c.restarted && c.server == "every"));
    let r = results(&events);
    assert!(!r[0].0 && r[0].1.contains("hello"), "{r:?}");
    assert!(!r[1].0 && r[1].1.contains("42"), "{r:?}");
    // Listed by the server but not granted: refused, and the model is told why.
    assert!(c[2].is_error);
    assert!(
        r[2].0 && r[2].1.contains("not granted to agent `lead`"),
        "{r:?}"
    );
    // Bad arguments are the tool's error, not a dead server: no restart, the next call works.
    assert!(c[3].is_error && !c[3].restarted, "{c:?}");
    assert!(r[3].0, "{r:?}");
    assert!(
        !c[4].is_error && !c[4].restarted && r[4].1.contains("again"),
        "{r:?}"
    );
}

#[tokio::test]
async fn reference_server_over_streamable_http() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut child = tokio::process::Command::new(everything())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Wait until it listens.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "server-everything did not listen"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let toml = format!("[mcp.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\n");
    let (_dir, events) = run_lead("[web_*]", &toml, &[("web_echo", "{message: over-http}")]).await;
    let started = servers(&events);
    assert_eq!(started[0].transport, "http");
    assert_eq!(started[0].error, None, "{started:?}");
    let c = calls(&events);
    assert_eq!(c.len(), 1);
    assert!(!c[0].is_error);
    let r = results(&events);
    assert!(!r[0].0 && r[0].1.contains("over-http"), "{r:?}");
    let _ = child.kill().await;
}

#[tokio::test]
async fn a_server_that_fails_to_start_or_hangs_costs_a_warning_not_the_session() {
    let toml = "[mcp.gone]\ncommand = \"/nonexistent/mcp-server\"\n\
                [mcp.slow]\ncommand = \"sleep\"\nargs = [\"30\"]\nstartup_timeout_secs = 1\n";
    let clock = std::time::Instant::now();
    let (_dir, events) = run_lead("[read, gone_*, slow_*]", toml, &[("gone_x", "{}")]).await;
    assert!(clock.elapsed() < std::time::Duration::from_secs(20));
    let s = servers(&events);
    assert_eq!(s.len(), 2);
    let gone = s.iter().find(|r| r.server == "gone").unwrap();
    assert!(
        gone.error.as_deref().unwrap().contains("cannot start"),
        "{gone:?}"
    );
    let slow = s.iter().find(|r| r.server == "slow").unwrap();
    assert!(
        slow.error
            .as_deref()
            .unwrap()
            .contains("no answer within 1 s"),
        "{slow:?}"
    );
    assert_eq!(offered_tools(&events), Some(1));
    let r = results(&events);
    assert!(
        r[0].0,
        "a call of a missing server's tool is a tool error: {r:?}"
    );
}

#[tokio::test]
async fn a_server_that_dies_mid_call_is_restarted_once() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/flaky_server.py");
    let toml = format!(
        "[mcp.flaky]\ncommand = \"{}\"\nargs = [\"{}\"]\nstartup_timeout_secs = 30\n\
         call_timeout_secs = 2\n",
        python().display(),
        script.display()
    );
    let (dir, events) = run_lead(
        "[flaky_*]",
        &toml,
        &[
            ("flaky_slow", "{}"),
            ("flaky_reject", "{}"),
            ("flaky_flaky", "{}"),
            ("flaky_die", "{}"),
            ("flaky_flaky", "{}"),
        ],
    )
    .await;
    let c = calls(&events);
    let r = results(&events);
    // The fifth call repeats the third, which failed: the hop does not run it again.
    assert_eq!(c.len(), 4, "{c:?}");
    // A call that hangs: a tool error after `call_timeout_secs`, no restart.
    assert!(c[0].is_error && !c[0].restarted, "{c:?}");
    assert!(r[0].1.contains("did not answer `slow` within 2 s"), "{r:?}");
    // An error answer is the tool's error, not a dead server: no restart is spent on it.
    assert!(c[1].is_error && !c[1].restarted, "{c:?}");
    assert!(r[1].1.contains("rejected on purpose"), "{r:?}");
    // The server died during the call: it was restarted, but the call was not sent again
    // (its side effect happened once) and the model reads why (issue #28 item 3).
    assert!(c[2].restarted && c[2].is_error, "{c:?}");
    assert!(r[2].1.contains("was not sent again"), "{r:?}");
    let side_effects = std::fs::read_to_string(dir.path().join("flaky.calls")).unwrap_or_default();
    assert_eq!(side_effects.lines().count(), 1, "{side_effects:?}");
    // It died again; no second restart.
    assert!(!c[3].restarted && c[3].is_error, "{c:?}");
    assert!(r[3].1.contains("already restarted once"), "{r:?}");
    // The session goes on; the repeated failed call is answered without running.
    assert!(r[4].0 && r[4].1.contains("made this exact"), "{r:?}");
}

/// A temp project with one subagent, `echoer`, and a scripted answer for it.
fn served_project() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/echoer.md"),
        "---\ndescription: answers in one line\nmode: subagent\ntools: [read]\n---\nAnswer.\n",
    )
    .unwrap();
    // `strict` owes an envelope and never gives one: the runtime's gate must say so.
    std::fs::write(
        dir.path().join("agent/strict.md"),
        "---\ndescription: owes an envelope\nmode: subagent\ntools: [read]\ncontract:\n  \
         extends: envelope\n  message_types: [STRICT_RESPONSE]\n  message_id_prefix: strict\n  \
         on_violation: mark\n---\nAnswer in the envelope.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("script.yaml"),
        "agents:\n  echoer:\n    - turns:\n        - content: echoer was here\n  \
         strict:\n    - turns:\n        - content: no envelope\n        - content: still none\n        \
         - content: none again\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("switchboard.toml"),
        "[model]\ndefault = \"scripted/script.yaml\"\n",
    )
    .unwrap();
    let root = dir.path().to_str().unwrap().to_string();
    (dir, root)
}

#[tokio::test]
async fn switchboard_mcp_serves_a_subagent_to_rmcps_client() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::ServiceExt;
    let (dir, root) = served_project();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
    cmd.args(["--root", &root, "mcp", "--agent", "echoer,strict"]);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>(),
        vec!["echoer", "strict"]
    );
    let mut params = CallToolRequestParams::new("echoer");
    params.arguments = serde_json::json!({"prompt": "say hi"}).as_object().cloned();
    let result = client.call_tool(params).await.unwrap();
    let s = result.structured_content.clone().unwrap();
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["answer"], "echoer was here");
    let session = s["session_id"].as_str().unwrap();
    assert!(dir
        .path()
        .join(".switchboard/sessions")
        .join(session)
        .join("events.jsonl")
        .exists());
    let text = result.content[0].as_text().unwrap().text.clone();
    assert!(
        text.contains(session) && text.contains("echoer was here"),
        "{text}"
    );
    client.cancel().await.unwrap();
}

#[test]
fn switchboard_mcp_serves_the_python_sdks_client() {
    let (_dir, root) = served_project();
    let out = std::process::Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py"))
        .args([env!("CARGO_BIN_EXE_switchboard"), &root, "echoer", "say hi"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tools"], serde_json::json!(["echoer"]));
    assert_eq!(v["is_error"], false);
    assert_eq!(v["structured"]["status"], "completed");
    assert!(
        v["text"].as_str().unwrap().contains("echoer was here"),
        "{v}"
    );
}

#[test]
fn lint_counts_a_configured_servers_tools_as_provided() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/lead.md"),
        "---\ndescription: d\nmode: primary\ntools: [read, fs_read_file, mcp__git__log]\n---\nWork.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("switchboard.toml"),
        "[mcp.fs]\ncommand = \"x\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args([
            "--root",
            dir.path().to_str().unwrap(),
            "lint",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mcp__git__log"), "{text}");
    assert!(text.contains("[mcp.git]"), "{text}");
    assert!(!text.contains("grants `fs_read_file`"), "{text}");
    assert!(!text.contains("agent/unknown-tool"), "{text}");
}

/// `agents --tools` starts the configured servers and lists the MCP tools each agent is offered;
/// plain `agents --json` starts nothing.
#[test]
fn agents_tools_lists_offered_mcp_tools() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/lead.md"),
        "---\ndescription: d\nmode: primary\ntools: [read, every_echo]\n---\nWork.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("switchboard.toml"),
        format!(
            "[mcp.every]\ncommand = \"{}\"\nargs = [\"stdio\"]\nstartup_timeout_secs = 30\n",
            everything().display()
        ),
    )
    .unwrap();
    let agents = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["--root", dir.path().to_str().unwrap(), "agents", "--json"])
            .args(extra)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["agents"][0]["offered_tools"].clone()
    };
    assert_eq!(agents(&[]), serde_json::json!(["read"]));
    assert_eq!(
        agents(&["--tools"]),
        serde_json::json!(["read", "every_echo"])
    );
}

/// Runs agent `lead` (granted `tools`) in `dir`, whose config is whatever `Config::load` finds
/// there (switchboard.toml, opencode.json, .mcp.json), on a script of tool calls.
async fn run_lead_in(dir: &Path, tools: &str, calls: &[(&str, &str)]) -> Vec<Event> {
    std::fs::create_dir_all(dir.join("agent")).unwrap();
    std::fs::write(
        dir.join("agent/lead.md"),
        format!("---\ndescription: uses MCP tools\nmode: primary\ntools: {tools}\n---\nWork.\n"),
    )
    .unwrap();
    let project = Project::open(dir).unwrap();
    let config = Config::load(&project).unwrap();
    let mut script = String::from("agents:\n  lead:\n    - turns:\n");
    for (name, args) in calls {
        script.push_str(&format!(
            "        - tool_calls:\n            - name: {name}\n              arguments: {args}\n"
        ));
    }
    script.push_str("        - content: done\n");
    let (outcome, events) =
        crate::support::scripted::run_agent(&project, config, &script, "lead", "x").await;
    assert_eq!(outcome.answer, "done", "{outcome:?}");
    events
}

/// opencode declares a local server as a command array with `environment`, and grants a whole
/// server by its name (`every: true`); switchboard starts it from opencode.json and offers every
/// tool of it (#28 item 6).
#[tokio::test]
async fn a_server_opencode_json_declares_starts_and_its_name_grants_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("opencode.json"),
        format!(
            r#"{{"mcp": {{"every": {{"type": "local", "command": ["{}", "stdio"],
                "environment": {{"SB_FROM": "{{env:CARGO_PKG_NAME}}"}}, "timeout": 30000}},
              "unused": {{"type": "local", "command": ["/nonexistent/never-started"]}}}}}}"#,
            everything().display()
        ),
    )
    .unwrap();
    let events = run_lead_in(
        dir.path(),
        "{\"*\": false, read: true, every: true}",
        &[("every_echo", "{message: from-opencode}")],
    )
    .await;
    let started = servers(&events);
    // Only the granted server is started.
    assert_eq!(started.len(), 1, "{started:?}");
    assert_eq!(
        (started[0].server.as_str(), started[0].error.as_deref()),
        ("every", None)
    );
    // read + every tool the server lists.
    assert_eq!(offered_tools(&events), Some(1 + started[0].tools.len()));
    let r = results(&events);
    assert!(!r[0].0 && r[0].1.contains("from-opencode"), "{r:?}");
}

/// A remote server's headers are sent with `${VAR}` expanded at start, and the value never
/// reaches an event; a missing variable and Claude Code's legacy SSE transport are said plainly,
/// at start and to a model that calls such a server's tool anyway.
#[tokio::test]
async fn remote_headers_are_expanded_and_never_logged_and_unsupported_servers_say_why() {
    // A server that records what it is sent and refuses everyone.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = vec![0u8; 16384];
            let n = socket.read(&mut buf).await.unwrap_or(0);
            record
                .lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
            let _ = socket
                .write_all(
                    b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
        }
    });
    let secret = "tok-28-f00d-not-for-logs";
    std::env::set_var("SB_ITEM28_TOKEN", secret);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".mcp.json"),
        format!(
            r#"{{"mcpServers": {{
                "keyed": {{"type": "http", "url": "http://127.0.0.1:{port}/mcp",
                           "headers": {{"Authorization": "Bearer ${{SB_ITEM28_TOKEN}}"}}}},
                "unset": {{"type": "http", "url": "http://127.0.0.1:{port}/mcp",
                           "headers": {{"X-Key": "${{SB_ITEM28_SURELY_UNSET}}"}}}},
                "legacy": {{"type": "sse", "url": "http://127.0.0.1:{port}/sse"}}}}}}"#
        ),
    )
    .unwrap();
    let events = run_lead_in(
        dir.path(),
        "{read: true, keyed: true, unset: true, legacy: true}",
        &[("legacy_search", "{}"), ("unset_x", "{}")],
    )
    .await;
    let s = servers(&events);
    assert_eq!(s.len(), 3, "{s:?}");
    let by = |name: &str| s.iter().find(|r| r.server == name).unwrap();
    assert!(by("keyed").error.is_some(), "the server refuses: {s:?}");
    let sent = seen.lock().unwrap().to_ascii_lowercase();
    assert!(
        sent.contains(&format!("authorization: bearer {secret}")),
        "the expanded header is sent: {sent}"
    );
    let unset = by("unset").error.clone().unwrap();
    assert!(
        unset.contains("`headers.X-Key` uses ${SB_ITEM28_SURELY_UNSET}, which is not set"),
        "{unset}"
    );
    let legacy = by("legacy").error.clone().unwrap();
    assert!(
        legacy.contains("legacy SSE transport") && legacy.contains(".mcp.json"),
        "{legacy}"
    );
    // A call of a tool of a server that did not start is a tool error that says why.
    let r = results(&events);
    assert!(
        r[0].0 && r[0].1.contains("could not be started this session"),
        "{r:?}"
    );
    assert!(r[0].1.contains("legacy SSE transport"), "{r:?}");
    assert!(r[1].0 && r[1].1.contains("SB_ITEM28_SURELY_UNSET"), "{r:?}");
    // The secret is in no event, the session log included.
    let log = serde_json::to_string(&events).unwrap();
    assert!(
        !log.contains(secret),
        "the header value leaked into the events"
    );
}

/// Issue #28 item 4: `switchboard mcp` answers every line it cannot use with a JSON-RPC error
/// (the id when it can be read, `null` otherwise) instead of dropping it while the client waits;
/// a line of 16 MiB or more is answered and skipped; the connection then still serves.
#[tokio::test]
async fn switchboard_mcp_answers_bad_input_with_json_rpc_errors() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (_dir, root) = served_project();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["--root", &root, "mcp", "--agent", "echoer"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut big = vec![b'x'; 16 * 1024 * 1024 + 1];
    big.push(b'\n');
    let cases: Vec<(Vec<u8>, i64, serde_json::Value)> = vec![
        (b"not json\n".to_vec(), -32700, serde_json::Value::Null),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}\n".to_vec(),
            -32700,
            serde_json::Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":2,"method":"ping","x":"\ud800"}"#.to_vec(),
            -32700,
            serde_json::Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[]}"#.to_vec(),
            -32602,
            serde_json::json!(3),
        ),
        (
            br#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#.to_vec(),
            -32600,
            serde_json::json!(4),
        ),
        (
            br#"{"id":5,"method":"ping"}"#.to_vec(),
            -32600,
            serde_json::json!(5),
        ),
        (
            br#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#.to_vec(),
            -32600,
            serde_json::Value::Null,
        ),
        (big, -32600, serde_json::Value::Null),
    ];
    for (mut line, code, id) in cases {
        if line.last() != Some(&b'\n') {
            line.push(b'\n');
        }
        stdin.write_all(&line).await.unwrap();
        stdin.flush().await.unwrap();
        let mut reply = String::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            stdout.read_line(&mut reply),
        )
        .await
        .expect("a reply, not silence")
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(v["error"]["code"], code, "{reply}");
        assert_eq!(v["id"], id, "{reply}");
    }
    // The same connection still serves a good request.
    let init = r#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    stdin
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    let mut reply = String::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stdout.read_line(&mut reply),
    )
    .await
    .expect("an answer to initialize")
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(v["id"], 9, "{reply}");
    assert!(v.get("result").is_some(), "{reply}");
}
