//! The programs the judge knows, as data: program → subcommand → verdict, and the flags that
//! make a reading use write (`-i`, `--fix`, `--write`, `-o FILE`) or a writing use only read
//! (`--check`, `--dry-run`, `-n`). A program not in this table is never proven safe.
//!
//! Why an allowlist: a denylist accepts every destructive program nobody thought of
//! (`terraform destroy`, `redis-cli FLUSHALL`, `crontab -r` were all accepted by the first
//! judge). Here each subcommand not listed as reading falls to its program's `default`, and
//! the defaults of programs that mostly write are refusals.

/// What running a program (or one of its subcommands) does.
#[derive(Clone, Copy, Debug)]
pub(super) enum Rule {
    /// Only reads or tests.
    Reads,
    /// Changes something; the text says what, and is shown after the command.
    Writes(&'static str),
    /// The next word is a subcommand judged by another table.
    Table(&'static Entry),
    /// The remaining words are a command of their own (`npx tsc`, `poetry run pytest`).
    Run,
    /// A database client: only a reading statement given on the command line passes.
    Sql(Client),
    /// `awk` and its kin: the program text is read for `system()`, `>` and `|`.
    Awk,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Client {
    Psql,
    Mysql,
    Sqlite,
    Redis,
}

/// One program's (or subcommand's) rules.
#[derive(Debug)]
pub(super) struct Entry {
    /// Without any subcommand word (`git`, `make`, `yarn`).
    pub bare: Rule,
    /// With a subcommand word not in `subs`.
    pub default: Rule,
    pub subs: &'static [(&'static str, Rule)],
    /// Flags that make any use write, with what they do; checked before everything else.
    pub writes_if: &'static [(&'static str, &'static str)],
    /// Flags that make the use only read (`--check`, `--dry-run`), checked next.
    pub reads_if: &'static [&'static str],
    /// Options that take the next word as their value, skipped to find the subcommand.
    pub value_flags: &'static [&'static str],
    /// The first word is a script (`python3 check.py`, `bash ci/test.sh`): the judge does not
    /// read it, so like `./check.sh` it must be a file inside the project.
    pub script: bool,
}

const R: Rule = Rule::Reads;
const fn w(why: &'static str) -> Rule {
    Rule::Writes(why)
}

/// The text for inline code: the judge reads no language but the shell's.
pub(super) const INLINE: &str = "runs inline code or a script text the judge cannot see into; \
                                 write the check as a known test or read command";
const DELETES: &str = "deletes files";
const EDITS: &str = "edits files in place";
const REFORMATS: &str = "rewrites files; use its check mode (`--check`)";
const REMOTE: &str = "runs commands on another machine or in a container the judge cannot see";
const INSTALLS: &str = "changes installed packages, the lock file or a registry";
const PUBLISHES: &str = "publishes to a registry";
const CLUSTER: &str = "changes the cluster or the infrastructure";
const SERVICES: &str = "changes services or scheduled jobs";
const UNPACKS: &str = "extracts, creates or rewrites archives";
const STOPS: &str = "stops processes or the machine";
const MIGRATES: &str = "changes the database";

const BASE: Entry = Entry {
    bare: R,
    default: R,
    subs: &[],
    writes_if: &[],
    reads_if: &[],
    value_flags: &[],
    script: false,
};
const fn reads() -> Entry {
    BASE
}

static INTERPRETER: Entry = Entry {
    bare: w(INLINE),
    writes_if: &[
        ("-c", INLINE),
        ("-e", INLINE),
        ("-E", INLINE),
        ("-r", INLINE),
        ("--eval", INLINE),
        ("--command", INLINE),
        ("-Command", INLINE),
        ("-i", EDITS),
        ("-p", INLINE),
        ("-n", INLINE),
    ],
    subs: &[("-m", Rule::Run), ("manage.py", Rule::Table(&MANAGE_PY))],
    reads_if: &["--version", "-V", "-v", "--test"],
    script: true,
    ..reads()
};
static SHELL: Entry = Entry {
    bare: w(INLINE),
    writes_if: &[("-c", INLINE), ("-s", INLINE)],
    script: true,
    ..reads()
};

static GIT: Entry = Entry {
    default: w(
        "may change the repository or the working tree (reset, clean, push, checkout, …); \
               use a reading subcommand such as `git status` or `git diff`",
    ),
    value_flags: &["-C", "-c", "--git-dir", "--work-tree", "--namespace"],
    // Configuration on the command line can name programs git runs (pager, diff, ssh, aliases).
    writes_if: &[
        (
            "-c",
            "sets configuration that can run programs (core.pager, aliases, …)",
        ),
        (
            "--config-env",
            "sets configuration that can run programs (core.pager, aliases, …)",
        ),
        ("--exec-path", "runs git programs from another folder"),
    ],
    subs: &[
        ("status", R),
        ("diff", Rule::Table(&GIT_DIFF)),
        ("log", Rule::Table(&GIT_DIFF)),
        ("show", Rule::Table(&GIT_DIFF)),
        ("grep", R),
        ("ls-files", R),
        ("ls-tree", R),
        ("ls-remote", R),
        ("rev-parse", R),
        ("rev-list", R),
        ("blame", R),
        ("describe", R),
        ("shortlog", R),
        ("cat-file", R),
        ("merge-base", R),
        ("name-rev", R),
        ("for-each-ref", R),
        ("show-ref", R),
        ("check-ignore", R),
        ("check-attr", R),
        ("count-objects", R),
        ("fsck", R),
        ("whatchanged", R),
        ("cherry", R),
        ("var", R),
        ("version", R),
        ("help", R),
        ("reflog", Rule::Table(&GIT_REFLOG)),
        ("stash", Rule::Table(&GIT_STASH)),
        ("branch", Rule::Table(&GIT_BRANCH)),
        ("tag", Rule::Table(&GIT_TAG)),
        ("config", Rule::Table(&GIT_CONFIG)),
        ("remote", Rule::Table(&GIT_REMOTE)),
        ("worktree", Rule::Table(&GIT_WORKTREE)),
        ("clean", Rule::Table(&GIT_CLEAN)),
    ],
    ..reads()
};
static GIT_DIFF: Entry = Entry {
    writes_if: &[("--output", "writes its output to a file")],
    ..reads()
};
static GIT_REFLOG: Entry = Entry {
    default: R,
    subs: &[
        ("expire", w("prunes the reflog")),
        ("delete", w("prunes the reflog")),
    ],
    ..reads()
};
static GIT_STASH: Entry = Entry {
    bare: w("stashes (and so resets) the working tree"),
    default: w("changes the stash or the working tree"),
    subs: &[("list", R), ("show", R)],
    ..reads()
};
static GIT_BRANCH: Entry = Entry {
    default: w("creates a branch"),
    writes_if: &[
        ("-d", "deletes a branch"),
        ("-D", "deletes a branch"),
        ("--delete", "deletes a branch"),
        ("-m", "renames a branch"),
        ("-M", "renames a branch"),
        ("-c", "copies a branch"),
        ("-C", "copies a branch"),
        ("-f", "forces a branch"),
        ("--force", "forces a branch"),
        ("-u", "sets an upstream"),
        ("--set-upstream-to", "sets an upstream"),
    ],
    reads_if: &["--list", "-l", "--contains", "--merged", "--no-merged"],
    ..reads()
};
static GIT_TAG: Entry = Entry {
    default: w("creates a tag"),
    writes_if: &[
        ("-d", "deletes a tag"),
        ("--delete", "deletes a tag"),
        ("-a", "creates a tag"),
        ("-s", "creates a tag"),
        ("-f", "replaces a tag"),
    ],
    reads_if: &["-l", "--list", "--contains"],
    ..reads()
};
static GIT_CONFIG: Entry = Entry {
    default: w("may set configuration"),
    reads_if: &["--get", "--get-all", "--get-regexp", "--list", "-l"],
    ..reads()
};
static GIT_REMOTE: Entry = Entry {
    default: w("changes remotes"),
    subs: &[("show", R), ("get-url", R)],
    ..reads()
};
static GIT_WORKTREE: Entry = Entry {
    default: w("changes worktrees"),
    subs: &[("list", R)],
    ..reads()
};
static GIT_CLEAN: Entry = Entry {
    bare: w("deletes untracked files"),
    default: w("deletes untracked files"),
    reads_if: &["-n", "--dry-run"],
    ..reads()
};

static CARGO: Entry = Entry {
    default: w(
        "is not a cargo subcommand the judge knows to only read or test; use \
               `cargo test`, `cargo check` or `cargo clippy`",
    ),
    value_flags: &["-Z", "--config", "--color", "-C"],
    // `--config target.….runner=…` or `-Z` can make cargo run any program.
    writes_if: &[
        (
            "--config",
            "sets configuration that can run programs (runners, linkers)",
        ),
        ("-Z", "turns on unstable behaviour"),
    ],
    subs: &[
        ("test", R),
        ("t", R),
        ("check", R),
        ("c", R),
        ("build", R),
        ("b", R),
        ("bench", R),
        ("doc", R),
        ("tree", R),
        ("metadata", R),
        ("run", R),
        ("r", R),
        ("nextest", R),
        ("audit", R),
        ("deny", R),
        ("package", R),
        ("search", R),
        ("version", R),
        ("verify-project", R),
        ("read-manifest", R),
        ("pkgid", R),
        ("locate-project", R),
        ("miri", R),
        ("llvm-cov", R),
        ("rustc", R),
        ("help", R),
        ("clippy", Rule::Table(&CARGO_CLIPPY)),
        ("fmt", Rule::Table(&CARGO_FMT)),
        ("clean", Rule::Table(&CARGO_CLEAN)),
        ("publish", Rule::Table(&CARGO_PUBLISH)),
        ("update", Rule::Table(&CARGO_UPDATE)),
        ("install", w(INSTALLS)),
        ("uninstall", w(INSTALLS)),
        ("yank", w(PUBLISHES)),
        ("owner", w(PUBLISHES)),
        ("login", w("stores a registry token")),
        ("fix", w("applies fixes to the sources")),
        ("add", w(INSTALLS)),
        ("remove", w(INSTALLS)),
        ("new", w("creates a package")),
        ("init", w("creates a package")),
        ("generate-lockfile", w(INSTALLS)),
        ("vendor", w("writes vendored sources")),
    ],
    ..reads()
};
static CARGO_CLIPPY: Entry = Entry {
    writes_if: &[("--fix", "applies fixes to the sources")],
    ..reads()
};
static CARGO_FMT: Entry = Entry {
    bare: w("rewrites sources; use `cargo fmt --check`"),
    default: w("rewrites sources; use `cargo fmt --check`"),
    reads_if: &["--check"],
    value_flags: &["-p", "--package"],
    ..reads()
};
static CARGO_CLEAN: Entry = Entry {
    bare: w("deletes the build output"),
    default: w("deletes the build output"),
    reads_if: &["--dry-run", "-n"],
    ..reads()
};
static CARGO_PUBLISH: Entry = Entry {
    bare: w(PUBLISHES),
    default: w(PUBLISHES),
    reads_if: &["--dry-run", "-n"],
    ..reads()
};
static CARGO_UPDATE: Entry = Entry {
    bare: w("changes Cargo.lock"),
    default: w("changes Cargo.lock"),
    reads_if: &["--dry-run"],
    ..reads()
};
static RUSTUP: Entry = Entry {
    default: w(INSTALLS),
    subs: &[("show", R), ("which", R), ("--version", R)],
    ..reads()
};

/// A package manager's `run SCRIPT`: only conventional test and lint scripts are known.
static RUN_SCRIPT: Entry = Entry {
    default: w("runs a package script the judge does not know; name a test or lint script"),
    subs: &[
        ("test", R),
        ("lint", R),
        ("check", R),
        ("build", R),
        ("typecheck", R),
        ("format:check", R),
    ],
    ..reads()
};
static NPM: Entry = Entry {
    default: w(INSTALLS),
    subs: &[
        ("test", R),
        ("t", R),
        ("ls", R),
        ("list", R),
        ("outdated", R),
        ("view", R),
        ("info", R),
        ("explain", R),
        ("why", R),
        ("doctor", R),
        ("help", R),
        ("audit", Rule::Table(&NPM_AUDIT)),
        ("run", Rule::Table(&RUN_SCRIPT)),
        ("run-script", Rule::Table(&RUN_SCRIPT)),
        ("exec", Rule::Run),
        ("pack", Rule::Table(&DRY_RUN_ONLY)),
        ("publish", Rule::Table(&PUBLISH)),
    ],
    ..reads()
};
static NPM_AUDIT: Entry = Entry {
    subs: &[("fix", w(INSTALLS))],
    ..reads()
};
static DRY_RUN_ONLY: Entry = Entry {
    bare: w("writes files"),
    default: w("writes files"),
    reads_if: &["--dry-run"],
    ..reads()
};
static PUBLISH: Entry = Entry {
    bare: w(PUBLISHES),
    default: w(PUBLISHES),
    reads_if: &["--dry-run"],
    ..reads()
};
static YARN: Entry = Entry {
    bare: w(INSTALLS),
    subs: &[
        ("test", R),
        ("why", R),
        ("list", R),
        ("ls", R),
        ("info", R),
        ("audit", R),
        ("run", Rule::Table(&RUN_SCRIPT)),
        ("exec", Rule::Run),
        ("lint", R),
        ("publish", Rule::Table(&PUBLISH)),
    ],
    ..NPM
};
static PIP: Entry = Entry {
    default: w(INSTALLS),
    subs: &[
        ("list", R),
        ("show", R),
        ("check", R),
        ("freeze", R),
        ("help", R),
    ],
    ..reads()
};
static UV: Entry = Entry {
    default: w(INSTALLS),
    subs: &[("run", Rule::Run), ("pip", Rule::Table(&PIP)), ("tree", R)],
    ..reads()
};
static POETRY: Entry = Entry {
    default: w(INSTALLS),
    subs: &[
        ("check", R),
        ("show", R),
        ("run", Rule::Run),
        ("publish", Rule::Table(&PUBLISH)),
    ],
    ..reads()
};
static GO: Entry = Entry {
    default: w(
        "is not a go subcommand the judge knows to only read or test; use `go test` or \
               `go vet`",
    ),
    subs: &[
        ("test", R),
        ("vet", R),
        ("build", R),
        ("list", R),
        ("version", R),
        ("env", R),
        ("doc", R),
        ("help", R),
        ("mod", Rule::Table(&GO_MOD)),
    ],
    ..reads()
};
static GO_MOD: Entry = Entry {
    default: w(INSTALLS),
    subs: &[("verify", R), ("graph", R), ("why", R)],
    ..reads()
};
static MAKE: Entry = Entry {
    bare: w(
        "runs the default Makefile target, whose recipe the judge cannot see; name a test \
            target such as `make test`",
    ),
    default: w(
        "runs a Makefile target the judge does not know to only read or test; use \
               `make test`, `make check` or `make -n`",
    ),
    subs: &[
        ("test", R),
        ("tests", R),
        ("check", R),
        ("lint", R),
        ("verify", R),
        ("build", R),
    ],
    reads_if: &[
        "-n",
        "--dry-run",
        "--just-print",
        "--recon",
        "-q",
        "--question",
    ],
    value_flags: &["-C", "-f", "-j", "--directory", "--file"],
    ..reads()
};
/// Build tools whose named tasks may do anything: only test, check and build tasks read.
static TASKS: Entry = Entry {
    bare: w("runs a default task the judge cannot see; name a test task"),
    default: w("runs a task the judge does not know to only read or test; name a test task"),
    subs: &[
        ("test", R),
        ("check", R),
        ("verify", R),
        ("build", R),
        ("compile", R),
        ("validate", R),
        ("lint", R),
        ("spec", R),
        ("exec", Rule::Run),
        ("show", R),
        ("list", R),
        ("why", R),
        ("--version", R),
    ],
    value_flags: &["-pl", "-P", "-f", "-p", "--project"],
    ..reads()
};
static DENO: Entry = Entry {
    default: w(INLINE),
    subs: &[
        ("test", R),
        ("check", R),
        ("lint", R),
        ("fmt", Rule::Table(&CHECK_FLAG)),
        ("eval", w(INLINE)),
    ],
    ..reads()
};
/// Formatters that rewrite by default and only read with `--check` (or `--diff`).
static CHECK_FLAG: Entry = Entry {
    bare: w(REFORMATS),
    default: w(REFORMATS),
    reads_if: &[
        "--check",
        "-check",
        "--diff",
        "-diff",
        "--check-only",
        "-c",
        "--dry-run",
    ],
    ..reads()
};
/// Tools that read by default and write with a flag (`-w`, `--write`, `--fix`, `-i`).
static FIX_FLAG: Entry = Entry {
    writes_if: &[
        ("-w", REFORMATS),
        ("--write", REFORMATS),
        ("--fix", "applies fixes to the files"),
        ("--apply", "applies fixes to the files"),
        ("-i", EDITS),
        ("--in-place", EDITS),
        ("--inplace", EDITS),
    ],
    ..reads()
};
static RUFF: Entry = Entry {
    subs: &[
        ("check", Rule::Table(&FIX_FLAG)),
        ("format", Rule::Table(&CHECK_FLAG)),
    ],
    default: w("is not a ruff subcommand the judge knows; use `ruff check`"),
    ..FIX_FLAG
};
static BIOME_TAPLO: Entry = Entry {
    default: w("is not a subcommand the judge knows; use `check` or `lint`"),
    subs: &[
        ("check", Rule::Table(&FIX_FLAG)),
        ("lint", Rule::Table(&FIX_FLAG)),
        ("ci", R),
        ("format", Rule::Table(&CHECK_FLAG)),
        ("fmt", Rule::Table(&CHECK_FLAG)),
    ],
    ..reads()
};
static TSC: Entry = Entry {
    bare: w("writes compiled JavaScript; use `tsc --noEmit`"),
    default: w("writes compiled JavaScript; use `tsc --noEmit`"),
    reads_if: &["--noEmit", "--version"],
    ..reads()
};
static SED: Entry = Entry {
    writes_if: &[("-i", EDITS), ("--in-place", EDITS)],
    ..reads()
};
static SORT: Entry = Entry {
    writes_if: &[
        ("-o", "writes its output over a file"),
        ("--output", "writes its output over a file"),
    ],
    ..reads()
};
static FIND: Entry = Entry {
    writes_if: &[
        (
            "-delete",
            "changes files or runs commands the judge cannot see",
        ),
        (
            "-exec",
            "changes files or runs commands the judge cannot see",
        ),
        (
            "-execdir",
            "changes files or runs commands the judge cannot see",
        ),
        ("-ok", "changes files or runs commands the judge cannot see"),
        (
            "-okdir",
            "changes files or runs commands the judge cannot see",
        ),
        ("-fprint", "writes files"),
        ("-fprintf", "writes files"),
        ("-fls", "writes files"),
    ],
    ..reads()
};
static OUTPUT_FLAG: Entry = Entry {
    writes_if: &[("-o", "writes a file"), ("--output", "writes a file")],
    ..reads()
};
static TAR: Entry = Entry {
    bare: w(UNPACKS),
    default: w(UNPACKS),
    // Old-style flags without a dash (`tar tf a.tar`) are the first word.
    subs: &[
        ("t", R),
        ("tf", R),
        ("tvf", R),
        ("tzf", R),
        ("tjf", R),
        ("tJf", R),
    ],
    reads_if: &["-t", "--list"],
    ..reads()
};
static UNZIP: Entry = Entry {
    subs: &[],
    reads_if: &["-l", "-t", "-Z", "-v"],
    ..TAR
};
static COMPRESS: Entry = Entry {
    subs: &[],
    reads_if: &["-t", "-l", "-c", "--stdout", "--test", "--list"],
    ..TAR
};
static SEVEN_Z: Entry = Entry {
    subs: &[("l", R), ("t", R)],
    ..TAR
};
static DRY_RUN: Entry = Entry {
    bare: w("changes files"),
    default: w("changes files"),
    reads_if: &["--dry-run"],
    ..reads()
};
static DOCKER: Entry = Entry {
    default: w(REMOTE),
    subs: &[
        ("ps", R),
        ("images", R),
        ("inspect", R),
        ("logs", R),
        ("version", R),
        ("info", R),
        ("build", w("builds and stores an image")),
        ("push", w(PUBLISHES)),
        ("compose", Rule::Table(&COMPOSE)),
    ],
    value_flags: &["-H", "--host", "--context", "-c"],
    ..reads()
};
static COMPOSE: Entry = Entry {
    default: w(REMOTE),
    subs: &[("config", R), ("ps", R), ("logs", R), ("ls", R)],
    value_flags: &["-f", "--file", "-p", "--project-name"],
    ..reads()
};
static KUBECTL: Entry = Entry {
    default: w(CLUSTER),
    subs: &[
        ("get", R),
        ("describe", R),
        ("logs", R),
        ("diff", R),
        ("explain", R),
        ("version", R),
        ("top", R),
        ("api-resources", R),
        ("cluster-info", R),
        ("apply", Rule::Table(&CLUSTER_DRY_RUN)),
        ("exec", w(REMOTE)),
    ],
    value_flags: &["-n", "--namespace", "--context", "--kubeconfig"],
    ..reads()
};
static CLUSTER_DRY_RUN: Entry = Entry {
    default: w(CLUSTER),
    bare: w(CLUSTER),
    reads_if: &["--dry-run"],
    ..reads()
};
static HELM: Entry = Entry {
    default: w(CLUSTER),
    subs: &[
        ("list", R),
        ("ls", R),
        ("template", R),
        ("lint", R),
        ("status", R),
        ("get", R),
        ("show", R),
        ("version", R),
        ("history", R),
    ],
    value_flags: &["-n", "--namespace", "--kube-context"],
    ..reads()
};
static TERRAFORM: Entry = Entry {
    default: w(CLUSTER),
    subs: &[
        ("plan", R),
        ("validate", R),
        ("show", R),
        ("output", R),
        ("version", R),
        ("providers", R),
        ("graph", R),
        ("fmt", Rule::Table(&CHECK_FLAG)),
    ],
    ..reads()
};
static GH: Entry = Entry {
    default: w("changes the GitHub repository"),
    subs: &[
        ("pr", Rule::Table(&GH_VIEW)),
        ("issue", Rule::Table(&GH_VIEW)),
        ("release", Rule::Table(&GH_VIEW)),
        ("run", Rule::Table(&GH_VIEW)),
        ("repo", Rule::Table(&GH_VIEW)),
        ("status", R),
    ],
    ..reads()
};
static GH_VIEW: Entry = Entry {
    default: w("changes the GitHub repository"),
    subs: &[
        ("view", R),
        ("list", R),
        ("diff", R),
        ("checks", R),
        ("status", R),
    ],
    ..reads()
};
static TWINE: Entry = Entry {
    default: w(PUBLISHES),
    subs: &[("check", R)],
    ..reads()
};
static SYSTEMCTL: Entry = Entry {
    default: w(SERVICES),
    subs: &[
        ("status", R),
        ("is-active", R),
        ("is-enabled", R),
        ("is-failed", R),
        ("list-units", R),
        ("list-unit-files", R),
        ("list-timers", R),
        ("show", R),
        ("cat", R),
    ],
    ..reads()
};
static SERVICE: Entry = Entry {
    bare: w(SERVICES),
    default: w(SERVICES),
    reads_if: &["status", "--status-all"],
    ..reads()
};
static CRONTAB: Entry = Entry {
    bare: w(SERVICES),
    default: w(SERVICES),
    reads_if: &["-l"],
    ..reads()
};
static JOURNALCTL: Entry = Entry {
    writes_if: &[
        ("--vacuum-size", "deletes journal files"),
        ("--vacuum-time", "deletes journal files"),
        ("--rotate", "rotates journal files"),
    ],
    ..reads()
};
static MANAGE_PY: Entry = Entry {
    bare: R,
    default: w(MIGRATES),
    subs: &[
        ("check", R),
        ("test", R),
        ("showmigrations", R),
        ("help", R),
        ("diffsettings", R),
    ],
    ..reads()
};
static ALEMBIC: Entry = Entry {
    default: w(MIGRATES),
    subs: &[
        ("current", R),
        ("history", R),
        ("heads", R),
        ("branches", R),
        ("show", R),
        ("check", R),
    ],
    ..reads()
};
static ANSIBLE: Entry = Entry {
    bare: w(CLUSTER),
    default: w(CLUSTER),
    reads_if: &["--check", "--syntax-check", "--list-tasks", "--list-hosts"],
    ..reads()
};

/// The table: program name (the last part of its path) → its rule.
pub(super) static PROGRAMS: &[(&str, Rule)] = &[
    // Reading tools and shell builtins.
    ("ls", R),
    ("cat", R),
    ("head", R),
    ("tail", R),
    ("wc", R),
    ("grep", R),
    ("egrep", R),
    ("fgrep", R),
    ("rg", R),
    ("ag", R),
    ("uniq", R),
    ("diff", R),
    ("cmp", R),
    ("cut", R),
    ("tr", R),
    ("jq", R),
    ("stat", R),
    ("file", R),
    ("du", R),
    ("df", R),
    ("sha256sum", R),
    ("sha1sum", R),
    ("sha512sum", R),
    ("md5sum", R),
    ("b2sum", R),
    ("cksum", R),
    ("tree", R),
    ("test", R),
    ("[", R),
    ("[[", R),
    ("echo", R),
    ("printf", R),
    ("pwd", R),
    ("true", R),
    ("false", R),
    (":", R),
    ("basename", R),
    ("dirname", R),
    ("realpath", R),
    ("readlink", R),
    ("which", R),
    ("whereis", R),
    ("type", R),
    ("xxd", R),
    ("od", R),
    ("hexdump", R),
    ("column", R),
    ("comm", R),
    ("paste", R),
    ("nl", R),
    ("less", R),
    ("more", R),
    ("date", R),
    ("uname", R),
    ("id", R),
    ("whoami", R),
    ("printenv", R),
    ("ps", R),
    ("free", R),
    ("uptime", R),
    ("hostname", R),
    ("seq", R),
    ("sleep", R),
    ("wait", R),
    ("tac", R),
    ("rev", R),
    ("fold", R),
    ("expand", R),
    ("strings", R),
    ("nm", R),
    ("objdump", R),
    ("ldd", R),
    ("cd", R),
    ("set", R),
    ("export", R),
    ("unset", R),
    ("read", R),
    ("shift", R),
    ("exit", R),
    ("return", R),
    ("local", R),
    ("declare", R),
    ("zcat", R),
    ("bzcat", R),
    ("xzcat", R),
    ("zipinfo", R),
    ("rustc", R),
    ("tox", R),
    ("nox", R),
    ("pytest", R),
    ("py.test", R),
    ("unittest", R),
    ("ctest", R),
    ("flake8", R),
    ("mypy", R),
    ("pylint", R),
    ("shellcheck", R),
    ("markdownlint", Rule::Table(&FIX_FLAG)),
    ("hadolint", R),
    ("actionlint", R),
    ("rspec", R),
    // Reading by default, writing with a flag.
    ("sed", Rule::Table(&SED)),
    ("sort", Rule::Table(&SORT)),
    ("find", Rule::Table(&FIND)),
    ("yq", Rule::Table(&FIX_FLAG)),
    ("iconv", Rule::Table(&OUTPUT_FLAG)),
    ("gofmt", Rule::Table(&FIX_FLAG)),
    ("goimports", Rule::Table(&FIX_FLAG)),
    ("prettier", Rule::Table(&FIX_FLAG)),
    ("eslint", Rule::Table(&FIX_FLAG)),
    ("clang-format", Rule::Table(&FIX_FLAG)),
    ("autopep8", Rule::Table(&FIX_FLAG)),
    ("shfmt", Rule::Table(&FIX_FLAG)),
    ("golangci-lint", Rule::Table(&FIX_FLAG)),
    ("ruff", Rule::Table(&RUFF)),
    ("biome", Rule::Table(&BIOME_TAPLO)),
    ("taplo", Rule::Table(&BIOME_TAPLO)),
    ("journalctl", Rule::Table(&JOURNALCTL)),
    ("patch", Rule::Table(&DRY_RUN)),
    // Writing by default, reading with a check flag.
    ("black", Rule::Table(&CHECK_FLAG)),
    ("isort", Rule::Table(&CHECK_FLAG)),
    ("rustfmt", Rule::Table(&CHECK_FLAG)),
    ("stylua", Rule::Table(&CHECK_FLAG)),
    ("tsc", Rule::Table(&TSC)),
    ("tar", Rule::Table(&TAR)),
    ("unzip", Rule::Table(&UNZIP)),
    ("gzip", Rule::Table(&COMPRESS)),
    ("gunzip", Rule::Table(&COMPRESS)),
    ("xz", Rule::Table(&COMPRESS)),
    ("unxz", Rule::Table(&COMPRESS)),
    ("bzip2", Rule::Table(&COMPRESS)),
    ("bunzip2", Rule::Table(&COMPRESS)),
    ("7z", Rule::Table(&SEVEN_Z)),
    ("7za", Rule::Table(&SEVEN_Z)),
    ("ansible-playbook", Rule::Table(&ANSIBLE)),
    // Programs with subcommands.
    ("git", Rule::Table(&GIT)),
    ("cargo", Rule::Table(&CARGO)),
    ("rustup", Rule::Table(&RUSTUP)),
    ("npm", Rule::Table(&NPM)),
    ("pnpm", Rule::Table(&NPM)),
    ("yarn", Rule::Table(&YARN)),
    ("bun", Rule::Table(&NPM)),
    ("pip", Rule::Table(&PIP)),
    ("pip3", Rule::Table(&PIP)),
    ("uv", Rule::Table(&UV)),
    ("poetry", Rule::Table(&POETRY)),
    ("go", Rule::Table(&GO)),
    ("make", Rule::Table(&MAKE)),
    ("gmake", Rule::Table(&MAKE)),
    ("gradle", Rule::Table(&TASKS)),
    ("gradlew", Rule::Table(&TASKS)),
    ("mvn", Rule::Table(&TASKS)),
    ("mvnw", Rule::Table(&TASKS)),
    ("bundle", Rule::Table(&TASKS)),
    ("rake", Rule::Table(&TASKS)),
    ("composer", Rule::Table(&TASKS)),
    ("dotnet", Rule::Table(&TASKS)),
    ("mix", Rule::Table(&TASKS)),
    ("stack", Rule::Table(&TASKS)),
    ("cabal", Rule::Table(&TASKS)),
    ("gem", Rule::Table(&TASKS)),
    ("rails", Rule::Table(&TASKS)),
    ("deno", Rule::Table(&DENO)),
    ("npx", Rule::Run),
    ("docker", Rule::Table(&DOCKER)),
    ("podman", Rule::Table(&DOCKER)),
    ("kubectl", Rule::Table(&KUBECTL)),
    ("helm", Rule::Table(&HELM)),
    ("terraform", Rule::Table(&TERRAFORM)),
    ("tofu", Rule::Table(&TERRAFORM)),
    ("gh", Rule::Table(&GH)),
    ("twine", Rule::Table(&TWINE)),
    ("systemctl", Rule::Table(&SYSTEMCTL)),
    ("service", Rule::Table(&SERVICE)),
    ("crontab", Rule::Table(&CRONTAB)),
    ("manage.py", Rule::Table(&MANAGE_PY)),
    ("alembic", Rule::Table(&ALEMBIC)),
    // Interpreters: a script file of the project passes, inline code never does.
    ("python", Rule::Table(&INTERPRETER)),
    ("python3", Rule::Table(&INTERPRETER)),
    ("node", Rule::Table(&INTERPRETER)),
    ("ruby", Rule::Table(&INTERPRETER)),
    ("perl", Rule::Table(&INTERPRETER)),
    ("php", Rule::Table(&INTERPRETER)),
    ("lua", Rule::Table(&INTERPRETER)),
    ("Rscript", Rule::Table(&INTERPRETER)),
    ("pwsh", Rule::Table(&INTERPRETER)),
    ("powershell", Rule::Table(&INTERPRETER)),
    ("osascript", Rule::Table(&INTERPRETER)),
    ("sh", Rule::Table(&SHELL)),
    ("bash", Rule::Table(&SHELL)),
    ("zsh", Rule::Table(&SHELL)),
    ("dash", Rule::Table(&SHELL)),
    ("ksh", Rule::Table(&SHELL)),
    ("fish", Rule::Table(&SHELL)),
    ("awk", Rule::Awk),
    ("gawk", Rule::Awk),
    ("mawk", Rule::Awk),
    ("nawk", Rule::Awk),
    ("eval", w(INLINE)),
    ("exec", w("replaces the shell")),
    ("trap", w(INLINE)),
    ("source", w(INLINE)),
    (".", w(INLINE)),
    ("mongosh", w(INLINE)),
    ("mongo", w(INLINE)),
    // Database clients: the statement is parsed as SQL (or a Redis command).
    ("psql", Rule::Sql(Client::Psql)),
    ("mysql", Rule::Sql(Client::Mysql)),
    ("mariadb", Rule::Sql(Client::Mysql)),
    ("sqlite3", Rule::Sql(Client::Sqlite)),
    ("redis-cli", Rule::Sql(Client::Redis)),
    // Writing whatever their arguments.
    ("rm", w(DELETES)),
    ("rmdir", w("deletes folders")),
    ("unlink", w(DELETES)),
    ("shred", w("destroys files")),
    ("mv", w("moves (and may overwrite) files")),
    ("cp", w("may overwrite files")),
    ("dd", w("writes raw data over files or devices")),
    ("truncate", w("cuts files")),
    ("tee", w("writes files")),
    ("install", w("copies over files")),
    ("rsync", w("copies over (and may delete) files")),
    ("chmod", w("changes file rights")),
    ("chown", w("changes file owners")),
    ("chgrp", w("changes file owners")),
    ("ln", w("may replace files with links")),
    ("touch", w("creates or changes files")),
    ("mkdir", w("creates folders")),
    ("mktemp", w("creates files")),
    ("fallocate", w("allocates files")),
    ("split", w("writes files")),
    ("csplit", w("writes files")),
    ("sponge", w("writes files")),
    ("ex", w("is an editor")),
    ("vi", w("is an editor")),
    ("vim", w("is an editor")),
    ("nano", w("is an editor")),
    ("emacs", w("is an editor")),
    ("dos2unix", w(EDITS)),
    ("unix2dos", w(EDITS)),
    ("zip", w(UNPACKS)),
    ("kill", w(STOPS)),
    ("killall", w(STOPS)),
    ("pkill", w(STOPS)),
    ("reboot", w(STOPS)),
    ("shutdown", w(STOPS)),
    ("halt", w(STOPS)),
    ("poweroff", w(STOPS)),
    ("launchctl", w(SERVICES)),
    ("sudo", w("runs with other rights")),
    ("su", w("runs as another user")),
    ("doas", w("runs with other rights")),
    ("ssh", w(REMOTE)),
    ("scp", w(REMOTE)),
    ("sftp", w(REMOTE)),
    ("mosh", w(REMOTE)),
    ("vagrant", w(CLUSTER)),
    ("aws", w(CLUSTER)),
    ("gcloud", w(CLUSTER)),
    ("az", w(CLUSTER)),
    ("diesel", w(MIGRATES)),
    ("sqlx", w(MIGRATES)),
    (
        "curl",
        w("reaches the network; the judge cannot tell what a request changes or writes"),
    ),
    ("wget", w("reaches the network and writes files")),
];

/// The rule for a program, by the last part of its path (`mkfs.ext4` is `mkfs`).
pub(super) fn lookup(program: &str) -> Option<Rule> {
    let base = program.rsplit('/').next().unwrap_or(program);
    if base.starts_with("mkfs") {
        return Some(w("formats file systems"));
    }
    PROGRAMS
        .iter()
        .find(|(name, _)| *name == base)
        .map(|(_, rule)| *rule)
}

/// Whether `arg` is the flag `spec`: long flags (`--fix`, `-delete`) exactly or with `=value`;
/// one-letter flags also inside a cluster (`-ni` has `-i`, `-i.bak` too).
pub(super) fn is_flag(arg: &str, spec: &str) -> bool {
    if arg == spec || arg.strip_prefix(spec).is_some_and(|r| r.starts_with('=')) {
        return true;
    }
    let short = spec.len() == 2 && spec.starts_with('-');
    if short && arg.starts_with('-') && !arg.starts_with("--") && arg.len() > 2 {
        let letter = spec.as_bytes()[1] as char;
        // A cluster is letters; anything after the first non-letter is a value (`-i.bak`).
        return arg[1..]
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .any(|c| c == letter);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_match_in_clusters_and_with_values() {
        assert!(is_flag("-ni", "-i"));
        assert!(is_flag("-i.bak", "-i"));
        assert!(is_flag("--in-place=.bak", "--in-place"));
        assert!(!is_flag("--index", "-i"));
        assert!(!is_flag("-name", "-delete"));
        assert!(is_flag("--dry-run=client", "--dry-run"));
        assert!(!is_flag("-n", "-i"));
    }

    #[test]
    fn the_table_names_each_program_once() {
        let mut names: Vec<&str> = PROGRAMS.iter().map(|(n, _)| *n).collect();
        let before = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), before);
        assert!(before >= 250, "{before}");
    }
}
