#!/usr/bin/env python3
"""Harvests first-turn answers of a real model for the tool-call recovery corpus.

Sends each agent's rendered system prompt (`switchboard render AGENT`) and one task, with the
agent's built-in tools offered natively (OpenAI wire, as switchboard sends them), to an
OpenAI-compatible server such as llama-server, and writes one JSON line per answer: agent,
task, offered tool names, the answer text, and any native tool calls. The lines are labelled by
hand afterwards (call or not, which tool) into tests/data/tool-call-corpus.jsonl.

    python3 scripts/harvest-tool-call-corpus.py http://127.0.0.1:8089/v1 [DONE.jsonl] >> /tmp/harvest.jsonl

Tasks already answered in DONE.jsonl are skipped, so an interrupted harvest goes on. Answers are
capped at 400 tokens: a call is short, and a longer answer is no call however it ends.

Run from a project whose agents are the shipped ones (the repository root). The tool
definitions below mirror src/tools/mod.rs (descriptions shortened; the shapes are the same).
"""
import json
import subprocess
import sys
import urllib.request

S = {"type": "string"}
TOOLS = {
    "read": ("Read a text file under the project root. Lines come back numbered so you can cite path:N-M.",
             {"type": "object", "properties": {"path": S, "offset": {"type": "integer"}, "limit": {"type": "integer"}}, "required": ["path"]}),
    "list": ("List a directory under the project root; directories end with `/`.",
             {"type": "object", "properties": {"path": S}}),
    "glob": ("Find files whose project-relative path matches a glob such as `thoughts/**/*.md`.",
             {"type": "object", "properties": {"pattern": S, "path": S}, "required": ["pattern"]}),
    "grep": ("Search file contents with a regular expression; results are `path:line:text`.",
             {"type": "object", "properties": {"pattern": S, "path": S, "glob": S}, "required": ["pattern"]}),
    "write": ("Write a text file under `thoughts/` (parent folders are created).",
              {"type": "object", "properties": {"path": S, "content": S}, "required": ["path", "content"]}),
    "recall": ("Recall knowledge stored by analyze_file: notes ranked by match.",
               {"type": "object", "properties": {"query": S, "path": S, "kind": S, "limit": {"type": "integer"}}, "required": ["query"]}),
    "task": ("Delegate a task to a subagent and get its final answer back. Several task calls in one turn run in parallel.",
             {"type": "object", "properties": {"subagent_type": S, "description": S, "prompt": S}, "required": ["subagent_type", "prompt"]}),
}
AGENT_TOOLS = {
    "researcher": ["task", "read", "grep", "glob", "list", "write", "recall"],
    "planner": ["task", "read", "grep", "glob", "list"],
    "codebase-locator": ["grep", "glob", "list"],
    "thoughts-locator": ["grep", "glob", "list"],
    "codebase-analyzer": ["read", "grep", "glob", "list"],
    "thoughts-analyzer": ["read", "grep", "glob", "list"],
    "codebase-pattern-finder": ["read", "grep", "glob", "list"],
}
TASKS = {
    "researcher": [
        "What did we decide about the YAML parser, and why?",
        "Where is the retry policy for model requests decided?",
        "Why are agent paths confined to the project root, and how?",
        "How many repair turns does an agent get, and what happens after them?",
        "What did we decide about prompt templates?",
        "How are message ids allocated?",
        "What is the offline model provider for?",
        "Which decisions were made about the event log?",
        "How does the retrieval gate work?",
        "What does the knowledge store keep, and where?",
        "How are MCP servers started and restarted?",
        "What are the five outcomes of a session?",
        "How does webfetch keep requests away from private addresses?",
        "Where is the model selected when several are configured?",
        "What is a checkpoint workflow?",
        "How does resume continue a partial session?",
        "What did we decide about agent discovery precedence?",
        "How are tokens budgeted per hop?",
        "Which file decides how frontmatter is parsed quickly?",
        "What does the restate backend change?",
    ],
    "planner": [
        "Plan adding a --quiet flag to the run command.",
        "Plan making the default number of repair turns configurable in switchboard.toml.",
        "Plan a `--since DATE` filter for the sessions command.",
        "Plan logging the retry delay of each model retry in the trace view.",
        "Plan a lint warning for agents whose description is longer than 300 characters.",
        "Plan a `--limit N` option for the stats command.",
    ],
    "codebase-locator": [
        "Find the files that decide how a model request is retried.",
        "Find where the event log is written.",
        "Find the code that parses agent frontmatter.",
        "Find where webfetch checks addresses.",
        "Find the files of the MCP client.",
        "Find where the retrieval gate refuses calls.",
    ],
    "thoughts-locator": [
        "Find the decision records about the retrieval gate.",
        "Find documents about the YAML parser.",
        "Find documents about message ids.",
        "Find documents about repair turns.",
        "Find specs about the event log.",
        "Find documents about the knowledge store.",
    ],
    "codebase-analyzer": [
        "Explain how src/model/retry.rs decides whether a failure is retried.",
        "Explain how src/project.rs confines paths to the project root.",
        "Explain how src/runtime/truncation.rs continues a cut-off answer.",
    ],
    "thoughts-analyzer": [
        "Analyse thoughts/shared/decisions/2026-11-02-yaml-parser-serde-saphyr.md for its decisions.",
        "Analyse thoughts/shared/decisions/2026-11-10-repair-turns.md for its decisions.",
        "Analyse thoughts/shared/decisions/2026-11-06-path-confinement.md for its decisions.",
    ],
    "codebase-pattern-finder": [
        "Show how the command-line commands are declared, with one example.",
        "Show how tools report errors, with one example.",
    ],
}


def main():
    base = sys.argv[1].rstrip("/")
    done = set()
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            done = {(d["agent"], d["task"]) for d in map(json.loads, f)}
    for agent, tasks in TASKS.items():
        system = subprocess.run(["switchboard", "render", agent], capture_output=True, text=True, check=True).stdout
        tools = [{"type": "function", "function": {"name": n, "description": TOOLS[n][0], "parameters": TOOLS[n][1]}}
                 for n in AGENT_TOOLS[agent]]
        for task in tasks:
            if (agent, task) in done:
                continue
            body = {"model": "local", "temperature": 0.2, "max_tokens": 400,
                    "messages": [{"role": "system", "content": system}, {"role": "user", "content": task}],
                    "tools": tools}
            req = urllib.request.Request(base + "/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=900) as r:
                answer = json.load(r)
            msg = answer["choices"][0]["message"]
            print(json.dumps({"agent": agent, "task": task, "tools": AGENT_TOOLS[agent],
                              "finish_reason": answer["choices"][0].get("finish_reason"),
                              "text": msg.get("content") or "",
                              "native_calls": [c["function"]["name"] for c in msg.get("tool_calls") or []]}),
                  flush=True)


if __name__ == "__main__":
    main()
