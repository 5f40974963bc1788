//! All integration tests in one binary: one link instead of thirty, which keeps a
//! fresh `cargo test` inside the CI disk and time budget (each test binary links every
//! dependency). Each file is one module; shared helpers live in `tests/support/`,
//! which the benches include too.

#[path = "../support/mod.rs"]
mod support;

mod cli_check;
mod cli_errors;
mod conformance;
mod conformance_json;
mod contract_props;
mod contract_scaling;
mod delegation_props;
mod deliver;
mod eval_cli;
mod event_log_compat;
mod evidence_goal;
mod fixed_copy;
mod gate;
mod grep_output;
mod heap;
mod json_cli;
mod json_runtime;
mod knowledge;
mod knowledge_embeddings;
mod lint_evidence;
mod lint_rules;
mod lint_watch;
mod loader;
mod local_model;
mod mcp;
mod offline_foreign;
mod offline_quality;
mod outcomes;
mod pipelines;
mod providers;
mod providers_real;
mod providers_runtime;
mod read_first;
mod recovery_corpus;
mod repeated_calls;
#[cfg(feature = "restate")]
mod restate;
mod runtime_e2e;
mod runtime_limits;
mod runtime_resume;
mod telemetry;
mod tool_choice;
mod tool_confinement;
mod trace_page;
mod validators;
mod verification_commands;
mod webfetch;
mod workflow;
