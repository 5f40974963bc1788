//! Whether a verification command is safe to run: it only reads or tests.
//!
//! The command is read by a shell reader ([`shell`]) into every simple command it would run —
//! through `&&`, `||`, `|`, `!`, `;`, subshells, `{ …; }`, `if`/`for`/`while`/`case` — with
//! output redirections over files, substitutions and background jobs refused. Each simple
//! command is judged after its leading `NAME=value` assignments and its wrappers (`env`,
//! `timeout`, `nice`, `nohup`, `time`, `command`, `stdbuf`, `xargs`, each with its own flags)
//! against a table of programs kept as data ([`programs`]): program → subcommand → reads or
//! writes, plus the flags that make a use write (`-i`, `--fix`) or only read (`--check`,
//! `--dry-run`). The table is an allowlist: a program it does not know, inline code (`-c`,
//! `-e`, `system()`), remote shells and containers are never proven safe. SQL is judged with a
//! SQL parser, and only inside a database client's statement ([`sql`]). Finally the program
//! must exist: on `PATH`, or as a file in the project.

mod programs;
mod shell;
mod sql;

use std::path::Path;

use crate::project::{PathError, Project};
use programs::{Entry, Rule};

/// Shell builtins: never looked up on `PATH`.
const BUILTINS: &[&str] = &[
    "cd", "set", "export", "unset", "read", "shift", "exit", "return", "local", "declare", "true",
    "false", "test", "[", "[[", "echo", "printf", "pwd", ":", "wait", "type", "eval", "exec",
    "trap", "source", ".",
];

/// Why `command` is not a safe verification command, one reason per problem; `Ok` when it is.
pub fn check_command(command: &str, project: &Project) -> Result<(), Vec<String>> {
    let mut programs = Vec::new();
    let mut errors = judge(command, &mut programs);
    if errors.is_empty() {
        for program in &programs {
            if let Err(e) = exists(program, project) {
                errors.push(format!("`{command}`: {e}"));
            }
        }
    }
    finish(errors)
}

/// The programs a verification command may open with here: those the judge knows to read or
/// test, or to run another command (`env`, `timeout`, `xargs`, `npx`, …), found on `PATH`. A
/// step's tool schema offers them as the only openings (`workflow::tool`), so a model under a
/// grammar cannot wrap its command in prose: Qwen2.5-Coder-1.5B wrote "Run `cargo test …` to
/// ensure …" three times over, and each was refused as a command substitution.
pub fn installed_openers() -> Vec<&'static str> {
    const WRAPPERS: &[&str] = &["env", "timeout", "nice", "nohup", "stdbuf", "xargs"];
    let dirs = path_dirs();
    let mut names: Vec<&'static str> = WRAPPERS.to_vec();
    names.extend(
        programs::PROGRAMS
            .iter()
            .filter(|(name, rule)| !matches!(rule, Rule::Writes(_)) && !BUILTINS.contains(name))
            .map(|(name, _)| *name),
    );
    let mut found: Vec<&'static str> = names.into_iter().filter(|n| on_path(&dirs, n)).collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// The safety judgement alone, without asking whether the programs are installed: what the
/// judged corpus (`tests/data/verification-commands.tsv`) measures on any machine.
pub fn judge_command(command: &str) -> Result<(), Vec<String>> {
    finish(judge(command, &mut Vec::new()))
}

fn finish(mut errors: Vec<String>) -> Result<(), Vec<String>> {
    errors.dedup();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The reasons `command` is refused; the programs it runs are added to `programs`.
fn judge(command: &str, programs: &mut Vec<String>) -> Vec<String> {
    let mut errors = judge_text(command, programs);
    if !errors.is_empty() {
        if let Some(inner) = quoted_command(command) {
            errors.push(format!(
                "the text reads as a sentence around the command `{inner}`: write the command \
                 alone, with no words around it and no backquotes"
            ));
        }
    }
    errors
}

fn judge_text(command: &str, programs: &mut Vec<String>) -> Vec<String> {
    let parsed = match shell::parse(command) {
        Ok(p) => p,
        Err(e) => return vec![format!("`{command}`: {e}")],
    };
    let mut errors: Vec<String> = parsed
        .problems
        .iter()
        .map(|p| format!("`{command}`: {p}"))
        .collect();
    for words in &parsed.commands {
        if let Err(e) = simple(words, programs) {
            errors.push(format!("`{}`: {e}", words.join(" ")));
        }
    }
    errors
}

/// The first backquoted span of `text` that is a safe command on its own, when text lies
/// outside the quotes: a sentence about a command rather than the command.
fn quoted_command(text: &str) -> Option<&str> {
    let trimmed = text.trim();
    if trimmed.starts_with('`') && trimmed.ends_with('`') && trimmed.matches('`').count() == 2 {
        // The whole text quoted: the span is not inside a sentence.
        return None;
    }
    trimmed
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .find(|span| !span.is_empty() && judge_text(span, &mut Vec::new()).is_empty())
}

/// Judges one simple command's words: assignments and wrappers first, then the table.
fn simple(words: &[String], programs: &mut Vec<String>) -> Result<(), String> {
    let mut i = 0;
    loop {
        while words.get(i).is_some_and(|w| is_assignment(w)) {
            i += 1;
        }
        let Some(program) = words.get(i) else {
            return Ok(());
        };
        if program.starts_with('$') {
            return Err(format!(
                "the program `{program}` is a variable; name the program itself"
            ));
        }
        let base = program.rsplit('/').next().unwrap_or(program);
        let rest = &words[i + 1..];
        let skip = match base {
            "env" => wrapper_args(
                rest,
                &["-u", "-C", "--unset", "--chdir"],
                &["-S", "--split-string"],
                true,
            )?,
            "timeout" => {
                let n = wrapper_args(rest, &["-s", "-k", "--signal", "--kill-after"], &[], false)?;
                n + usize::from(n < rest.len())
            }
            "nice" => wrapper_args(rest, &["-n", "--adjustment"], &[], false)?,
            "nohup" | "time" => wrapper_args(rest, &[], &[], false)?,
            "stdbuf" => wrapper_args(rest, &["-o", "-e", "-i"], &[], false)?,
            "command" if rest.first().is_some_and(|a| a == "-v" || a == "-V") => return Ok(()),
            "command" => wrapper_args(rest, &[], &[], false)?,
            "xargs" => wrapper_args(
                rest,
                &[
                    "-a",
                    "-d",
                    "-E",
                    "-I",
                    "-L",
                    "-n",
                    "-P",
                    "-s",
                    "--arg-file",
                    "--delimiter",
                    "--max-args",
                ],
                &[],
                false,
            )?,
            _ => {
                return match programs::lookup(program) {
                    Some(rule) => {
                        if !BUILTINS.contains(&base) {
                            programs.push(program.clone());
                        }
                        apply(rule, base.to_string(), rest, programs)
                    }
                    // A file of the project (`./check.sh`): the project's own tooling.
                    None if program.contains('/') => {
                        programs.push(program.clone());
                        Ok(())
                    }
                    None => Err(format!(
                        "`{base}` is not a program the judge knows to only read or test; use a \
                         known test or read command (docs/workflows.md lists them)"
                    )),
                };
            }
        };
        if !BUILTINS.contains(&base) && base != "time" {
            programs.push(program.clone());
        }
        i += 1 + skip;
        // `env` alone prints the environment (and its secrets); `nohup` alone runs nothing.
        if words[i.min(words.len())..].iter().all(|w| is_assignment(w)) {
            return Err(format!(
                "`{base}` wraps no command; name the test or read command it runs"
            ));
        }
    }
}

/// How many of a wrapper's own words come before the command it runs: its flags, the values of
/// `valued` flags (`-u VAR`, `-s KILL`), and with `assignments` the `NAME=value` words.
fn wrapper_args(
    rest: &[String],
    valued: &[&str],
    refused: &[&str],
    assignments: bool,
) -> Result<usize, String> {
    let mut i = 0;
    while let Some(a) = rest.get(i) {
        if refused.iter().any(|r| programs::is_flag(a, r)) {
            return Err(format!("`{a}` {}", programs::INLINE));
        }
        if a == "--" {
            return Ok(i + 1);
        }
        if valued.contains(&a.as_str()) {
            i += 2;
        } else if a.starts_with('-') || (assignments && is_assignment(a)) {
            i += 1;
        } else {
            break;
        }
    }
    Ok(i)
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

/// Applies one rule of the table to a program (or subcommand) named `name` and its `args`.
fn apply(
    rule: Rule,
    name: String,
    args: &[String],
    programs: &mut Vec<String>,
) -> Result<(), String> {
    match rule {
        Rule::Reads => Ok(()),
        Rule::Writes(why) => Err(format!(
            "`{name}` {why}; a verification command only reads or tests"
        )),
        Rule::Run if args.is_empty() => Ok(()),
        // `python -m MODULE`: the module is not a program on `PATH`.
        Rule::Run if name.ends_with(" -m") => simple(args, &mut Vec::new()),
        Rule::Run => simple(args, programs),
        Rule::Sql(client) => sql::judge(client, args).map_err(|e| format!("`{name}` {e}")),
        Rule::Awk => awk(&name, args),
        Rule::Table(entry) => table(entry, name, args, programs),
    }
}

fn table(
    entry: &Entry,
    name: String,
    args: &[String],
    programs: &mut Vec<String>,
) -> Result<(), String> {
    let mut sub = None;
    let mut word = None;
    let mut j = 0;
    while let Some(a) = args.get(j) {
        if a == "--" {
            break;
        }
        if entry.value_flags.contains(&a.as_str()) {
            j += 2;
            continue;
        }
        let base = a.rsplit('/').next().unwrap_or(a);
        if let Some((_, rule)) = entry.subs.iter().find(|(s, _)| *s == a || *s == base) {
            sub = Some((j, *rule));
            break;
        }
        // `+nightly` picks a toolchain (`cargo +nightly test`), like a flag.
        if !a.starts_with('-') && !a.starts_with('+') {
            word = Some(j);
            break;
        }
        j += 1;
    }
    let before = match sub {
        Some((k, _)) => &args[..k],
        None => args,
    };
    for arg in before {
        if let Some((_, why)) = entry
            .writes_if
            .iter()
            .find(|(spec, _)| programs::is_flag(arg, spec))
        {
            return Err(format!(
                "`{name} {arg}` {why}; a verification command only reads or tests"
            ));
        }
    }
    if before
        .iter()
        .any(|a| entry.reads_if.iter().any(|s| programs::is_flag(a, s)))
    {
        return Ok(());
    }
    match (sub, word) {
        (Some((k, rule)), _) => apply(
            rule,
            format!("{name} {}", args[k]),
            &args[k + 1..],
            programs,
        ),
        (None, Some(k)) => {
            if entry.script {
                let script = &args[k];
                programs.push(if script.contains('/') {
                    script.clone()
                } else {
                    format!("./{script}")
                });
            }
            apply(
                entry.default,
                format!("{name} {}", args[k]),
                &args[k + 1..],
                programs,
            )
        }
        (None, None) => apply(entry.bare, name, &[], programs),
    }
}

/// `awk` reads its program text: `system()`, output redirection (`>`), pipes (`|`) and
/// `getline` from commands run or write what the judge cannot see.
fn awk(name: &str, args: &[String]) -> Result<(), String> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-F" | "-v" => i += 2,
            "-f" | "--file" => return Err(format!("`{name} -f` {}", programs::INLINE)),
            "-i" | "--include" => {
                return Err(format!(
                    "`{name} -i` may edit files in place (`-i inplace`)"
                ))
            }
            _ if a.starts_with('-') => i += 1,
            text => {
                let writes = ["system", ">", "|", "getline", "close("]
                    .iter()
                    .find(|k| text.contains(*k));
                return match writes {
                    Some(k) => Err(format!(
                        "`{name}` program uses `{k}`, which writes files or runs commands the \
                         judge cannot see; a verification command only reads or tests"
                    )),
                    None => Ok(()),
                };
            }
        }
    }
    Ok(())
}

/// Whether `program` can be found: a path inside the project, or a name on `PATH`.
fn exists(program: &str, project: &Project) -> Result<(), String> {
    if program.contains('/') {
        let rel = program.strip_prefix("./").unwrap_or(program);
        return match project.resolve(rel) {
            Ok(p) if p.is_file() => Ok(()),
            Ok(_) => Err(format!("`{program}` is not a file")),
            Err(source) => Err(path_error(program, &source)),
        };
    }
    if on_path(&path_dirs(), program) {
        Ok(())
    } else {
        Err(format!(
            "the program `{program}` is not installed (not found on PATH); name a program of \
             the project's toolchain"
        ))
    }
}

fn path_error(program: &str, source: &PathError) -> String {
    format!("the program `{program}`: {source}")
}

/// The folders of `PATH`, in order.
fn path_dirs() -> Vec<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).collect()
}

/// Whether `program` is an executable file in one of `dirs`.
fn on_path(dirs: &[std::path::PathBuf], program: &str) -> bool {
    dirs.iter().any(|dir| is_executable(&dir.join(program)))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(c: &str) -> bool {
        judge_command(c).is_ok()
    }

    #[test]
    fn wrappers_are_read_with_their_own_flags() {
        assert!(ok("timeout -s KILL 300 cargo test"));
        assert!(ok("env -u VAR FOO=1 go test ./..."));
        assert!(ok("nice -n 10 cargo test"));
        assert!(!ok("timeout 60 rm x"));
        assert!(!ok("env -S 'rm x'"));
        assert!(ok("find src -name '*.rs' | xargs grep -l unsafe"));
        assert!(!ok("xargs -a files.txt rm"));
        assert!(!ok("nohup"));
        assert!(!ok("env FOO=1"));
        assert!(!ok("timeout 60"));
    }

    #[test]
    fn sql_words_outside_a_client_are_names() {
        assert!(ok("cargo test delete_user"));
        assert!(!ok("psql -c 'DELETE FROM users'"));
    }

    #[test]
    fn unknown_programs_are_never_safe() {
        let e = judge_command("frobnicate --all").unwrap_err();
        assert!(e[0].contains("not a program the judge knows"), "{e:?}");
    }

    #[test]
    fn a_sentence_around_a_command_is_told_to_write_the_command_alone() {
        let e =
            judge_command("Run `cargo test --lib` to ensure the new method works.").unwrap_err();
        assert!(
            e.iter()
                .any(|m| m.contains("sentence around the command `cargo test --lib`")),
            "{e:?}"
        );
        // A span that is itself refused is not offered.
        let e = judge_command("Run `rm -rf target` first.").unwrap_err();
        assert!(!e.iter().any(|m| m.contains("sentence")), "{e:?}");
        // A command wrapped whole in backquotes gets only the substitution's reason.
        let e = judge_command("`cargo test`").unwrap_err();
        assert!(!e.iter().any(|m| m.contains("sentence")), "{e:?}");
    }
}
