//! The MANIFEST files of the conformance corpora (`tests/conformance/*/MANIFEST`): one case a
//! line, `FILE [key=value …] [-> CODE …]`, with `#` comments. Reading one also checks that every
//! listed file exists, none is listed twice, every file with the corpus's extension is listed and
//! every code is a rule code, so a case cannot be dropped or mistyped silently.

use std::collections::BTreeSet;
use std::path::Path;
use switchboard::contract::Rule;

/// One MANIFEST line.
pub struct Line {
    pub file: String,
    /// The `key=value` options after the file, in order.
    pub options: Vec<(String, String)>,
    /// The rule codes after `->`.
    pub expect: BTreeSet<String>,
}

/// Reads `dir/MANIFEST`, whose cases are the files of `dir` ending in `ext`.
pub fn read(dir: &Path, ext: &str) -> Vec<Line> {
    let manifest = dir.join("MANIFEST");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let mut lines = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (head, expect) = match line.split_once("->") {
            Some((h, e)) => (h, e.split_whitespace().map(str::to_string).collect()),
            None => (line, BTreeSet::new()),
        };
        let mut words = head.split_whitespace();
        let file = words.next().unwrap().to_string();
        let options = words
            .map(|opt| {
                let (k, v) = opt
                    .split_once('=')
                    .unwrap_or_else(|| panic!("{}: option `{opt}` is not key=value", file));
                (k.to_string(), v.to_string())
            })
            .collect();
        for code in &expect {
            assert!(
                Rule::from_code(code).is_some(),
                "{file}: unknown rule code {code}"
            );
        }
        lines.push(Line {
            file,
            options,
            expect,
        });
    }
    let mut on_disk: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(ext))
        .collect();
    for line in &lines {
        assert!(
            on_disk.remove(&line.file),
            "{} lists {} twice or it does not exist",
            manifest.display(),
            line.file
        );
    }
    assert!(
        on_disk.is_empty(),
        "{} does not list {on_disk:?}",
        manifest.display()
    );
    lines
}
