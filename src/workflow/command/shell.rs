//! A reader for the shell language a verification command is written in: enough of POSIX `sh`
//! to find every simple command that would run and every redirection, so each can be judged.
//!
//! Why a reader and not a split on spaces: `cd x && cargo test`, `! rg …`, `for …; do …; done`,
//! `(…)`, `{ …; }` and `if …; then …; fi` all hide the program after a keyword or operator, and
//! `echo 'a > b; rm x'` hides operators inside quotes. What the reader cannot see through it
//! reports as a problem instead of guessing: command and process substitution (`$(…)`,
//! backquotes, `<(…)`, `$((…))`), output redirected over a file, commands run in the background.

/// What the reader found in a command.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    /// Each simple command that would run, as its words (quotes removed), keywords stripped.
    pub commands: Vec<Vec<String>>,
    /// Reasons the whole command is refused whatever its programs are.
    pub problems: Vec<String>,
}

#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    /// `;`, `;;`, `&`, `&&`, `|`, `||`, `(`, `)` and newlines (read as `;`).
    Op(&'static str),
}

/// Keywords that open or continue a compound command before a simple command's words.
const LEADING_KEYWORDS: &[&str] = &[
    "!", "{", "}", "then", "do", "else", "elif", "if", "while", "until", "done", "fi", "esac",
];

/// Reads `src` into the simple commands it would run; `Err` when the text is not a command
/// the reader can follow (unbalanced quotes, a substitution).
pub(super) fn parse(src: &str) -> Result<Parsed, String> {
    let mut out = Parsed::default();
    let toks = tokenize(src, &mut out.problems)?;
    let mut case_depth = 0usize;
    let mut segment: Vec<String> = Vec::new();
    let mut i = 0;
    while i <= toks.len() {
        match toks.get(i) {
            Some(Tok::Word(w)) => segment.push(w.clone()),
            op => {
                let op = match op {
                    Some(Tok::Op(o)) => *o,
                    _ => ";",
                };
                if op == "&" {
                    out.problems.push(
                        "`&` runs a command in the background; run it in the foreground".into(),
                    );
                }
                // A `case` pattern is the words before `)` while inside a `case`.
                let is_pattern = op == ")" && case_depth > 0 && !segment.is_empty();
                if !is_pattern {
                    take_command(&segment, &mut case_depth, &mut out.commands);
                }
                segment.clear();
            }
        }
        i += 1;
    }
    if out.commands.is_empty() && out.problems.is_empty() {
        return Err("the verification command is empty".into());
    }
    Ok(out)
}

/// Strips keywords off one segment between operators and keeps the command it runs, if any.
fn take_command(segment: &[String], case_depth: &mut usize, commands: &mut Vec<Vec<String>>) {
    let mut start = 0;
    while start < segment.len() && LEADING_KEYWORDS.contains(&segment[start].as_str()) {
        if segment[start] == "esac" {
            *case_depth = case_depth.saturating_sub(1);
        }
        start += 1;
    }
    let words = &segment[start..];
    match words.first().map(String::as_str) {
        None => {}
        // `for NAME in WORDS` and `case WORD in`: the words are data, nothing runs.
        Some("for" | "select") => {}
        Some("case") => *case_depth += 1,
        Some(_) => commands.push(words.to_vec()),
    }
}

fn tokenize(src: &str, problems: &mut Vec<String>) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            ' ' | '\t' | '\r' => i += 1,
            '\\' if next == Some('\n') => i += 2,
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\n' | ';' => {
                let op = if c == ';' && next == Some(';') {
                    i += 1;
                    ";;"
                } else {
                    ";"
                };
                toks.push(Tok::Op(op));
                i += 1;
            }
            '&' if next == Some('&') => {
                toks.push(Tok::Op("&&"));
                i += 2;
            }
            '|' if next == Some('|') => {
                toks.push(Tok::Op("||"));
                i += 2;
            }
            '|' => {
                // `|&` pipes standard error too.
                i += if next == Some('&') { 2 } else { 1 };
                toks.push(Tok::Op("|"));
            }
            '(' | ')' => {
                toks.push(Tok::Op(if c == '(' { "(" } else { ")" }));
                i += 1;
            }
            '&' if next != Some('>') => {
                toks.push(Tok::Op("&"));
                i += 1;
            }
            _ => {
                if let Some(used) = redirection(&chars[i..], problems)? {
                    i += used;
                } else {
                    let (word, used) = read_word(&chars[i..])?;
                    toks.push(Tok::Word(word));
                    i += used;
                }
            }
        }
    }
    Ok(toks)
}

/// A redirection at the start of `rest` (`2>&1`, `> f`, `>> f`, `&> f`, `< f`, `<<EOF`): how
/// many characters it took, with a problem noted when it writes a file; `None` when `rest`
/// does not start with one.
fn redirection(rest: &[char], problems: &mut Vec<String>) -> Result<Option<usize>, String> {
    let mut i = 0;
    while i < rest.len() && rest[i].is_ascii_digit() {
        i += 1;
    }
    let both = i == 0 && rest.first() == Some(&'&');
    if both {
        i = 1;
    }
    let Some(&dir) = rest.get(i) else {
        return Ok(None);
    };
    if dir != '<' && dir != '>' {
        return Ok(None);
    }
    i += 1;
    if rest.get(i) == Some(&'(') {
        return Err(SUBSTITUTION.into());
    }
    let mut writes = dir == '>';
    match (dir, rest.get(i)) {
        ('>', Some('>' | '|')) => i += 1,
        ('<', Some('<')) => {
            i += 1;
            if matches!(rest.get(i), Some('<' | '-')) {
                i += 1;
            }
        }
        ('<', Some('>')) => {
            writes = true;
            i += 1;
        }
        _ => {}
    }
    let dup = !both && rest.get(i) == Some(&'&');
    if dup {
        i += 1;
    }
    while rest.get(i).is_some_and(|c| *c == ' ' || *c == '\t') {
        i += 1;
    }
    let (target, used) = if rest.get(i).is_some_and(|c| !"\n;&|()<>".contains(*c)) {
        read_word(&rest[i..])?
    } else {
        (String::new(), 0)
    };
    i += used;
    let fd_dup = dup && (target == "-" || target.chars().all(|c| c.is_ascii_digit()));
    if writes && !fd_dup && target != "/dev/null" {
        let shown = if target.is_empty() {
            "(nothing)"
        } else {
            &target
        };
        problems.push(format!(
            "output is redirected over `{shown}`; a verification command must not write files \
             (only `/dev/null` and `2>&1` are allowed)"
        ));
    }
    Ok(Some(i))
}

const SUBSTITUTION: &str = "command substitution (`$(…)`, backquotes, `<(…)`) runs commands the \
                            judge cannot see; write the command out";

/// One word at the start of `rest`, quotes removed, and how many characters it took.
fn read_word(rest: &[char]) -> Result<(String, usize), String> {
    let mut word = String::new();
    let mut i = 0;
    while i < rest.len() {
        let c = rest[i];
        let next = rest.get(i + 1).copied();
        match c {
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
            '\\' => {
                if let Some(n) = next {
                    word.push(n);
                }
                i += 2;
            }
            '\'' => {
                i += 1;
                loop {
                    match rest.get(i) {
                        None => return Err("unbalanced quotes".into()),
                        Some('\'') => break,
                        Some(&ch) => word.push(ch),
                    }
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                i += 1;
                loop {
                    match rest.get(i) {
                        None => return Err("unbalanced quotes".into()),
                        Some('"') => break,
                        Some('`') => return Err(SUBSTITUTION.into()),
                        Some('$') if rest.get(i + 1) == Some(&'(') => {
                            return Err(SUBSTITUTION.into())
                        }
                        Some('\\') if rest.get(i + 1).is_some() => {
                            word.push(rest[i + 1]);
                            i += 1;
                        }
                        Some(&ch) => word.push(ch),
                    }
                    i += 1;
                }
                i += 1;
            }
            '`' => return Err(SUBSTITUTION.into()),
            '$' if next == Some('(') => return Err(SUBSTITUTION.into()),
            _ => {
                word.push(c);
                i += 1;
            }
        }
    }
    Ok((word, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmds(src: &str) -> Vec<String> {
        parse(src)
            .unwrap()
            .commands
            .iter()
            .map(|w| w.join(" "))
            .collect()
    }

    #[test]
    fn compound_commands_show_every_inner_command() {
        assert_eq!(cmds("cd x && cargo test"), ["cd x", "cargo test"]);
        assert_eq!(cmds("! rg -n 'a b' src"), ["rg -n a b src"]);
        assert_eq!(
            cmds("for f in a b; do grep -c fn \"$f\"; done"),
            ["grep -c fn $f"]
        );
        assert_eq!(
            cmds("if test -f x; then cargo test; else rm y; fi"),
            ["test -f x", "cargo test", "rm y"]
        );
        assert_eq!(cmds("(cd x && make test)"), ["cd x", "make test"]);
        assert_eq!(cmds("{ a; b; }"), ["a", "b"]);
        assert_eq!(
            cmds("case x in x) cargo test;; y) rm z;; esac"),
            ["cargo test", "rm z"]
        );
        assert_eq!(cmds("echo 'a > b; rm x'"), ["echo a > b; rm x"]);
    }

    #[test]
    fn redirections_over_files_and_substitutions_are_problems() {
        assert!(parse("cargo test 2>&1 | grep x")
            .unwrap()
            .problems
            .is_empty());
        assert!(parse("cargo test >/dev/null 2>&1")
            .unwrap()
            .problems
            .is_empty());
        assert!(parse("while read l; do echo $l; done < list.txt")
            .unwrap()
            .problems
            .is_empty());
        for src in [
            "cargo test > log",
            "echo x>>f",
            "cargo test &> log",
            "ls 1> out",
            "a >| f",
        ] {
            assert_eq!(parse(src).unwrap().problems.len(), 1, "{src}");
        }
        for src in [
            "echo $(rm x)",
            "echo `rm x`",
            "cat <(rm x)",
            "echo \"$(rm x)\"",
            "echo 'open",
        ] {
            assert!(parse(src).is_err(), "{src}");
        }
        assert_eq!(parse("cargo test &").unwrap().problems.len(), 1);
    }
}
