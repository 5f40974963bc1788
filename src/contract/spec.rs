//! Contracts as data: what an agent's answer must look like, declared in its frontmatter.
//!
//! A prompt author adds a contract by writing YAML, never Rust. Built-ins are the same data,
//! defined here so they can be named (`contract: document-analysis`) and extended
//! (`contract: {extends: document-analysis, max_repairs: 1}`).

use super::schema::{JsonContract, SanitizeRule, SchemaSource};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The hard ceiling on excerpt length; a contract may lower it, never raise it.
pub const MAX_EXCERPT_LINES: u32 = 6;
/// Repair turns a violating answer gets when the contract does not say.
pub const DEFAULT_MAX_REPAIRS: u32 = 2;

/// What an agent's frontmatter says under `contract:`.
// One declaration per agent, parsed once: its size does not matter, and boxing the inline spec
// would change every caller that builds one.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ContractDecl {
    /// The name of a built-in contract.
    Named(String),
    /// An inline contract, optionally extending a built-in.
    Inline(ContractSpec),
}

/// Shape-directed rather than `untagged`: a string names a built-in, a mapping is inline. Errors
/// inside an inline contract (an unknown key, a bad value) keep their own message and position.
impl<'de> Deserialize<'de> for ContractDecl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ContractDecl;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a built-in contract name or an inline contract mapping")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ContractDecl, E> {
                Ok(ContractDecl::Named(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ContractDecl, A::Error> {
                ContractSpec::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ContractDecl::Inline)
            }
        }
        d.deserialize_any(V)
    }
}

/// The answer's shape: the markdown envelope, or exactly one JSON object validated against a
/// JSON Schema (docs/json-contracts.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContractFormat {
    #[default]
    Envelope,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidencePolicy {
    /// Every signal item must carry Evidence + Excerpt.
    Required,
    /// Evidence is not demanded, but any that is given is verified.
    #[default]
    Optional,
}

/// Whether the file paths an answer names in backticks (outside Evidence) must exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NamedPaths {
    /// Not checked: a path may be an example, a plan for a new file, or a guess.
    #[default]
    Unchecked,
    /// Every named path is a file inside the project root. For agents whose answer is
    /// a list of real paths (the locators): an invented path there sends the caller's next hop
    /// to a file that is not there.
    Exist,
}

/// What the runtime does with an answer that still violates after the repair turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnViolation {
    /// Fail the hop: the caller gets a tool error listing the violations.
    #[default]
    Fail,
    /// Hand the answer up, marked non-conformant, with the violations attached.
    Mark,
    /// Hand up the contract's declared `fallback` object instead, marked `fallback` (JSON only).
    Fallback,
    /// Envelope only: take out the items whose evidence still does not verify
    /// (`contract::trim`) and hand up the rest if it then holds the contract; fail otherwise.
    DropItems,
}

/// The type of an extra frontmatter field.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum FieldRule {
    Kind(FieldKind),
    OneOf { one_of: Vec<String> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// Any non-empty scalar.
    String,
    /// `YYYY-MM-DD`.
    Date,
    /// RFC 3339 with a zone.
    Timestamp,
    /// A file that exists inside the project root.
    Path,
}

/// A contract as written (every field optional so it can extend another).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ContractSpec {
    /// A built-in to start from; the fields given here override it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extends: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<ContractFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_types: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<BTreeMap<String, FieldRule>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<EvidencePolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt_max_lines: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_headings: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_sections: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub named_paths: Option<NamedPaths>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_violation: Option<OnViolation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repairs: Option<u32>,
    /// `format: json` only: the JSON Schema, inline or a path to a file in the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaSource>,
    /// `format: json` only: rules that fix an answer instead of rejecting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sanitize: Option<Vec<SanitizeRule>>,
    /// `format: json` only: the object handed up under `on_violation: fallback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<serde_json::Value>,
    /// `format: json` only: the field that holds the agent's one clarifying question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
}

/// A contract with every field settled: what the checker and the runtime work from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contract {
    pub name: String,
    pub format: ContractFormat,
    /// Allowed `message_type` values; empty means any UPPER_SNAKE_CASE type.
    pub message_types: Vec<String>,
    /// Prefix of runtime-allocated message ids; `None` means "the agent's name".
    pub message_id_prefix: Option<String>,
    pub fields: BTreeMap<String, FieldRule>,
    pub evidence: EvidencePolicy,
    pub excerpt_max_lines: u32,
    pub signal_headings: Vec<String>,
    pub required_sections: Vec<String>,
    pub named_paths: NamedPaths,
    pub on_violation: OnViolation,
    pub max_repairs: u32,
    /// The JSON half (schema, sanitize, fallback, question) when `format` is `json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json: Option<JsonContract>,
}

/// A contract declaration that cannot be settled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    #[error("unknown contract `{0}`; built-ins are: envelope, document-analysis")]
    Unknown(String),
    #[error("excerpt_max_lines must be between 1 and {MAX_EXCERPT_LINES}, not {0}")]
    ExcerptMax(u32),
    #[error("message type `{0}` is not UPPER_SNAKE_CASE")]
    MessageType(String),
    #[error("message_id_prefix `{0}` must be lowercase letters, digits and `-`")]
    Prefix(String),
    #[error("a `format: json` contract needs a `schema` (inline mapping or a path to a .json/.yaml file)")]
    JsonWithoutSchema,
    #[error("`{0}` is only meaningful with `format: json`")]
    JsonOnly(&'static str),
    #[error("`on_violation: drop_items` is only meaningful for an envelope contract: a JSON answer has no items to take out")]
    DropItemsOnJson,
    #[error("`on_violation: fallback` needs a `fallback:` object")]
    FallbackMissing,
    #[error("`fallback` must be a mapping (a JSON object)")]
    FallbackNotObject,
}

pub const BUILTIN_NAMES: &[&str] = &["envelope", "document-analysis"];

impl Contract {
    /// The generic envelope: ids, one thinking, one answer, any evidence verified.
    pub fn envelope() -> Self {
        Contract {
            name: "envelope".into(),
            format: ContractFormat::Envelope,
            message_types: Vec::new(),
            message_id_prefix: None,
            fields: BTreeMap::new(),
            evidence: EvidencePolicy::Optional,
            excerpt_max_lines: MAX_EXCERPT_LINES,
            signal_headings: Vec::new(),
            required_sections: Vec::new(),
            named_paths: NamedPaths::Unchecked,
            on_violation: OnViolation::Fail,
            max_repairs: DEFAULT_MAX_REPAIRS,
            json: None,
        }
    }

    /// The thoughts-analyzer contract: document metadata plus evidence on every signal item.
    pub fn document_analysis() -> Self {
        let mut fields = BTreeMap::new();
        fields.insert("source_document".into(), FieldRule::Kind(FieldKind::Path));
        fields.insert("document_date".into(), FieldRule::Kind(FieldKind::Date));
        fields.insert("document_status".into(), FieldRule::Kind(FieldKind::String));
        fields.insert(
            "reliability".into(),
            FieldRule::OneOf {
                one_of: vec!["High".into(), "Medium".into(), "Low".into()],
            },
        );
        Contract {
            name: "document-analysis".into(),
            message_types: vec!["DOCUMENT_ANALYSIS_RESPONSE".into()],
            message_id_prefix: Some("thoughts".into()),
            fields,
            evidence: EvidencePolicy::Required,
            signal_headings: vec!["Decision".into(), "Constraint".into(), "Spec".into()],
            ..Self::envelope()
        }
    }

    pub fn builtin(name: &str) -> Option<Self> {
        match name {
            "envelope" => Some(Self::envelope()),
            "document-analysis" => Some(Self::document_analysis()),
            _ => None,
        }
    }

    /// The built-in whose message types include `message_type`, for `check` without `--contract`.
    pub fn for_message_type(message_type: &str) -> Self {
        [Self::document_analysis()]
            .into_iter()
            .find(|c| c.message_types.iter().any(|t| t == message_type))
            .unwrap_or_else(Self::envelope)
    }

    /// Settles a declaration: resolves `extends`, applies overrides, validates the result.
    pub fn resolve(decl: &ContractDecl) -> Result<Self, ContractError> {
        let spec = match decl {
            ContractDecl::Named(name) => {
                return Self::builtin(name).ok_or_else(|| ContractError::Unknown(name.clone()))
            }
            ContractDecl::Inline(spec) => spec,
        };
        let base_name = spec.extends.as_deref().unwrap_or("envelope");
        let mut c = Self::builtin(base_name)
            .ok_or_else(|| ContractError::Unknown(base_name.to_string()))?;
        c.name = spec.name.clone().unwrap_or_else(|| match &spec.extends {
            Some(base) => format!("{base}+inline"),
            None => "inline".into(),
        });
        if let Some(v) = spec.format {
            c.format = v;
        }
        if let Some(v) = &spec.message_types {
            c.message_types = v.clone();
        }
        if let Some(v) = &spec.message_id_prefix {
            c.message_id_prefix = Some(v.clone());
        }
        if let Some(v) = &spec.fields {
            c.fields.extend(v.clone());
        }
        if let Some(v) = spec.evidence {
            c.evidence = v;
        }
        if let Some(v) = spec.excerpt_max_lines {
            c.excerpt_max_lines = v;
        }
        if let Some(v) = &spec.signal_headings {
            c.signal_headings = v.clone();
        }
        if let Some(v) = &spec.required_sections {
            c.required_sections = v.clone();
        }
        if let Some(v) = spec.named_paths {
            c.named_paths = v;
        }
        if let Some(v) = spec.on_violation {
            c.on_violation = v;
        }
        if let Some(v) = spec.max_repairs {
            c.max_repairs = v;
        }
        c.json = match (c.format, &spec.schema) {
            (ContractFormat::Json, Some(schema)) => Some(JsonContract::new(
                schema.clone(),
                spec.sanitize.clone().unwrap_or_default(),
                spec.fallback.clone(),
                spec.question.clone(),
            )),
            (ContractFormat::Json, None) => return Err(ContractError::JsonWithoutSchema),
            (ContractFormat::Envelope, _) => {
                let json_only = [
                    ("schema", spec.schema.is_some()),
                    ("sanitize", spec.sanitize.is_some()),
                    ("fallback", spec.fallback.is_some()),
                    ("question", spec.question.is_some()),
                    (
                        "on_violation: fallback",
                        c.on_violation == OnViolation::Fallback,
                    ),
                ];
                if let Some((key, _)) = json_only.iter().find(|(_, set)| *set) {
                    return Err(ContractError::JsonOnly(key));
                }
                None
            }
        };
        if c.json.is_some() && c.on_violation == OnViolation::DropItems {
            return Err(ContractError::DropItemsOnJson);
        }
        if let Some(json) = &c.json {
            if c.on_violation == OnViolation::Fallback && json.fallback.is_none() {
                return Err(ContractError::FallbackMissing);
            }
            if json.fallback.as_ref().is_some_and(|f| !f.is_object()) {
                return Err(ContractError::FallbackNotObject);
            }
        }
        c.validate()?;
        Ok(c)
    }

    fn validate(&self) -> Result<(), ContractError> {
        if !(1..=MAX_EXCERPT_LINES).contains(&self.excerpt_max_lines) {
            return Err(ContractError::ExcerptMax(self.excerpt_max_lines));
        }
        if let Some(t) = self.message_types.iter().find(|t| !is_upper_snake(t)) {
            return Err(ContractError::MessageType(t.clone()));
        }
        if let Some(p) = &self.message_id_prefix {
            let ok = !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !ok {
                return Err(ContractError::Prefix(p.clone()));
            }
        }
        Ok(())
    }
}

/// `UPPER_SNAKE_CASE`: starts with a letter; letters, digits and single underscores.
pub fn is_upper_snake(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase())
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !s.ends_with('_')
        && !s.contains("__")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_and_inline_resolve() {
        let c = Contract::resolve(&ContractDecl::Named("document-analysis".into())).unwrap();
        assert_eq!(c.message_id_prefix.as_deref(), Some("thoughts"));
        let inline = ContractSpec {
            extends: Some("document-analysis".into()),
            max_repairs: Some(1),
            excerpt_max_lines: Some(4),
            ..Default::default()
        };
        let c = Contract::resolve(&ContractDecl::Inline(inline)).unwrap();
        assert_eq!((c.max_repairs, c.excerpt_max_lines), (1, 4));
        assert_eq!(c.evidence, EvidencePolicy::Required);
    }

    #[test]
    fn bad_declarations_are_refused() {
        assert!(matches!(
            Contract::resolve(&ContractDecl::Named("nope".into())),
            Err(ContractError::Unknown(_))
        ));
        let spec = ContractSpec {
            excerpt_max_lines: Some(9),
            ..Default::default()
        };
        assert_eq!(
            Contract::resolve(&ContractDecl::Inline(spec)),
            Err(ContractError::ExcerptMax(9))
        );
        assert!(is_upper_snake("DOCUMENT_ANALYSIS_RESPONSE"));
        assert!(!is_upper_snake("Document"));
        assert!(!is_upper_snake("A__B"));
    }
}
