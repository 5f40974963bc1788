//! SARIF 2.1.0 output, so code-scanning UIs show lint findings inline.

use serde_json::{json, Value};

use crate::problem::{Problem, Severity};

pub fn to_sarif(findings: &[Problem]) -> Value {
    let mut rules: Vec<&str> = findings.iter().map(|d| d.code.as_ref()).collect();
    rules.sort_unstable();
    rules.dedup();
    let results: Vec<Value> = findings
        .iter()
        .map(|d| {
            let mut location = json!({
                "physicalLocation": { "artifactLocation": { "uri": d.file } }
            });
            if d.line > 0 {
                location["physicalLocation"]["region"] =
                    json!({ "startLine": d.line, "startColumn": d.column.max(1) });
            }
            let text = match &d.help {
                Some(h) => format!("{} ({h})", d.message),
                None => d.message.clone(),
            };
            json!({
                "ruleId": d.code,
                "level": match d.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                    Severity::Note => "note",
                },
                "message": { "text": text },
                "locations": [location],
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "switchboard",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules.iter().map(|r| json!({ "id": r })).collect::<Vec<_>>(),
            }},
            "results": results,
        }]
    })
}
