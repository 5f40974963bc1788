//! The longest text a grammar admits, in characters: how the grammar builders keep a contract's
//! grammar inside the answer's token budget (a grammar whose longest answer cannot fit lets a
//! rambling model run out of tokens mid-answer, which is a cut-off, unparseable answer).
//!
//! Reads the GBNF subset [`super::Gbnf`] writes: literals, character classes, rule names,
//! groups, `|`, and `? * + {m} {m,} {m,n}`. Unbounded repetition and recursion have no longest
//! text (`None`).

use std::collections::BTreeMap;

use super::Gbnf;

impl Gbnf {
    /// The most characters a text matching rule `name` can have; `None` when unbounded (or the
    /// rule is unknown).
    pub fn max_chars(&self, name: &str) -> Option<u64> {
        let mut memo = BTreeMap::new();
        longest_rule(&self.rules, name, &mut memo)
    }
}

/// `None` in `memo` marks a rule being measured (recursion) or unbounded.
fn longest_rule(
    rules: &BTreeMap<String, String>,
    name: &str,
    memo: &mut BTreeMap<String, Option<u64>>,
) -> Option<u64> {
    if let Some(known) = memo.get(name) {
        return *known;
    }
    memo.insert(name.to_string(), None);
    let body = rules.get(name)?;
    let mut p = Reader {
        chars: body.chars().collect(),
        pos: 0,
    };
    let n = p.alternation(rules, memo);
    let n = if p.pos == p.chars.len() { n } else { None };
    memo.insert(name.to_string(), n);
    n
}

struct Reader {
    chars: Vec<char>,
    pos: usize,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn alternation(
        &mut self,
        rules: &BTreeMap<String, String>,
        memo: &mut BTreeMap<String, Option<u64>>,
    ) -> Option<u64> {
        let mut most = self.sequence(rules, memo);
        loop {
            self.skip_space();
            if self.peek() != Some('|') {
                return most;
            }
            self.pos += 1;
            let next = self.sequence(rules, memo);
            most = match (most, next) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
        }
    }

    fn sequence(
        &mut self,
        rules: &BTreeMap<String, String>,
        memo: &mut BTreeMap<String, Option<u64>>,
    ) -> Option<u64> {
        let mut total = Some(0u64);
        loop {
            self.skip_space();
            let item = match self.peek() {
                None | Some('|') | Some(')') => return total,
                Some('"') => self.literal(),
                Some('[') => self.class(),
                Some('(') => {
                    self.pos += 1;
                    let inner = self.alternation(rules, memo);
                    self.skip_space();
                    if self.peek() != Some(')') {
                        return None;
                    }
                    self.pos += 1;
                    inner
                }
                Some(c) if c.is_ascii_alphanumeric() || c == '-' => {
                    let start = self.pos;
                    while self
                        .peek()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
                    {
                        self.pos += 1;
                    }
                    let name: String = self.chars[start..self.pos].iter().collect();
                    longest_rule(rules, &name, memo)
                }
                Some(_) => return None,
            };
            let item = self.repeat(item)?;
            total = total.and_then(|t| item.map(|i| t.saturating_add(i)));
        }
    }

    /// Applies a postfix operator, if any, to an item of at most `item` characters. The outer
    /// `Option` is a syntax error; the inner one unboundedness.
    fn repeat(&mut self, item: Option<u64>) -> Option<Option<u64>> {
        match self.peek() {
            Some('?') => {
                self.pos += 1;
                Some(item)
            }
            Some('*') | Some('+') => {
                self.pos += 1;
                Some(if item == Some(0) { Some(0) } else { None })
            }
            Some('{') => {
                let close = self.chars[self.pos..].iter().position(|&c| c == '}')? + self.pos;
                let inside: String = self.chars[self.pos + 1..close].iter().collect();
                self.pos = close + 1;
                let most = match inside.split_once(',') {
                    None => inside.trim().parse::<u64>().ok(),
                    Some((_, hi)) if hi.trim().is_empty() => None,
                    Some((_, hi)) => hi.trim().parse::<u64>().ok(),
                };
                Some(match (item, most) {
                    (Some(0), _) => Some(0),
                    (Some(i), Some(m)) => Some(i.saturating_mul(m)),
                    _ => None,
                })
            }
            _ => Some(item),
        }
    }

    /// A quoted literal: its characters, escapes counted once.
    fn literal(&mut self) -> Option<u64> {
        self.pos += 1;
        let mut n = 0;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '"' => return Some(n),
                '\\' => {
                    let skip = match self.peek() {
                        Some('x') => 3,
                        Some('u') => 5,
                        Some('U') => 9,
                        _ => 1,
                    };
                    self.pos += skip;
                    n += 1;
                }
                _ => n += 1,
            }
        }
        None
    }

    /// A character class: one character.
    fn class(&mut self) -> Option<u64> {
        self.pos += 1;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                ']' => return Some(1),
                '\\' => self.pos += 1,
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn longest(rules: &[(&str, &str)], name: &str) -> Option<u64> {
        let mut g = Gbnf::new();
        for (n, body) in rules {
            g.rule(n, *body);
        }
        g.max_chars(name)
    }

    #[test]
    fn literals_classes_and_bounded_repeats_add_up() {
        assert_eq!(longest(&[("a", r#""ab\n" [^"\]] "x"?"#)], "a"), Some(5));
        assert_eq!(
            longest(&[("a", r#"( "ab" | "cde" ){2,3} [0-9]{4}"#)], "a"),
            Some(13)
        );
        assert_eq!(
            longest(&[("d", "[0-9]"), ("a", r#"d{1,6} "\x41""#)], "a"),
            Some(7)
        );
    }

    #[test]
    fn unbounded_repeats_and_recursion_have_no_longest_text() {
        assert_eq!(longest(&[("a", r#""x"*"#)], "a"), None);
        assert_eq!(longest(&[("a", r#""x"{2,}"#)], "a"), None);
        assert_eq!(longest(&[("a", r#""(" a? ")""#)], "a"), None);
        assert_eq!(longest(&[("a", r#""x""#)], "missing"), None);
    }
}
