//! Whether a verification command is safe to run: it only reads or tests.
//!
//! The command is parsed, not grepped. A quote-aware scan splits it at the shell's control
//! operators (`;`, `&&`, `||`, `|`, `&`) and finds redirections; each piece is then split into
//! words with `shlex`, and its program (after `env`, `timeout` and other wrappers, and leading
//! `NAME=value` assignments) is judged: deleting, moving, overwriting, resetting or publishing
//! programs and subcommands are refused, as are SQL words that destroy data anywhere in the
//! command, output redirected over a file, and anything the check cannot see through (command
//! substitution, `sh -c`, `eval`). The program must exist: on `PATH`, or as a file in the project.

use std::path::Path;

use crate::project::{PathError, Project};

/// Why one piece of a verification command is refused. The text is what the model (or the
/// workflow's author) reads, so each says what to do instead.
#[derive(Debug, thiserror::Error)]
enum Unsafe {
    #[error(
        "command substitution (`$(…)`, backquotes, `<(…)`) runs commands the check cannot \
         see; write the command out"
    )]
    Substitution,
    #[error("unbalanced quotes")]
    UnbalancedQuotes,
    #[error("no program to run")]
    NoProgram,
    #[error("the program `{0}` is a variable; name the program itself")]
    Variable(String),
    #[error("`{program}` {why}; a verification command only reads or tests")]
    Program { program: String, why: &'static str },
    #[error(
        "`git {0}` may change the repository or the working tree (reset, clean, push, \
         checkout, …); use a reading subcommand such as `git status` or `git diff`"
    )]
    GitWrites(String),
    #[error("`git` without a subcommand")]
    GitBare,
    #[error("`cargo {0}` changes files or publishes; use `cargo test` or `cargo check`")]
    CargoWrites(String),
    #[error("`cargo fmt` rewrites sources; use `cargo fmt --check`")]
    CargoFmt,
    #[error("`{program} {sub}` changes or publishes packages")]
    PackageWrites { program: String, sub: String },
    #[error("`{0} -i` edits files in place")]
    InPlace(String),
    #[error(
        "`find` with `-delete` or `-exec` changes files or runs commands the check cannot see"
    )]
    FindRuns,
    #[error("`{0} --force` overrides safety checks")]
    Force(String),
    #[error("`{0}` is not a file")]
    NotAFile(String),
    #[error("the program `{program}`: {source}")]
    Path {
        program: String,
        #[source]
        source: PathError,
    },
    #[error(
        "the program `{0}` is not installed (not found on PATH); name a program of the \
         project's toolchain"
    )]
    NotInstalled(String),
}

/// Programs refused whatever their arguments: they delete, move, overwrite, change owners or
/// rights, escalate, or run another command the check cannot see.
const REFUSED_PROGRAMS: &[(&str, &str)] = &[
    ("rm", "deletes files"),
    ("rmdir", "deletes folders"),
    ("unlink", "deletes files"),
    ("shred", "destroys files"),
    ("mv", "moves (and may overwrite) files"),
    ("cp", "may overwrite files"),
    ("dd", "writes raw data over files or devices"),
    ("truncate", "cuts files"),
    ("tee", "writes files"),
    ("install", "copies over files"),
    ("rsync", "copies over (and may delete) files"),
    ("chmod", "changes file rights"),
    ("chown", "changes file owners"),
    ("ln", "may replace files with links"),
    ("mkfs", "formats file systems"),
    ("kill", "stops processes"),
    ("killall", "stops processes"),
    ("pkill", "stops processes"),
    ("reboot", "restarts the machine"),
    ("shutdown", "stops the machine"),
    ("sudo", "runs with other rights"),
    ("su", "runs as another user"),
    ("doas", "runs with other rights"),
    ("sh", "runs a script the check cannot see"),
    ("bash", "runs a script the check cannot see"),
    ("zsh", "runs a script the check cannot see"),
    ("eval", "runs text the check cannot see"),
    ("exec", "replaces the shell"),
    (
        "xargs",
        "runs commands built from input the check cannot see",
    ),
    ("curl", "reaches the network and may write files"),
    ("wget", "reaches the network and writes files"),
];

/// Wrappers that run the rest of the words as the command; skipped to find the real program.
const WRAPPERS: &[&str] = &["env", "time", "nice", "nohup", "timeout", "command"];

/// `git` subcommands that only read.
const GIT_READS: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "grep",
    "ls-files",
    "ls-tree",
    "rev-parse",
    "blame",
    "describe",
    "shortlog",
    "cat-file",
];

/// SQL words that destroy data, refused wherever they appear (`psql -c "DROP TABLE t"`).
const SQL_WORDS: &[&str] = &["DROP", "DELETE", "TRUNCATE"];

/// Why `command` is not a safe verification command, one reason per problem; `Ok` when it is.
pub fn check_command(command: &str, project: &Project) -> Result<(), Vec<String>> {
    judge(command, Some(project))
}

/// The safety judgement alone, without asking whether the programs are installed: what the
/// judged corpus (`tests/data/verification-commands.tsv`) measures on any machine.
pub fn judge_command(command: &str) -> Result<(), Vec<String>> {
    judge(command, None)
}

fn judge(command: &str, project: Option<&Project>) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let scan = match scan(command) {
        Ok(s) => s,
        Err(e) => return Err(vec![format!("`{command}`: {e}")]),
    };
    for target in &scan.redirections {
        errors.push(format!(
            "`{command}`: output is redirected over `{target}`; a verification command must not \
             write files (only `/dev/null` and `2>&1` are allowed)"
        ));
    }
    if scan.background {
        errors.push(format!(
            "`{command}`: `&` runs a command in the background; run it in the foreground"
        ));
    }
    if scan.pieces.iter().all(|p| p.trim().is_empty()) {
        errors.push("the verification command is empty".to_string());
    }
    for piece in scan.pieces.iter().filter(|p| !p.trim().is_empty()) {
        let Some(words) = shlex::split(piece) else {
            errors.push(format!("`{piece}`: unbalanced quotes"));
            continue;
        };
        for w in &words {
            for sql in w.split(|c: char| !c.is_ascii_alphabetic()) {
                let upper = sql.to_ascii_uppercase();
                if SQL_WORDS.contains(&upper.as_str()) && sql.len() == upper.len() {
                    errors.push(format!(
                        "`{piece}`: `{sql}` destroys data; a verification command only reads"
                    ));
                }
            }
        }
        if let Err(e) = check_words(&words, project) {
            errors.push(format!("`{}`: {e}", piece.trim()));
        }
    }
    errors.dedup();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Judges one simple command's words.
fn check_words(words: &[String], project: Option<&Project>) -> Result<(), Unsafe> {
    let mut i = 0;
    loop {
        // Leading assignments (`RUST_LOG=debug cargo test`).
        while i < words.len() && is_assignment(&words[i]) {
            i += 1;
        }
        let Some(program) = words.get(i) else {
            return Err(Unsafe::NoProgram);
        };
        if program.starts_with('$') {
            return Err(Unsafe::Variable(program.clone()));
        }
        let base = program.rsplit('/').next().unwrap_or(program);
        if WRAPPERS.contains(&base) {
            i += 1;
            // Skip the wrapper's own options and, for `timeout`, its duration.
            while i < words.len() && words[i].starts_with('-') {
                i += 1;
            }
            if base == "timeout" && i < words.len() {
                i += 1;
            }
            continue;
        }
        let args = &words[i + 1..];
        if let Some((_, why)) = REFUSED_PROGRAMS
            .iter()
            .find(|(p, _)| *p == base || (base.starts_with("mkfs") && *p == "mkfs"))
        {
            return Err(Unsafe::Program {
                program: base.to_string(),
                why,
            });
        }
        subcommand_rules(base, args)?;
        return match project {
            Some(project) => exists(program, project),
            None => Ok(()),
        };
    }
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Rules for programs that both read and write, by subcommand or flag.
fn subcommand_rules(program: &str, args: &[String]) -> Result<(), Unsafe> {
    let first = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str);
    let has = |flag: &str| {
        args.iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    match program {
        "git" => match first {
            Some(sub) if GIT_READS.contains(&sub) => Ok(()),
            Some(sub) => Err(Unsafe::GitWrites(sub.to_string())),
            None => Err(Unsafe::GitBare),
        },
        "cargo" => match first {
            Some(sub @ ("clean" | "install" | "uninstall" | "publish" | "yank" | "fix")) => {
                Err(Unsafe::CargoWrites(sub.to_string()))
            }
            Some("fmt") if !has("--check") => Err(Unsafe::CargoFmt),
            _ => Ok(()),
        },
        "npm" | "pnpm" | "yarn" => match first {
            Some(sub @ ("publish" | "unpublish" | "uninstall" | "remove" | "rm" | "prune")) => {
                Err(Unsafe::PackageWrites {
                    program: program.to_string(),
                    sub: sub.to_string(),
                })
            }
            _ => Ok(()),
        },
        "sed" | "perl"
            if args.iter().any(|a| {
                a == "-i"
                    || a.starts_with("--in-place")
                    || (a.starts_with("-i") && program == "sed")
            }) =>
        {
            Err(Unsafe::InPlace(program.to_string()))
        }
        "find" if has("-delete") || has("-exec") || has("-execdir") || has("-ok") => {
            Err(Unsafe::FindRuns)
        }
        _ if has("--force") => Err(Unsafe::Force(program.to_string())),
        _ => Ok(()),
    }
}

/// Whether `program` can be found: a path inside the project, or a name on `PATH`.
fn exists(program: &str, project: &Project) -> Result<(), Unsafe> {
    if program.contains('/') {
        let rel = program.strip_prefix("./").unwrap_or(program);
        return match project.resolve(rel) {
            Ok(p) if p.is_file() => Ok(()),
            Ok(_) => Err(Unsafe::NotAFile(program.to_string())),
            Err(source) => Err(Unsafe::Path {
                program: program.to_string(),
                source,
            }),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|dir| is_executable(&dir.join(program)));
    if found {
        Ok(())
    } else {
        Err(Unsafe::NotInstalled(program.to_string()))
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A command split at its control operators, with what the scan noticed on the way.
#[derive(Debug, Default)]
struct Scan {
    pieces: Vec<String>,
    /// Targets of output redirections over files.
    redirections: Vec<String>,
    background: bool,
}

/// Splits `command` at unquoted `;`, `&&`, `||`, `|`, `&` and newlines, and notes redirections.
fn scan(command: &str) -> Result<Scan, Unsafe> {
    let mut out = Scan::default();
    let mut piece = String::new();
    let chars: Vec<char> = command.chars().collect();
    let (mut single, mut double) = (false, false);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if single {
            if c == '\'' {
                single = false;
            }
            piece.push(c);
            i += 1;
            continue;
        }
        if c == '\\' {
            piece.push(c);
            if let Some(n) = next {
                piece.push(n);
            }
            i += 2;
            continue;
        }
        if c == '`' || (c == '$' && next == Some('(')) || (c == '<' && next == Some('(')) {
            return Err(Unsafe::Substitution);
        }
        if double {
            if c == '"' {
                double = false;
            }
            piece.push(c);
            i += 1;
            continue;
        }
        match c {
            '\'' => single = true,
            '"' => double = true,
            ';' | '\n' => {
                out.pieces.push(std::mem::take(&mut piece));
                i += 1;
                continue;
            }
            '|' | '&' if next == Some(c) => {
                out.pieces.push(std::mem::take(&mut piece));
                i += 2;
                continue;
            }
            '&' if next == Some('>') => {
                // `&>file`: both streams over a file.
                let (target, used) = redirect_target(&chars[i + 2..]);
                note_redirection(&mut out, &target);
                i += 2 + used;
                continue;
            }
            '&' if piece.ends_with('>') => {}
            '&' => {
                out.background = true;
                out.pieces.push(std::mem::take(&mut piece));
                i += 1;
                continue;
            }
            '|' => {
                out.pieces.push(std::mem::take(&mut piece));
                i += 1;
                continue;
            }
            '>' => {
                // Drop a file-descriptor number written just before (`2>`).
                while piece.ends_with(|ch: char| ch.is_ascii_digit()) {
                    piece.pop();
                }
                let mut j = i + 1;
                if matches!(chars.get(j), Some('>') | Some('|')) {
                    j += 1;
                }
                let (target, used) = redirect_target(&chars[j..]);
                note_redirection(&mut out, &target);
                i = j + used;
                continue;
            }
            _ => {}
        }
        piece.push(c);
        i += 1;
    }
    if single || double {
        return Err(Unsafe::UnbalancedQuotes);
    }
    out.pieces.push(piece);
    Ok(out)
}

/// The word after a `>` (spaces skipped), and how many characters it took.
fn redirect_target(rest: &[char]) -> (String, usize) {
    let mut used = 0;
    while used < rest.len() && rest[used] == ' ' {
        used += 1;
    }
    let mut target = String::new();
    while used < rest.len() && !rest[used].is_whitespace() && !";|&".contains(rest[used]) {
        target.push(rest[used]);
        used += 1;
    }
    // `2>&1`: the `&` belongs to the target.
    if target.is_empty() && rest.get(used) == Some(&'&') {
        target.push('&');
        used += 1;
        while used < rest.len() && rest[used].is_ascii_digit() {
            target.push(rest[used]);
            used += 1;
        }
    }
    (target, used)
}

fn note_redirection(out: &mut Scan, target: &str) {
    let harmless = target == "/dev/null" || (target.starts_with('&') && target.len() > 1);
    if !harmless {
        out.redirections.push(if target.is_empty() {
            "(nothing)".to_string()
        } else {
            target.to_string()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_and_redirections_are_found_outside_quotes_only() {
        let s = scan("cargo test 2>&1 | tee out.txt && echo 'a > b; c'").unwrap();
        assert_eq!(s.pieces.len(), 3, "{:?}", s.pieces);
        assert!(s.redirections.is_empty());
        let s = scan("cargo test > log.txt").unwrap();
        assert_eq!(s.redirections, vec!["log.txt"]);
        let s = scan("echo x>>notes.md").unwrap();
        assert_eq!(s.redirections, vec!["notes.md"]);
        assert!(scan("echo $(rm -rf /)").is_err());
        assert!(scan("echo 'open").is_err());
    }

    #[test]
    fn assignments_and_wrappers_are_skipped() {
        assert!(is_assignment("RUST_LOG=debug"));
        assert!(!is_assignment("--x=1"));
        let dir = tempfile::tempdir().unwrap();
        let p = Project::open(dir.path()).unwrap();
        let words: Vec<String> = ["timeout", "60", "rm", "x"].map(String::from).to_vec();
        assert!(check_words(&words, Some(&p))
            .unwrap_err()
            .to_string()
            .contains("deletes"));
    }
}
