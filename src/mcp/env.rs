//! `${VAR}` in an MCP server's declaration, expanded from the environment when the server starts.
//!
//! Claude Code's `.mcp.json` writes `${VAR}` (and `${VAR:-default}`), opencode's config
//! `{env:VAR}`; projects copy one into the other's file (rpi-qpi's opencode.json sends
//! `"${CONTEXT7_API_KEY}"` as a header), so all three forms are read everywhere. Expansion
//! happens at start time, never at load time: the config, its events and lint see the
//! placeholder, not the secret. The values that were substituted are returned so that error
//! texts can be scrubbed of them ([`redact`]) before they reach an event or a terminal.

use std::collections::BTreeMap;

use crate::config::McpServerSection;

/// A placeholder whose variable is not set (and has no default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub var: String,
    /// Where the placeholder is: `url`, `headers.Authorization`, `env.TOKEN`, `args`, `command`.
    pub field: String,
}

/// `text` with every placeholder replaced by `lookup(VAR)`; the substituted values are pushed
/// onto `used`. An unclosed `${` is kept as written.
pub fn expand(
    text: &str,
    field: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    used: &mut Vec<String>,
) -> Result<String, Missing> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let dollar = rest.find("${");
        let env = rest.find("{env:");
        let (at, open, is_env) = match (dollar, env) {
            (Some(d), Some(e)) if e < d => (e, 5, true),
            (Some(d), _) => (d, 2, false),
            (None, Some(e)) => (e, 5, true),
            (None, None) => break,
        };
        let Some(close) = rest[at..].find('}') else {
            break;
        };
        let inner = &rest[at + open..at + close];
        let (var, default) = match inner.split_once(":-").filter(|_| !is_env) {
            Some((v, d)) => (v.trim(), Some(d)),
            None => (inner.trim(), None),
        };
        let valid = !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        if !valid {
            // Not a placeholder (`${}` or `{env:a b}`): keep it.
            out.push_str(&rest[at..at + close + 1]);
        } else {
            let value = match (lookup(var), default) {
                (Some(v), _) => v,
                (None, Some(d)) => d.to_string(),
                (None, None) => {
                    return Err(Missing {
                        var: var.to_string(),
                        field: field.to_string(),
                    })
                }
            };
            if !value.is_empty() {
                used.push(value.clone());
            }
            out.push_str(&value);
        }
        rest = &rest[at + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `section` with every placeholder expanded, and the values substituted.
pub fn resolve(
    section: &McpServerSection,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(McpServerSection, Vec<String>), Missing> {
    let mut used = Vec::new();
    let mut s = section.clone();
    let one = |v: &Option<String>, field: &str, used: &mut Vec<String>| {
        v.as_deref()
            .map(|t| expand(t, field, lookup, used))
            .transpose()
    };
    s.command = one(&section.command, "command", &mut used)?;
    s.url = one(&section.url, "url", &mut used)?;
    s.args = section
        .args
        .iter()
        .map(|a| expand(a, "args", lookup, &mut used))
        .collect::<Result<_, _>>()?;
    let map = |m: &BTreeMap<String, String>, what: &str, used: &mut Vec<String>| {
        m.iter()
            .map(|(k, v)| Ok((k.clone(), expand(v, &format!("{what}.{k}"), lookup, used)?)))
            .collect::<Result<BTreeMap<_, _>, Missing>>()
    };
    s.env = map(&section.env, "env", &mut used)?;
    s.headers = map(&section.headers, "headers", &mut used)?;
    Ok((s, used))
}

/// `text` with every value of `secrets` replaced by `***`, longest first (so a value that
/// contains another is scrubbed whole).
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut sorted: Vec<&String> = secrets.iter().filter(|s| s.len() >= 3).collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
    sorted
        .into_iter()
        .fold(text.to_string(), |t, s| t.replace(s.as_str(), "***"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(var: &str) -> Option<String> {
        match var {
            "TOKEN" => Some("s3cr3t-value".into()),
            "HOST" => Some("127.0.0.1".into()),
            _ => None,
        }
    }

    #[test]
    fn the_three_forms_expand_and_record_what_was_used() {
        let mut used = Vec::new();
        let got = expand(
            "Bearer ${TOKEN} at {env:HOST}:${PORT:-8080} ${} {env:a b}",
            "headers.Authorization",
            &env,
            &mut used,
        )
        .unwrap();
        assert_eq!(got, "Bearer s3cr3t-value at 127.0.0.1:8080 ${} {env:a b}");
        assert_eq!(used, vec!["s3cr3t-value", "127.0.0.1", "8080"]);
        assert_eq!(
            expand("${NOPE}", "url", &env, &mut used),
            Err(Missing {
                var: "NOPE".into(),
                field: "url".into()
            })
        );
        assert_eq!(
            expand("plain ${", "url", &env, &mut used).unwrap(),
            "plain ${"
        );
    }

    #[test]
    fn a_section_resolves_every_field_and_names_the_missing_one() {
        let mut s = McpServerSection {
            url: Some("https://${HOST}/mcp".into()),
            ..Default::default()
        };
        s.headers
            .insert("Authorization".into(), "Bearer ${TOKEN}".into());
        let (r, used) = resolve(&s, &env).unwrap();
        assert_eq!(r.url.as_deref(), Some("https://127.0.0.1/mcp"));
        assert_eq!(r.headers["Authorization"], "Bearer s3cr3t-value");
        assert_eq!(
            redact("401 from https://127.0.0.1/mcp with s3cr3t-value", &used),
            "401 from https://***/mcp with ***"
        );
        s.headers
            .insert("X-Key".into(), "${CONTEXT7_API_KEY}".into());
        let missing = resolve(&s, &env).unwrap_err();
        assert_eq!(missing.var, "CONTEXT7_API_KEY");
        assert_eq!(missing.field, "headers.X-Key");
    }
}
