//! A small GBNF writer: named rules, literals, and a translator from the anchored regular
//! expressions JSON Schema `pattern`s use to GBNF.
//!
//! GBNF is llama.cpp's grammar notation (rules `name ::= body`, literals in double quotes,
//! character classes, `* + ? {m,n}`). The grammar builders in `grammar.rs` assemble rules with
//! [`Gbnf`] so every rule name is unique and every literal is escaped in one place.

use std::collections::BTreeMap;

mod length;

/// A grammar under construction; `root` is the start rule.
#[derive(Debug, Default, Clone)]
pub struct Gbnf {
    rules: BTreeMap<String, String>,
    order: Vec<String>,
}

impl Gbnf {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `name ::= body` under `name`, or under `name-2`, `name-3`… when the name is taken
    /// by a different body. The same body under the same name is shared. Returns the name used.
    pub fn rule(&mut self, name: &str, body: impl Into<String>) -> String {
        let body = body.into();
        let base = sanitize_name(name);
        let mut candidate = base.clone();
        let mut n = 1;
        loop {
            match self.rules.get(&candidate) {
                None => break,
                Some(existing) if *existing == body => return candidate,
                Some(_) => {
                    n += 1;
                    candidate = format!("{base}-{n}");
                }
            }
        }
        self.rules.insert(candidate.clone(), body);
        self.order.push(candidate.clone());
        candidate
    }

    /// The grammar text, `root` first.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut names: Vec<&String> = self.order.iter().collect();
        names.sort_by_key(|n| *n != "root");
        for name in names {
            out.push_str(name);
            out.push_str(" ::= ");
            out.push_str(&self.rules[name]);
            out.push('\n');
        }
        out
    }
}

/// Rule names are letters, digits and `-`.
fn sanitize_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-').to_string();
    if s.is_empty() {
        "r".into()
    } else {
        s
    }
}

/// `text` as a GBNF string literal.
pub fn lit(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One character as it may stand inside a GBNF character class.
fn class_char(c: char) -> String {
    match c {
        ']' | '[' | '\\' | '^' | '-' | '"' => format!("\\{c}"),
        '\n' => "\\n".into(),
        '\r' => "\\r".into(),
        '\t' => "\\t".into(),
        c if (c as u32) < 0x20 => format!("\\x{:02X}", c as u32),
        c => c.to_string(),
    }
}

/// How often `*`, `+` and `{m,}` may repeat in a translated pattern, unless the caller asks
/// for fewer to fit a token budget.
pub const PATTERN_REPEAT_MAX: u32 = 40;

/// Why a pattern is not translated (the caller falls back to any string and leaves the pattern
/// to the checker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untranslatable(pub String);

/// Translates an anchored pattern (`^…$`) to a GBNF expression for the string's characters
/// (without the JSON quotes). Supported: literals, escapes `\d \w \s \. \-` and the like,
/// classes `[…]`/`[^…]`, `.`, groups `(…)`/`(?:…)`, `|`, and the quantifiers `* + ? {m} {m,}
/// {m,n}`. Characters JSON would have to escape (`"`, `\`, control characters) are kept out of
/// classes, so the result is always the body of a valid JSON string. Unbounded repetition
/// repeats at most `repeat_max` times.
pub fn pattern_to_gbnf(pattern: &str, repeat_max: u32) -> Result<String, Untranslatable> {
    let inner = pattern
        .strip_prefix('^')
        .and_then(|p| p.strip_suffix('$'))
        .filter(|p| !p.ends_with("\\$") || p.ends_with("\\\\$"))
        .ok_or_else(|| Untranslatable("not anchored with ^…$".into()))?;
    let chars: Vec<char> = inner.chars().collect();
    let mut p = PatternReader {
        chars,
        pos: 0,
        repeat_max,
    };
    let out = p.alternation()?;
    if p.pos != p.chars.len() {
        return Err(Untranslatable(format!("unexpected `{}`", p.chars[p.pos])));
    }
    Ok(out)
}

struct PatternReader {
    chars: Vec<char>,
    pos: usize,
    repeat_max: u32,
}

impl PatternReader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn alternation(&mut self) -> Result<String, Untranslatable> {
        let mut alts = vec![self.sequence()?];
        while self.peek() == Some('|') {
            self.pos += 1;
            alts.push(self.sequence()?);
        }
        Ok(if alts.len() == 1 {
            alts.remove(0)
        } else {
            format!("({})", alts.join(" | "))
        })
    }

    fn sequence(&mut self) -> Result<String, Untranslatable> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            let quant = self.quantifier()?;
            // llama.cpp refuses a repetition whose copies of the rules it repeats pass 2,000
            // (`MAX_REPETITION_THRESHOLD`): a repeated group holding a repetition of its own
            // (`^(A=[^ ]* )*…$` came to 40 × 80) made the whole grammar fail at the first token,
            // and the planner's session with it. Such a pattern is left to the checker.
            let repeats = !(quant.is_empty() || quant == "?" || quant.ends_with(",1}"));
            if atom.starts_with('(') && atom.contains('{') && repeats {
                return Err(Untranslatable(
                    "a repeated group holding a repetition (llama.cpp limits the rules a \
                     repetition makes)"
                        .into(),
                ));
            }
            items.push(format!("{atom}{quant}"));
        }
        Ok(if items.is_empty() {
            "\"\"".into()
        } else {
            items.join(" ")
        })
    }

    fn quantifier(&mut self) -> Result<String, Untranslatable> {
        let q = match self.peek() {
            // Unbounded repetition is bounded, so a small model cannot run on inside one
            // string until its token limit: the grammar admits a subset of the pattern.
            Some('*') => {
                self.pos += 1;
                format!("{{0,{}}}", self.repeat_max)
            }
            Some('+') => {
                self.pos += 1;
                format!("{{1,{}}}", self.repeat_max)
            }
            Some('?') => {
                self.pos += 1;
                "?".to_string()
            }
            Some('{') => {
                let end = self.chars[self.pos..]
                    .iter()
                    .position(|c| *c == '}')
                    .ok_or_else(|| Untranslatable("unclosed `{`".into()))?;
                let body: String = self.chars[self.pos + 1..self.pos + end].iter().collect();
                let ok = !body.is_empty()
                    && body.chars().all(|c| c.is_ascii_digit() || c == ',')
                    && body.matches(',').count() <= 1
                    && !body.starts_with(',');
                if !ok {
                    return Err(Untranslatable(format!("quantifier `{{{body}}}`")));
                }
                self.pos += end + 1;
                match body.split_once(',') {
                    Some((lo, "")) => {
                        let lo: u32 = lo.parse().unwrap_or(0);
                        format!("{{{lo},{}}}", lo.max(self.repeat_max))
                    }
                    _ => format!("{{{body}}}"),
                }
            }
            _ => return Ok(String::new()),
        };
        if matches!(self.peek(), Some('?' | '+')) {
            return Err(Untranslatable("lazy or possessive quantifier".into()));
        }
        Ok(q)
    }

    fn atom(&mut self) -> Result<String, Untranslatable> {
        let Some(c) = self.peek() else {
            return Err(Untranslatable("pattern ends early".into()));
        };
        self.pos += 1;
        match c {
            '(' => {
                if self.peek() == Some('?') {
                    if self.chars.get(self.pos + 1) == Some(&':') {
                        self.pos += 2;
                    } else {
                        return Err(Untranslatable("lookaround or named group".into()));
                    }
                }
                let inner = self.alternation()?;
                if self.peek() != Some(')') {
                    return Err(Untranslatable("unclosed group".into()));
                }
                self.pos += 1;
                Ok(format!("({inner})"))
            }
            '[' => self.class(),
            '.' => Ok("[^\"\\\\\\x00-\\x1F]".into()),
            '\\' => {
                let e = self
                    .peek()
                    .ok_or_else(|| Untranslatable("trailing `\\`".into()))?;
                self.pos += 1;
                match escape_class(e) {
                    Some(class) => Ok(format!("[{class}]")),
                    None if e.is_ascii_punctuation() && e != '"' && e != '\\' => {
                        Ok(lit(&e.to_string()))
                    }
                    None => Err(Untranslatable(format!("escape `\\{e}`"))),
                }
            }
            '^' | '$' | '*' | '+' | '?' | '{' => Err(Untranslatable(format!(
                "`{c}` in the middle of the pattern"
            ))),
            '"' => Err(Untranslatable("a literal `\"`".into())),
            c => Ok(lit(&c.to_string())),
        }
    }

    /// `[...]` after the `[`; returns a GBNF class.
    fn class(&mut self) -> Result<String, Untranslatable> {
        let negated = self.peek() == Some('^');
        if negated {
            self.pos += 1;
        }
        let mut body = String::new();
        let mut first = true;
        loop {
            let c = self
                .peek()
                .ok_or_else(|| Untranslatable("unclosed `[`".into()))?;
            self.pos += 1;
            match c {
                ']' if !first => break,
                '\\' => {
                    let e = self
                        .peek()
                        .ok_or_else(|| Untranslatable("trailing `\\`".into()))?;
                    self.pos += 1;
                    match escape_class(e) {
                        Some(class) if !negated || !matches!(e, 'D' | 'W' | 'S') => {
                            body.push_str(&class)
                        }
                        Some(_) => return Err(Untranslatable(format!("`\\{e}` in `[^…]`"))),
                        None => body.push_str(&class_char(e)),
                    }
                }
                '[' if self.peek() == Some(':') => {
                    return Err(Untranslatable("POSIX class".into()));
                }
                '-' if !first && self.peek() != Some(']') => {
                    let hi = self
                        .peek()
                        .ok_or_else(|| Untranslatable("unclosed `[`".into()))?;
                    self.pos += 1;
                    if hi == '\\' || hi == '"' || (hi as u32) < 0x20 {
                        return Err(Untranslatable("escaped range end".into()));
                    }
                    body.push('-');
                    body.push_str(&class_char(hi));
                }
                c if !negated && (c == '"' || (c as u32) < 0x20) => {
                    return Err(Untranslatable(
                        "a class with `\"` or a control character".into(),
                    ));
                }
                c => body.push_str(&class_char(c)),
            }
            first = false;
        }
        if negated {
            // A negated class must not admit what a JSON string cannot hold unescaped.
            Ok(format!("[^{body}\"\\\\\\x00-\\x1F]"))
        } else {
            Ok(format!("[{body}]"))
        }
    }
}

/// The class body for `\d`, `\w`, `\s` and their negations (ASCII, as JSON Schema's ECMA 262
/// regexes read them); `None` for other escapes.
fn escape_class(e: char) -> Option<String> {
    Some(
        match e {
            'd' => "0-9",
            'w' => "A-Za-z0-9_",
            's' => " ",
            'D' => "^0-9\"\\\\\\x00-\\x1F",
            'W' => "^A-Za-z0-9_\"\\\\\\x00-\\x1F",
            'S' => "^ \"\\\\\\x00-\\x1F",
            _ => return None,
        }
        .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_quotes_backslashes_and_newlines() {
        assert_eq!(lit("a\"b\\c\nd"), r#""a\"b\\c\nd""#);
    }

    #[test]
    fn rule_names_are_unique_per_body_and_shared_per_equal_body() {
        let mut g = Gbnf::new();
        let a = g.rule("value", "\"a\"");
        let b = g.rule("value", "\"b\"");
        let a2 = g.rule("value", "\"a\"");
        assert_eq!(
            (a.as_str(), b.as_str(), a2.as_str()),
            ("value", "value-2", "value")
        );
        g.rule("root", "value value-2");
        let text = g.render();
        assert!(text.starts_with("root ::= "), "{text}");
        assert_eq!(text.lines().count(), 3);
    }

    #[test]
    fn the_analyst_patterns_translate() {
        assert_eq!(
            pattern_to_gbnf("^[a-z][a-z0-9_]*$", PATTERN_REPEAT_MAX).unwrap(),
            "[a-z] [a-z0-9_]{0,40}"
        );
        assert_eq!(
            pattern_to_gbnf("^[a-z][a-z0-9_]*_v[0-9]+(_[a-z]+)?$", PATTERN_REPEAT_MAX).unwrap(),
            "[a-z] [a-z0-9_]{0,40} \"_\" \"v\" [0-9]{1,40} (\"_\" [a-z]{1,40})?"
        );
        assert_eq!(
            pattern_to_gbnf(r"^\d{4}-(a|bc)\.x{2,}$", PATTERN_REPEAT_MAX).unwrap(),
            "[0-9]{4} \"-\" ((\"a\" | \"b\" \"c\")) \".\" \"x\"{2,40}"
        );
    }

    #[test]
    fn a_repeated_group_holding_a_repetition_is_left_to_the_checker() {
        let e = pattern_to_gbnf("^([A-Z]+=[^ ]* )*[a-z]+$", PATTERN_REPEAT_MAX).unwrap_err();
        assert!(e.0.contains("repeated group"), "{e:?}");
        // Once, or a group of fixed characters, is fine.
        assert!(pattern_to_gbnf("^(_[a-z]+)?$", PATTERN_REPEAT_MAX).is_ok());
        assert!(pattern_to_gbnf("^(ab)+$", PATTERN_REPEAT_MAX).is_ok());
    }

    #[test]
    fn negated_classes_keep_json_string_safe() {
        assert_eq!(
            pattern_to_gbnf("^[^ab]+$", PATTERN_REPEAT_MAX).unwrap(),
            "[^ab\"\\\\\\x00-\\x1F]{1,40}"
        );
    }

    #[test]
    fn unsupported_patterns_are_refused_not_mistranslated() {
        for p in [
            "[a-z]+",        // not anchored: "contains" semantics
            "^a(?=b)$",      // lookahead
            "^a+?$",         // lazy
            "^[[:alpha:]]$", // POSIX class
            "^a\\1$",        // back-reference
            "^(a$",          // unclosed group
            "^a{x}$",        // bad quantifier
            "^\"$",          // a quote JSON would escape
        ] {
            assert!(
                pattern_to_gbnf(p, PATTERN_REPEAT_MAX).is_err(),
                "{p} should be refused"
            );
        }
    }
}
