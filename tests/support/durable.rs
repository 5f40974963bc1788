//! For the Restate tests and bench: a real `restate-server` (from .cache/npm, installed by
//! scripts/fetch-test-deps.sh) on free 127.0.0.1 ports with a temp data dir, `switchboard worker`
//! processes, a delegating project, and a scripted OpenAI-compatible model that answers by agent
//! (so replays and parallel children get the right reply) and counts what it was sent.

#![allow(dead_code)]

use axum::body::Bytes;
use axum::response::Response;
use axum::Router;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::mock::{answer, answer_json, answer_sse, call, Proto};

/// The installed server binary, or a failure that says how to install it.
pub fn server_binary() -> PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".cache/npm/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/fetch-test-deps.sh (CI's .ci/run does) before the restate tests",
        bin.display()
    );
    bin
}

/// A port nobody listens on right now, taken from below Linux's ephemeral range (32768–60999):
/// a port from inside it can be handed to some outgoing connection between this check and the
/// server's own bind, which CI saw as restate's "failed binding … Address in use". Each process
/// starts at its own offset so parallel test binaries rarely try the same ports.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let offset = std::process::id().wrapping_mul(37) % 12_000;
    for _ in 0..12_000 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 20_000 + ((offset + n) % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in 20000–31999 on 127.0.0.1")
}

/// A restate-server process: its ports and data dir survive a restart.
pub struct Server {
    child: Option<Child>,
    pub data: tempfile::TempDir,
    pub ingress: u16,
    pub admin: u16,
    node: u16,
}

impl Server {
    /// Starts a server on fresh ports; a start that loses a port to another process (the
    /// check in `free_port` and the server's bind are not atomic) is tried again on new ports.
    pub fn start() -> Server {
        let mut last = String::new();
        for _ in 0..3 {
            let mut s = Server {
                child: None,
                data: tempfile::tempdir().expect("data dir"),
                ingress: free_port(),
                admin: free_port(),
                node: free_port(),
            };
            match s.spawn() {
                Ok(()) => return s,
                Err(log) if log.contains("Address in use") => last = log,
                Err(log) => panic!("restate-server did not get ready: {log}"),
            }
        }
        panic!("restate-server did not get ready on three sets of ports: {last}")
    }

    fn spawn(&mut self) -> Result<(), String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data.path().join("server.log"))
            .expect("server log");
        let child = Command::new(server_binary())
            .arg("--no-logo")
            .arg("--base-dir")
            .arg(self.data.path())
            .env("RESTATE_LISTEN_MODE", "tcp")
            .env(
                "RESTATE_INGRESS__BIND_ADDRESS",
                format!("127.0.0.1:{}", self.ingress),
            )
            .env(
                "RESTATE_ADMIN__BIND_ADDRESS",
                format!("127.0.0.1:{}", self.admin),
            )
            .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{}", self.node))
            .env(
                "RESTATE_ADVERTISED_ADDRESS",
                format!("http://127.0.0.1:{}/", self.node),
            )
            .env("RESTATE_DISABLE_TELEMETRY", "true")
            .env("RESTATE_DEFAULT_NUM_PARTITIONS", "2")
            .env("RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE", "256MiB")
            .env("RESTATE_ADMIN__QUERY_ENGINE__MEMORY_SIZE", "64MiB")
            // A broken worker connection is retried quickly (the default starts at 500 ms).
            .env("RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL", "100ms")
            .env("RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL", "1s")
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start restate-server");
        self.child = Some(child);
        let ready = self.wait_ready();
        if ready.is_err() {
            self.kill();
        }
        ready
    }

    /// Ok once both health endpoints answer; the server's log when it exits first (a port
    /// taken, say) or is not ready within a minute.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let ready =
            |port: u16, path: &str| http_get(port, path).is_some_and(|(status, _)| status == 200);
        while Instant::now() < deadline {
            if ready(self.admin, "/health") && ready(self.ingress, "/restate/health") {
                return Ok(());
            }
            let exited = self.child.as_mut().map(|c| c.try_wait());
            if let Some(Ok(Some(status))) = exited {
                return Err(format!("exited ({status}): {}", self.log()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(self.log())
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data.path().join("server.log")).unwrap_or_default()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.admin)
    }

    pub fn on(&self) -> String {
        format!("restate://127.0.0.1:{}", self.ingress)
    }

    /// Kills the server (SIGKILL: nothing is flushed on the way out) and starts it again on the
    /// same ports and data.
    /// A port the killed server held can linger for a moment, so a bind refused as in use is
    /// tried again after a pause, up to three times.
    pub fn restart(&mut self) {
        self.kill();
        let mut last = String::new();
        for _ in 0..3 {
            match self.spawn() {
                Ok(()) => return,
                Err(log) if log.contains("Address in use") => {
                    last = log;
                    std::thread::sleep(Duration::from_secs(1));
                }
                Err(log) => panic!("restate-server did not come back: {log}"),
            }
        }
        panic!("restate-server did not come back on its ports: {last}")
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A plain HTTP/1.1 GET on 127.0.0.1: (status, body), `None` when nothing answers.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(1),
    )
    .ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, text))
}

/// A `switchboard worker` process serving `root` on 127.0.0.1:`port`.
pub struct Worker(Child);

impl Worker {
    pub fn start(root: &Path, server: &Server, port: u16) -> Worker {
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .current_dir(root)
            .args(["worker", "--restate", &server.admin_url(), "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start worker");
        // It prints one line once it is registered.
        let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).expect("worker output");
        assert!(
            line.contains("registered"),
            "worker did not register: {line:?}"
        );
        Worker(child)
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// SIGKILL: the worker dies in the middle of whatever it does.
    pub fn kill9(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A project whose primary `lead` delegates to `fast` and `slow` in one turn (in parallel),
/// then answers with what they said; its model is `mock/m` at `model`.
pub fn project(model: SocketAddr) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("project dir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("agent")).unwrap();
    std::fs::write(
        root.join("switchboard.toml"),
        format!(
            "[model]\ndefault = \"mock/m\"\n\n[providers.mock]\nprotocol = \"openai\"\n\
             base_url = \"http://{model}/v1\"\nretry_base_ms = 5\nrequest_timeout_secs = 30\n"
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("agent/lead.md"),
        "---\nname: lead\ndescription: Delegates to fast and slow.\nmode: primary\n\
         tools: {task: true}\npermission:\n  task: {\"*\": allow}\n---\nROLE=lead\n",
    )
    .unwrap();
    for name in ["fast", "slow"] {
        std::fs::write(
            root.join(format!("agent/{name}.md")),
            format!("---\nname: {name}\ndescription: Answers.\nmode: subagent\ntools: {{}}\n---\nROLE={name}\n"),
        )
        .unwrap();
    }
    dir
}

/// What the scripted model was asked, by key (`lead:1` is lead's first turn, `slow` the slow
/// worker's turn), and how long each agent's answer takes.
#[derive(Clone, Default)]
pub struct Model {
    pub addr: Option<SocketAddr>,
    counts: Arc<Mutex<HashMap<String, usize>>>,
    delays: Arc<Mutex<HashMap<String, Duration>>>,
    /// Requests being answered right now, and the most there ever were at once.
    in_flight: Arc<Mutex<(usize, usize)>>,
}

impl Model {
    pub async fn start() -> Model {
        let mut model = Model::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        model.addr = Some(listener.local_addr().expect("addr"));
        let state = model.clone();
        let app = Router::new().fallback(move |body: Bytes| {
            let state = state.clone();
            async move { state.answer(body).await }
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        model
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr.expect("started")
    }

    pub fn set_delay(&self, role: &str, d: Duration) {
        self.delays.lock().unwrap().insert(role.into(), d);
    }

    /// How many requests came for `key`.
    pub fn count(&self, key: &str) -> usize {
        self.counts.lock().unwrap().get(key).copied().unwrap_or(0)
    }

    /// The most requests the model was answering at one time.
    pub fn most_at_once(&self) -> usize {
        self.in_flight.lock().unwrap().1
    }

    pub fn counts(&self) -> HashMap<String, usize> {
        self.counts.lock().unwrap().clone()
    }

    async fn answer(&self, body: Bytes) -> Response {
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        let system = messages
            .iter()
            .find(|m| m["role"] == "system")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let role = ["lead", "fast", "slow"]
            .into_iter()
            .find(|r| system.contains(&format!("ROLE={r}")))
            .unwrap_or("unknown");
        let tool_outputs: Vec<String> = messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .filter_map(|m| m["content"].as_str().map(str::to_string))
            .collect();
        let key = match role {
            "lead" => format!("lead:{}", if tool_outputs.is_empty() { 1 } else { 2 }),
            r => r.to_string(),
        };
        *self.counts.lock().unwrap().entry(key.clone()).or_insert(0) += 1;
        let delay = self.delays.lock().unwrap().get(role).copied();
        {
            let mut f = self.in_flight.lock().unwrap();
            f.0 += 1;
            f.1 = f.1.max(f.0);
        }
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        self.in_flight.lock().unwrap().0 -= 1;
        let reply = match key.as_str() {
            "lead:1" => answer(
                "",
                vec![
                    call(
                        "c1",
                        "task",
                        json!({"subagent_type": "fast", "description": "f", "prompt": "go fast"}),
                    ),
                    call(
                        "c2",
                        "task",
                        json!({"subagent_type": "slow", "description": "s", "prompt": "go slow"}),
                    ),
                ],
            ),
            "lead:2" => answer(&format!("lead heard: {}", tool_outputs.join(" | ")), vec![]),
            r => answer(&format!("{r} says hello"), vec![]),
        };
        let stream = request["stream"].as_bool().unwrap_or(false);
        let (content_type, text) = if stream {
            ("text/event-stream", answer_sse(&reply, Proto::OpenAi))
        } else {
            (
                "application/json",
                answer_json(&reply, Proto::OpenAi).to_string(),
            )
        };
        Response::builder()
            .header("content-type", content_type)
            .body(text.into())
            .expect("response")
    }
}

/// CPU time (user + system) process `pid` used so far, from /proc (0 when it cannot be read).
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at state, field 3.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15, i.e. 11 and 12 after the state field; 100 ticks/s.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// Polls `f` until it holds or `limit` passes; false when it never held.
pub async fn wait_for(limit: Duration, f: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f()
}
