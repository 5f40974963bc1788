//! Reading what tools returned and what documents hold: numbered `read` output, `path:line:text`
//! grep lines, glob listings, frontmatter, and paths named in prose.

use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// One `path:line:text` line of grep output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepLine<'a> {
    pub path: &'a str,
    pub line: usize,
    pub text: &'a str,
}

static GREP_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([^:\s][^:]*?):(\d+):(.*)$").expect("static regex"));

/// The matches in grep output; lines that are not `path:line:text` (headers, notes) are skipped.
pub fn grep_lines(output: &str) -> impl Iterator<Item = GrepLine<'_>> {
    output.lines().filter_map(|l| {
        let l = l.strip_suffix('\r').unwrap_or(l);
        let cap = GREP_LINE.captures(l)?;
        Some(GrepLine {
            path: cap.get(1)?.as_str(),
            line: cap.get(2)?.as_str().parse().ok()?,
            text: cap.get(3)?.as_str(),
        })
    })
}

/// The paths in a glob or list output: one per line, notes and blank lines skipped.
pub fn path_lines(output: &str) -> impl Iterator<Item = &str> {
    output.lines().filter_map(|l| {
        let t = l.trim();
        let plausible = !t.is_empty()
            && !t.contains(char::is_whitespace)
            && !t.starts_with('(')
            && !t.starts_with('[')
            && (t.contains('/') || t.contains('.'));
        plausible.then_some(t)
    })
}

/// Rebuilds a file's lines from numbered `read` output (`cat -n` style: a number, then a tab,
/// `:`, `|` or `→`, then the text). Index 0 is line 1; lines the output skipped stay `None`.
pub fn numbered_lines(output: &str) -> Vec<Option<String>> {
    let mut lines: Vec<Option<String>> = Vec::new();
    for raw in output.lines() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = raw.trim_start();
        let digits = trimmed.len()
            - trimmed
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .len();
        if digits == 0 {
            continue;
        }
        let Ok(n) = trimmed[..digits].parse::<usize>() else {
            continue;
        };
        let rest = &trimmed[digits..];
        let text = if let Some(t) = rest.strip_prefix('\t') {
            t
        } else if let Some(t) = rest.strip_prefix('→') {
            t
        } else if let Some(t) = rest.strip_prefix(": ").or_else(|| rest.strip_prefix(':')) {
            t
        } else if let Some(t) = rest.strip_prefix(" | ").or_else(|| rest.strip_prefix('|')) {
            t
        } else {
            continue;
        };
        if n == 0 || n > 1_000_000 {
            continue;
        }
        if lines.len() < n {
            lines.resize(n, None);
        }
        lines[n - 1] = Some(text.to_string());
    }
    lines
}

/// `key: value` pairs of a leading `---` frontmatter block (quotes removed), and the 1-based line
/// the body starts on.
pub fn frontmatter<'a, I>(lines: I) -> (BTreeMap<String, String>, usize)
where
    I: IntoIterator<Item = &'a str>,
{
    let mut map = BTreeMap::new();
    let mut iter = lines.into_iter().enumerate();
    match iter.next() {
        Some((_, first)) if first.trim_end() == "---" => {}
        _ => return (map, 1),
    }
    for (i, line) in iter {
        if line.trim_end() == "---" {
            return (map, i + 2);
        }
        if let Some((k, v)) = line.split_once(':') {
            let key = k.trim();
            if !key.is_empty() && !key.starts_with(' ') && !line.starts_with(' ') {
                map.insert(key.to_string(), unquote(v.trim()).to_string());
            }
        }
    }
    (BTreeMap::new(), 1)
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

static DATE_IN_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\d{4}-\d{2}-\d{2})").expect("static regex"));

/// `YYYY-MM-DD` from a file name such as `2026-11-12-offline.md`.
pub fn date_in_name(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    DATE_IN_NAME.find(name).map(|m| m.as_str())
}

static DOC_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s`'(\[])((?:\./)?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*\.(?:md|markdown|txt|rs|toml|yaml|yml|json))\b")
        .expect("static regex")
});

/// File paths named in prose, in order, each once (`thoughts/shared/x.md`, `` `src/a.rs` ``).
pub fn paths_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cap in DOC_PATH.captures_iter(text) {
        if let Some(m) = cap.get(1) {
            let p = m.as_str().trim_start_matches("./").to_string();
            if p.contains('/') && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_output_in_several_styles() {
        let out = "     1\t---\n     2\tdate: x\n3: three\n4 | four\n5→five\n  10\tten\nnote\n";
        let lines = numbered_lines(out);
        assert_eq!(lines.len(), 10);
        assert_eq!(lines[0].as_deref(), Some("---"));
        assert_eq!(lines[2].as_deref(), Some("three"));
        assert_eq!(lines[3].as_deref(), Some("four"));
        assert_eq!(lines[4].as_deref(), Some("five"));
        assert_eq!(lines[5], None);
        assert_eq!(lines[9].as_deref(), Some("ten"));
    }

    #[test]
    fn grep_and_glob_output() {
        let out = "thoughts/a.md:3:# Title: x\nno match line\nthoughts/b.md:10:\n";
        let got: Vec<_> = grep_lines(out).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0],
            GrepLine {
                path: "thoughts/a.md",
                line: 3,
                text: "# Title: x"
            }
        );
        assert_eq!(got[1].text, "");
        let paths: Vec<_> = path_lines("a/b.md\n\n(2 files)\nc.md\n").collect();
        assert_eq!(paths, vec!["a/b.md", "c.md"]);
    }

    #[test]
    fn frontmatter_and_paths() {
        let doc = [
            "---",
            "date: 2026-11-12",
            "status: \"accepted\"",
            "---",
            "# T",
        ];
        let (fm, body) = frontmatter(doc.iter().copied());
        assert_eq!(fm.get("status").map(String::as_str), Some("accepted"));
        assert_eq!(body, 5);
        assert_eq!(date_in_name("x/2026-11-03-env.md"), Some("2026-11-03"));
        assert_eq!(
            paths_in("Extract from thoughts/shared/a/2026-x.md and `src/b.rs`. Also thoughts/shared/a/2026-x.md"),
            vec!["thoughts/shared/a/2026-x.md", "src/b.rs"]
        );
    }
}
