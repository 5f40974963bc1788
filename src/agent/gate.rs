//! `gate:` in an agent's frontmatter: retrieval is held back until the agent has a plan that
//! passed a JSON contract, and the plan then decides which tools and subagents retrieval may use
//! (docs/gate.md).
//!
//! ```yaml
//! gate:
//!   plan: analyst                       # an agent whose JSON answer is the plan, or an inline
//!                                       # `format: json` contract the `plan` tool call must pass
//!   sources_field: /required_sources    # where the plan lists its sources (a JSON pointer)
//!   sources:                            # what each source opens
//!     doc: [thoughts-locator, thoughts-analyzer]
//!     code: [grep, glob, read]
//!   ask: runtime                        # the runtime, not the model, asks the plan agent the
//!                                       # task word for word before the agent's first turn
//! ```
//!
//! This file reads and settles the declaration and reports what is wrong with it where it is
//! written. The runtime enforces it (`runtime/plan_gate.rs`); lint checks the names it uses
//! against the project (`lint/gates.rs`), because which agents and tools exist is a question
//! about the whole project, not about one file.

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

use crate::contract::{Contract, ContractDecl, ContractFormat};

/// The tool a gated agent submits its plan with (offered only to gated agents).
pub const PLAN_TOOL: &str = "plan";

/// Where the plan pointer looks when the declaration does not say.
pub const DEFAULT_SOURCES_FIELD: &str = "/required_sources";

/// Where the plan comes from, as written: a string names an agent, a mapping is a contract.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum PlanDecl {
    Agent(String),
    Contract(Box<ContractDecl>),
}

impl<'de> Deserialize<'de> for PlanDecl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = PlanDecl;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "the name of the agent that plans, or an inline `format: json` contract",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<PlanDecl, E> {
                Ok(PlanDecl::Agent(v.trim().to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<PlanDecl, A::Error> {
                ContractDecl::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|c| PlanDecl::Contract(Box::new(c)))
            }
        }
        d.deserialize_any(V)
    }
}

/// The `gate:` mapping as deserialized; names keep their positions for lint.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GateDecl {
    pub plan: Spanned<PlanDecl>,
    #[serde(default)]
    pub sources_field: Option<Spanned<String>>,
    pub sources: BTreeMap<String, Vec<Spanned<String>>>,
    #[serde(default)]
    pub ask: Option<Spanned<String>>,
}

/// Who asks the plan agent for the plan (`ask:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AskedBy {
    /// The model delegates to the plan agent itself (the default).
    #[default]
    Model,
    /// The runtime delegates the task to the plan agent, word for word, before the agent's
    /// first turn. A prompt that says "first, send the question word for word to the analyst"
    /// asks the model for something the runtime can do exactly; small models skip that step
    /// or paraphrase the question (decision 2026-11-25-small-models-drive-the-main-job).
    Runtime,
}

/// The plan's origin, settled.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanFrom {
    /// Delegating to this agent is the way to plan; its contract is the plan's contract and its
    /// answer, once it passes, is the plan. The agent's own `plan` tool call is held to the same
    /// contract.
    Agent(String),
    /// The agent submits the plan itself with the `plan` tool; this contract judges it.
    Contract(Box<Contract>),
}

/// A tool or agent name in the declaration, with where it is written (1-based file line and
/// column), so lint can point at it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateName {
    pub name: String,
    #[serde(skip)]
    pub line: usize,
    #[serde(skip)]
    pub col: usize,
}

/// A settled gate.
#[derive(Debug, Clone, Serialize)]
pub struct Gate {
    pub plan: PlanFrom,
    /// JSON pointer to the plan's list of sources.
    pub sources_field: String,
    /// Each source a plan may choose, and the tools and subagents it opens.
    pub sources: BTreeMap<String, Vec<GateName>>,
    /// Who asks the plan agent: the model, or the runtime before the first turn.
    pub ask: AskedBy,
    /// 1-based file line and column of `plan:`'s value.
    #[serde(skip)]
    pub plan_at: (usize, usize),
}

impl Gate {
    /// Every tool or agent some source opens.
    pub fn gated_names(&self) -> impl Iterator<Item = &str> {
        self.sources.values().flatten().map(|n| n.name.as_str())
    }

    /// The sources that open `name`.
    pub fn sources_opening(&self, name: &str) -> Vec<&str> {
        self.sources
            .iter()
            .filter(|(_, names)| names.iter().any(|n| n.name == name))
            .map(|(s, _)| s.as_str())
            .collect()
    }

    /// The plan agent's name, when the plan comes from one.
    pub fn plan_agent(&self) -> Option<&str> {
        match &self.plan {
            PlanFrom::Agent(a) => Some(a),
            PlanFrom::Contract(_) => None,
        }
    }
}

/// What is wrong with a declaration, with the 1-based line and column (in the YAML) it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GateError {
    pub message: String,
    pub help: String,
    pub line: usize,
    pub col: usize,
}

/// Settles a declaration; `line_offset` turns YAML lines into file lines.
pub(crate) fn settle(decl: &GateDecl, line_offset: usize) -> Result<Gate, GateError> {
    let at = |s: &serde_saphyr::Location| (s.line() as usize + line_offset, s.column() as usize);
    let plan_at = at(&decl.plan.referenced);
    let plan = match &decl.plan.value {
        PlanDecl::Agent(name) if name.is_empty() => {
            return Err(GateError {
                message: "`gate.plan` is empty".into(),
                help: "name the agent that plans (e.g. `plan: analyst`) or write an inline \
                       `format: json` contract"
                    .into(),
                line: plan_at.0,
                col: plan_at.1,
            })
        }
        PlanDecl::Agent(name) => PlanFrom::Agent(name.clone()),
        PlanDecl::Contract(c) => {
            let contract = Contract::resolve(c).map_err(|e| GateError {
                message: format!("invalid plan contract: {e}"),
                help: "write `plan:` as `{format: json, schema: …}` or name the agent that plans"
                    .into(),
                line: plan_at.0,
                col: plan_at.1,
            })?;
            if contract.format != ContractFormat::Json || contract.json.is_none() {
                return Err(GateError {
                    message: "a plan contract must have `format: json` and a `schema`".into(),
                    help: "a plan is a JSON object: declare `format: json` and the plan's schema"
                        .into(),
                    line: plan_at.0,
                    col: plan_at.1,
                });
            }
            PlanFrom::Contract(Box::new(contract))
        }
    };
    let sources_field = match &decl.sources_field {
        None => DEFAULT_SOURCES_FIELD.to_string(),
        Some(f) if f.value.starts_with('/') => f.value.clone(),
        Some(f) => {
            let (line, col) = at(&f.referenced);
            return Err(GateError {
                message: format!("`sources_field: {}` is not a JSON pointer", f.value),
                help: format!("write it as a JSON pointer, e.g. `/{}`", f.value),
                line,
                col,
            });
        }
    };
    if decl.sources.is_empty() {
        return Err(GateError {
            message: "`gate.sources` is empty: no plan could ever open retrieval".into(),
            help: "map each source a plan may choose to the tools and subagents it opens, e.g. \
                   `doc: [thoughts-locator, thoughts-analyzer]`"
                .into(),
            line: plan_at.0,
            col: 1,
        });
    }
    let sources = decl
        .sources
        .iter()
        .map(|(source, names)| {
            let names = names
                .iter()
                .map(|n| {
                    let (line, col) = at(&n.referenced);
                    GateName {
                        name: n.value.trim().to_string(),
                        line,
                        col,
                    }
                })
                .collect();
            (source.clone(), names)
        })
        .collect();
    let ask = match &decl.ask {
        None => AskedBy::Model,
        Some(a) => {
            let (line, col) = at(&a.referenced);
            match (a.value.trim(), &plan) {
                ("model", _) => AskedBy::Model,
                ("runtime", PlanFrom::Agent(_)) => AskedBy::Runtime,
                ("runtime", PlanFrom::Contract(_)) => {
                    return Err(GateError {
                        message: "`ask: runtime` needs a plan agent to ask".into(),
                        help: "name the agent that plans (`plan: analyst`), or drop `ask:` so \
                               the agent submits its plan with the `plan` tool"
                            .into(),
                        line,
                        col,
                    })
                }
                (other, _) => {
                    return Err(GateError {
                        message: format!("`ask: {other}` is neither `model` nor `runtime`"),
                        help: "write `ask: runtime` to have the runtime ask the plan agent \
                               before the first turn, or `ask: model` (the default)"
                            .into(),
                        line,
                        col,
                    })
                }
            }
        }
    };
    Ok(Gate {
        plan,
        sources_field,
        sources,
        ask,
        plan_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Gate, GateError> {
        let decl: GateDecl = serde_saphyr::from_str(yaml).expect("the test's YAML deserializes");
        settle(&decl, 0)
    }

    #[test]
    fn ask_says_who_asks_the_plan_agent() {
        let base = "plan: analyst\nsources:\n  doc: [read]\n";
        assert_eq!(parse(base).unwrap().ask, AskedBy::Model);
        assert_eq!(
            parse(&format!("{base}ask: runtime\n")).unwrap().ask,
            AskedBy::Runtime
        );
        let e = parse(&format!("{base}ask: nobody\n")).unwrap_err();
        assert!(e.message.contains("`ask: nobody`"), "{}", e.message);
        assert_eq!(e.line, 4);
        let inline =
            "plan: {format: json, schema: {type: object}}\nsources:\n  doc: [read]\nask: runtime\n";
        let e = parse(inline).unwrap_err();
        assert!(e.message.contains("needs a plan agent"), "{}", e.message);
    }

    #[test]
    fn a_plan_agent_and_its_sources_are_read_with_positions() {
        let gate = parse("plan: analyst\nsources:\n  doc: [thoughts-locator, read]\n").unwrap();
        assert_eq!(gate.plan_agent(), Some("analyst"));
        assert_eq!(gate.sources_field, DEFAULT_SOURCES_FIELD);
        let doc = &gate.sources["doc"];
        assert_eq!(doc[0].name, "thoughts-locator");
        assert_eq!((doc[0].line, doc[0].col), (3, 9));
        assert_eq!((doc[1].line, doc[1].col), (3, 27));
        assert_eq!(gate.sources_opening("read"), vec!["doc"]);
    }

    #[test]
    fn an_inline_plan_contract_must_be_json_with_a_schema() {
        let ok = parse(
            "plan: {format: json, schema: {type: object}}\nsources_field: /src\nsources: {a: [read]}\n",
        )
        .unwrap();
        assert!(matches!(ok.plan, PlanFrom::Contract(_)));
        assert_eq!(ok.sources_field, "/src");
        let e = parse("plan: {format: envelope}\nsources: {a: [read]}\n").unwrap_err();
        assert!(e.message.contains("format: json"), "{e:?}");
        assert_eq!((e.line, e.col), (1, 7));
    }

    #[test]
    fn a_sources_field_that_is_no_pointer_and_empty_sources_are_refused_where_written() {
        let e =
            parse("plan: a\nsources_field: required_sources\nsources: {x: [read]}\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.help.contains("/required_sources"), "{e:?}");
        let e = parse("plan: a\nsources: {}\n").unwrap_err();
        assert!(e.message.contains("empty"), "{e:?}");
    }
}
