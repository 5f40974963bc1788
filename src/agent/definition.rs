//! The typed agent definition, parsed from one file's frontmatter and body.

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use super::grants::{ToolGrants, ToolsDecl};
use super::permission::Permission;
use super::references::DelegationRef;
use crate::contract::{Contract, ContractDecl};

/// Where an agent may run: as a session's entry point, as a delegate, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Primary,
    Subagent,
    #[default]
    All,
}

impl Mode {
    pub fn can_be_delegated_to(self) -> bool {
        matches!(self, Mode::Subagent | Mode::All)
    }
    pub fn can_be_primary(self) -> bool {
        matches!(self, Mode::Primary | Mode::All)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Primary => "primary",
            Mode::Subagent => "subagent",
            Mode::All => "all",
        }
    }
}

/// `read_first:`: files the runtime reads for the agent before its first turn.
///
/// Why: Qwen2.5-Coder-1.5B, handed "Analyze thoughts/…/x.md", answered three turns about a
/// document it never opened, quoting invented lines. An analyzer's first step is always the same
/// `read` of the path it was given, so the runtime makes that call itself (a real `read`, logged
/// as one) and the model starts from the numbered lines it must cite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadFirst {
    /// Nothing is read ahead (the default).
    #[default]
    None,
    /// Files the task names (`dir/name.ext`, alone or as `path:N-M`) that exist inside the
    /// project root, at most [`crate::runtime::read_first::MAX_FILES`] of them.
    Named,
}

impl ReadFirst {
    pub fn is_none(&self) -> bool {
        *self == ReadFirst::None
    }
}

/// `delegate_first:` as written: one subagent's name, or a list of names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FirstDelegates(pub Vec<String>);

impl<'de> Deserialize<'de> for FirstDelegates {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = FirstDelegates;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a subagent's name, or a list of names")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FirstDelegates, E> {
                Ok(FirstDelegates(vec![v.to_string()]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<FirstDelegates, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element::<String>()? {
                    names.push(name);
                }
                Ok(FirstDelegates(names))
            }
        }
        d.deserialize_any(V)
    }
}

/// `budget:` as written: a token count, or a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum BudgetDecl {
    Tokens(u64),
    Detailed {
        tokens: Option<u64>,
        wall_seconds: Option<u64>,
        turns: Option<u32>,
        threshold: Option<u8>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DetailedBudget {
    #[serde(default)]
    tokens: Option<u64>,
    #[serde(default)]
    wall_seconds: Option<u64>,
    #[serde(default)]
    turns: Option<u32>,
    #[serde(default)]
    threshold: Option<u8>,
}

/// Shape-directed (see `ToolsDecl`): an integer is a token count, a mapping has named limits.
impl<'de> Deserialize<'de> for BudgetDecl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = BudgetDecl;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a token count, or {tokens, turns, wall_seconds, threshold}")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<BudgetDecl, E> {
                Ok(BudgetDecl::Tokens(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<BudgetDecl, A::Error> {
                let b =
                    DetailedBudget::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                if let Some(t) = b.threshold {
                    if !(1..=100).contains(&t) {
                        return Err(serde::de::Error::custom(format!(
                            "budget threshold {t} is not a percentage from 1 to 100 \
                             (e.g. `threshold: 60`)"
                        )));
                    }
                }
                Ok(BudgetDecl::Detailed {
                    tokens: b.tokens,
                    wall_seconds: b.wall_seconds,
                    turns: b.turns,
                    threshold: b.threshold,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// The agent's resource limits. When a hop has used `threshold` % (default
/// [`DEFAULT_THRESHOLD`]) of its tokens, its `turns` or its `wall_seconds`, the runtime asks it
/// for a checkpoint and ends it PARTIAL (tier 2); `resume` continues it with a fresh budget.
/// 100 % of the tokens stops it at once; the wall-clock limit ends a hop that hangs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Budget {
    pub tokens: Option<u64>,
    pub wall_seconds: Option<u64>,
    /// Model turns before the checkpoint threshold applies (a soft budget; `steps` stays the
    /// hard limit).
    pub turns: Option<u32>,
    /// Percentage of each limit at which the checkpoint is asked for.
    pub threshold: Option<u8>,
}

/// The checkpoint threshold when `budget.threshold` is not set: 60 % of each declared limit.
pub const DEFAULT_THRESHOLD: u8 = 60;

impl Budget {
    /// The threshold as a fraction (0.6 by default).
    pub fn threshold_fraction(&self) -> f64 {
        f64::from(self.threshold.unwrap_or(DEFAULT_THRESHOLD)) / 100.0
    }
}

impl From<BudgetDecl> for Budget {
    fn from(d: BudgetDecl) -> Self {
        match d {
            BudgetDecl::Tokens(t) => Budget {
                tokens: Some(t),
                ..Budget::default()
            },
            BudgetDecl::Detailed {
                tokens,
                wall_seconds,
                turns,
                threshold,
            } => Budget {
                tokens,
                wall_seconds,
                turns,
                threshold,
            },
        }
    }
}

/// The frontmatter keys switchboard reads; every other key draws a warning.
pub const KNOWN_KEYS: &[&str] = &[
    "name",
    "description",
    "mode",
    "model",
    "temperature",
    "top_p",
    "max_tokens",
    "tools",
    "permission",
    "steps",
    "maxSteps",
    "maxTurns",
    "disable",
    "hidden",
    "color",
    "contract",
    "budget",
    "gate",
    "validator",
    "workflow",
    "deliver",
    "read_first",
    "tool_choice",
    "search_first",
    "delegate_first",
    "analyze_found",
    "evidence_goal",
];

/// Keys other runtimes define that switchboard does not use: a note, not a warning, so
/// Claude Code and opencode folders load without noise but nothing is ignored silently.
pub const FOREIGN_KEYS: &[&str] = &[
    "prompt",
    "permissionMode",
    "skills",
    "hooks",
    "mcpServers",
    "reasoningEffort",
    "textVerbosity",
    "options",
    "disallowedTools",
];

/// Descriptive metadata that agent catalogues and other tools write into agent files (who wrote
/// it, which version, how it is filed). It says nothing about how the agent runs, so it is
/// accepted silently: a collection carrying it must not drown real problems in warnings.
/// Documented in README ("Agent files from other tools").
pub const METADATA_KEYS: &[&str] = &[
    "author",
    "authors",
    "maintainer",
    "maintainers",
    "version",
    "license",
    "tags",
    "keywords",
    "category",
    "categories",
    "created",
    "updated",
    "date",
    "last_updated",
    "homepage",
    "repository",
    "source",
    "icon",
    "emoji",
];

/// Frontmatter exactly as deserialized; positions kept where later checks report them.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawFrontmatter {
    #[serde(default)]
    pub name: Option<Spanned<String>>,
    #[serde(default)]
    pub description: Option<Spanned<String>>,
    #[serde(default)]
    pub mode: Option<Spanned<Mode>>,
    #[serde(default)]
    pub model: Option<Spanned<String>>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub top_p: Option<f64>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub tools: Option<Spanned<ToolsDecl>>,
    #[serde(default)]
    pub permission: Option<Permission>,
    #[serde(default, alias = "maxSteps", alias = "maxTurns")]
    pub steps: Option<u32>,
    #[serde(default)]
    pub disable: Option<bool>,
    #[serde(default)]
    pub hidden: Option<bool>,
    #[serde(default)]
    pub color: Option<String>,
    #[serde(default)]
    pub contract: Option<Spanned<ContractDecl>>,
    #[serde(default)]
    pub budget: Option<BudgetDecl>,
    #[serde(default)]
    pub gate: Option<Spanned<super::gate::GateDecl>>,
    pub validator: Option<String>,
    pub workflow: Option<String>,
    #[serde(default)]
    pub deliver: Option<Spanned<super::deliver::DeliverDecl>>,
    #[serde(default)]
    pub read_first: Option<Spanned<ReadFirst>>,
    #[serde(default)]
    pub tool_choice: Option<Spanned<crate::model::ToolChoice>>,
    #[serde(default)]
    pub search_first: Option<Spanned<String>>,
    #[serde(default)]
    pub delegate_first: Option<Spanned<FirstDelegates>>,
    #[serde(default)]
    pub analyze_found: Option<Spanned<bool>>,
    pub evidence_goal: Option<u32>,
}

/// An agent, ready for the runtime: normalised grants, a settled contract, the body in place.
#[derive(Debug, Clone, Serialize)]
pub struct Agent {
    pub name: String,
    pub description: String,
    pub mode: Mode,
    pub model: Option<String>,
    /// 1-based file line of the `model:` key, for lint.
    pub model_line: usize,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// Longest answer per model turn (frontmatter `max_tokens:`); over the provider's setting.
    /// Left out of `agents --json` when unset, so that output is unchanged for other agents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    pub tools: ToolGrants,
    /// 1-based file line of the `tools:` key (0 when absent), for lint.
    pub tools_line: usize,
    pub permission: Permission,
    /// Model turns allowed per hop.
    pub steps: Option<u32>,
    pub disable: bool,
    pub hidden: bool,
    pub color: Option<String>,
    /// The declaration as written (kept for lint and `agents --json`).
    pub contract_decl: Option<ContractDecl>,
    /// The settled contract; `None` when the agent declares none (its answers are not checked).
    pub contract: Option<Contract>,
    pub budget: Budget,
    /// Retrieval held back until a validated plan (`gate:`); left out of `agents --json` when
    /// unset, so that output is unchanged for other agents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<super::gate::Gate>,
    /// The checkpoint workflow the agent follows (`workflow/<name>.yaml`): it gets the `step`
    /// tool. Left out of `agents --json` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// What the agent owes besides its answer (`deliver:`): a file and its verified evidence.
    /// Left out of `agents --json` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deliver: Option<super::deliver::Deliver>,
    /// Files the runtime reads for the agent before its first turn (`read_first:`). Left out of
    /// `agents --json` when `none`.
    #[serde(skip_serializing_if = "ReadFirst::is_none")]
    pub read_first: ReadFirst,
    /// `required`: the agent's turns must be tool calls until it has made one
    /// ([`crate::model::ToolChoice`]). Left out of `agents --json` when `auto`.
    #[serde(skip_serializing_if = "crate::model::ToolChoice::is_auto")]
    pub tool_choice: crate::model::ToolChoice,
    /// The folder the runtime greps the task's words in before the first turn
    /// (`search_first:`, see `runtime::search_first`). Left out of `agents --json` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub search_first: Option<String>,
    /// The subagents the runtime hands the task to, word for word, before the first turn
    /// (`delegate_first:`, one name or a list): real `task` calls, made in one turn, so grants,
    /// permissions and a plan gate apply. Left out of `agents --json` when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delegate_first: Vec<String>,
    /// Whether the runtime also makes the analyses the `gate:` names next once the
    /// `delegate_first:` answers are in (`analyze_found: true`): each source's first found path
    /// to that source's analyzer, in one turn, before the agent's first turn. Why: shown both
    /// filled calls to copy, the 1.5B researcher made one `task` call that took its description
    /// from the code's call and its prompt from the document's, to a locator; the document's
    /// analysis ran 20 minutes and the code was read only after it (BENCHMARKS.md,
    /// "Twenty-seventh session", t1). Left out of `agents --json` when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub analyze_found: bool,
    /// Verified Evidence items a checked answer should hold (`evidence_goal:`). An accepted
    /// answer with fewer, but at least one, is asked once for more, with lines of its cited
    /// file it has not cited; the richer of the two answers goes up, so the ask never loses
    /// one. Left out of `agents --json` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence_goal: Option<u32>,
    /// Path relative to the project root.
    pub file: String,
    /// The system prompt template, as written.
    pub body: String,
    /// 1-based file line where the body starts, to map template lines back to the file.
    pub body_line: usize,
    /// False when the body is not a valid minijinja template and is used as plain text.
    pub body_is_template: bool,
    /// Variables the body reads that the runtime does not provide (found while parsing).
    pub unknown_variables: Vec<String>,
    /// Delegations the body mentions.
    pub references: Vec<DelegationRef>,
    /// The agent that reviews this agent's checked answers (`validator:`): accept, revise with
    /// private feedback, or reject (BLOCKED). Left out of `agents --json` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validator: Option<String>,
}

impl Agent {
    /// The message-id prefix: the contract's, else the agent's own name (path separators and
    /// upper case folded so the id stays one lowercase token).
    pub fn message_id_prefix(&self) -> String {
        self.contract
            .as_ref()
            .and_then(|c| c.message_id_prefix.clone())
            .unwrap_or_else(|| {
                self.name
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() {
                            c.to_ascii_lowercase()
                        } else {
                            '-'
                        }
                    })
                    .collect()
            })
    }
}
