//! opencode's `permission:` block, normalised: per tool, either one action or patterns.
//!
//! switchboard runs unattended, so `ask` cannot be answered by a person: it is treated as a
//! refusal that says approval was required. The `task` entry limits which subagents an agent may
//! call (`task: {"*": deny, "thoughts-*": allow}`).

use super::grants::glob_matches;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Allow,
    Ask,
    Deny,
}

/// One tool's permission as written: a single action, or pattern → action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum PermissionRule {
    Action(Action),
    Patterns(BTreeMap<String, Action>),
}

/// Shape-directed, like `ToolsDecl`: a scalar is one action, a mapping holds patterns.
impl<'de> Deserialize<'de> for PermissionRule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = PermissionRule;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("allow, ask or deny, or a map of pattern to allow/ask/deny")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<PermissionRule, E> {
                Action::deserialize(serde::de::value::StrDeserializer::new(v))
                    .map(PermissionRule::Action)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<PermissionRule, A::Error> {
                Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(PermissionRule::Patterns)
            }
        }
        d.deserialize_any(V)
    }
}

/// `permission:` as written: tool → rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Permission(pub BTreeMap<String, PermissionRule>);

impl Permission {
    /// What `tool` may do with `subject` (a subagent name for `task`, a path or command for
    /// others). Unmentioned tools and subjects are allowed; an exact pattern beats a glob, and a
    /// longer glob beats a shorter one.
    pub fn action(&self, tool: &str, subject: &str) -> Action {
        self.decide(tool, subject).0
    }

    /// [`Self::action`] with the pattern that decided it (`None` when the tool has a single action
    /// or no pattern matched), so a refusal can name the rule the author has to change.
    pub fn decide(&self, tool: &str, subject: &str) -> (Action, Option<&str>) {
        match self.0.get(tool) {
            None => (Action::Allow, None),
            Some(PermissionRule::Action(a)) => (*a, None),
            Some(PermissionRule::Patterns(map)) => {
                if let Some((p, a)) = map.get_key_value(subject) {
                    return (*a, Some(p.as_str()));
                }
                map.iter()
                    .filter(|(p, _)| glob_matches(p, subject))
                    .max_by_key(|(p, _)| p.len())
                    .map_or((Action::Allow, None), |(p, a)| (*a, Some(p.as_str())))
            }
        }
    }

    /// Whether `permission:` refuses `tool` outright (a single `deny`, or `ask`, which an
    /// unattended run cannot answer). Per-subject patterns are decided per call by [`Self::action`].
    pub fn refuses_tool(&self, tool: &str) -> bool {
        matches!(
            self.0.get(tool),
            Some(PermissionRule::Action(Action::Deny | Action::Ask))
        )
    }

    /// Whether this agent may delegate to `target`.
    pub fn task(&self, target: &str) -> Action {
        self.action("task", target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_patterns_most_specific_wins() {
        let p: Permission = serde_json::from_value(serde_json::json!({
            "task": {"*": "deny", "thoughts-*": "allow", "thoughts-secret": "ask"},
            "edit": "deny"
        }))
        .unwrap();
        assert_eq!(p.task("thoughts-locator"), Action::Allow);
        assert_eq!(p.task("codebase-locator"), Action::Deny);
        assert_eq!(p.task("thoughts-secret"), Action::Ask);
        assert_eq!(p.action("edit", "x"), Action::Deny);
        assert_eq!(p.action("read", "x"), Action::Allow);
    }

    #[test]
    fn decide_names_the_deciding_pattern() {
        let p: Permission = serde_json::from_value(serde_json::json!({
            "webfetch": {"*": "deny", "https://docs.rs/*": "allow", "https://x.test/a": "ask"},
            "edit": "deny"
        }))
        .unwrap();
        assert_eq!(
            p.decide("webfetch", "https://docs.rs/serde"),
            (Action::Allow, Some("https://docs.rs/*"))
        );
        assert_eq!(
            p.decide("webfetch", "https://x.test/a"),
            (Action::Ask, Some("https://x.test/a"))
        );
        assert_eq!(
            p.decide("webfetch", "http://127.0.0.3/secret"),
            (Action::Deny, Some("*"))
        );
        assert_eq!(p.decide("edit", "x"), (Action::Deny, None));
        assert_eq!(p.decide("read", "x"), (Action::Allow, None));
    }
}
