//! The statement given to a database client on its command line, judged with a SQL parser.
//!
//! Why only here: SQL words elsewhere are names (`cargo test delete_user`), and grepping them
//! refused good commands while missing `UPDATE`, `INSERT` and `ALTER`. Inside a client's
//! statement the text is parsed; only reading statements pass (`SELECT` without `INTO`,
//! `WITH … SELECT`, `EXPLAIN` of a reading statement, `SHOW …`); what does not parse is
//! refused. A statement the client reads from its input or a file is not seen, so refused.
//! Known limit: a function called inside a `SELECT` (`pg_terminate_backend`) is not judged.

use sqlparser::ast::{Query, SetExpr, Statement};
use sqlparser::dialect::{Dialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::Parser;

use super::programs::Client;

const UNSEEN: &str = "reads its statements from its input, a file or a prompt, which the judge \
                      cannot see; give one reading statement on the command line (`psql -c`, \
                      `mysql -e`, `sqlite3 DB 'SELECT …'`, `redis-cli GET key`)";

/// Redis commands that only read.
const REDIS_READS: &[&str] = &[
    "GET",
    "MGET",
    "KEYS",
    "SCAN",
    "INFO",
    "PING",
    "EXISTS",
    "TTL",
    "PTTL",
    "TYPE",
    "STRLEN",
    "HGET",
    "HMGET",
    "HGETALL",
    "HKEYS",
    "HVALS",
    "HLEN",
    "HEXISTS",
    "LRANGE",
    "LLEN",
    "LINDEX",
    "SMEMBERS",
    "SCARD",
    "SISMEMBER",
    "ZRANGE",
    "ZCARD",
    "ZSCORE",
    "DBSIZE",
    "ECHO",
    "TIME",
    "SSCAN",
    "HSCAN",
    "ZSCAN",
    "GETRANGE",
    "XLEN",
    "XRANGE",
];

/// Sqlite dot commands that only read.
const SQLITE_DOT_READS: &[&str] = &[
    ".tables", ".schema", ".indexes", ".dump", ".dbinfo", ".show",
];

/// `Ok` when `args` give the client only reading statements.
pub(super) fn judge(client: Client, args: &[String]) -> Result<(), String> {
    match client {
        Client::Psql => statements(args, &["-c", "--command"], &["-f", "--file"])
            .and_then(|s| all_read(&s, &PostgreSqlDialect {})),
        Client::Mysql => {
            statements(args, &["-e", "--execute"], &[]).and_then(|s| all_read(&s, &MySqlDialect {}))
        }
        Client::Sqlite => sqlite(args),
        Client::Redis => redis(args),
    }
}

/// The statements given with one of `flags`; `Err` when a file is named or none is given.
fn statements(args: &[String], flags: &[&str], files: &[&str]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if files
            .iter()
            .any(|f| a == *f || a.starts_with(&format!("{f}=")))
        {
            return Err(UNSEEN.into());
        }
        if flags.contains(&a) {
            match args.get(i + 1) {
                Some(s) => out.push(s.clone()),
                None => return Err(UNSEEN.into()),
            }
            i += 1;
        } else if let Some(s) = flags.iter().find_map(|f| a.strip_prefix(&format!("{f}="))) {
            out.push(s.to_string());
        }
        i += 1;
    }
    if out.is_empty() {
        return Err(UNSEEN.into());
    }
    Ok(out)
}

fn sqlite(args: &[String]) -> Result<(), String> {
    let mut positional = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-cmd" | "-init" => return Err(UNSEEN.into()),
            "-separator" | "-newline" | "-nullvalue" => i += 1,
            _ if a.starts_with('-') => {}
            _ => positional.push(args[i].clone()),
        }
        i += 1;
    }
    let sql: Vec<String> = positional.into_iter().skip(1).collect();
    if sql.is_empty() {
        return Err(UNSEEN.into());
    }
    let (dots, sql): (Vec<String>, Vec<String>) = sql
        .into_iter()
        .partition(|s| s.trim_start().starts_with('.'));
    for d in &dots {
        let name = d.split_whitespace().next().unwrap_or_default();
        if !SQLITE_DOT_READS.contains(&name) {
            return Err(format!(
                "`{name}` is not a reading sqlite command ({})",
                SQLITE_DOT_READS.join(", ")
            ));
        }
    }
    all_read(&sql, &SQLiteDialect {})
}

fn redis(args: &[String]) -> Result<(), String> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "--eval" => return Err(super::programs::INLINE.into()),
            "-h" | "-p" | "-n" | "-a" | "-u" | "-s" | "--user" | "--pass" => i += 2,
            _ if a.starts_with('-') => i += 1,
            _ => {
                let upper = a.to_ascii_uppercase();
                return if REDIS_READS.contains(&upper.as_str()) {
                    Ok(())
                } else {
                    Err(format!(
                        "`{upper}` is not a reading Redis command (GET, KEYS, SCAN, INFO, PING, …)"
                    ))
                };
            }
        }
    }
    Err(UNSEEN.into())
}

fn all_read(texts: &[String], dialect: &dyn Dialect) -> Result<(), String> {
    for text in texts {
        let parsed = Parser::parse_sql(dialect, text).map_err(|e| {
            format!("`{text}` could not be read as SQL ({e}); only a reading statement passes")
        })?;
        if parsed.is_empty() {
            return Err(format!("`{text}` holds no statement"));
        }
        for stmt in &parsed {
            if !reads(stmt) {
                return Err(format!(
                    "`{stmt}` is not a reading statement; only SELECT, WITH … SELECT, EXPLAIN \
                     and SHOW pass"
                ));
            }
        }
    }
    Ok(())
}

fn reads(stmt: &Statement) -> bool {
    match stmt {
        Statement::Query(q) => query_reads(q),
        Statement::Explain { statement, .. } => reads(statement),
        Statement::ExplainTable { .. }
        | Statement::ShowTables { .. }
        | Statement::ShowColumns { .. }
        | Statement::ShowVariable { .. }
        | Statement::ShowVariables { .. }
        | Statement::ShowCreate { .. }
        | Statement::ShowDatabases { .. }
        | Statement::ShowSchemas { .. }
        | Statement::ShowViews { .. }
        | Statement::ShowFunctions { .. }
        | Statement::ShowStatus { .. }
        | Statement::ShowCollation { .. } => true,
        _ => false,
    }
}

fn query_reads(q: &Query) -> bool {
    let ctes = q
        .with
        .as_ref()
        .is_none_or(|w| w.cte_tables.iter().all(|c| query_reads(&c.query)));
    ctes && set_reads(&q.body)
}

fn set_reads(s: &SetExpr) -> bool {
    match s {
        SetExpr::Select(sel) => sel.into.is_none(),
        SetExpr::Query(q) => query_reads(q),
        SetExpr::SetOperation { left, right, .. } => set_reads(left) && set_reads(right),
        SetExpr::Values(_) | SetExpr::Table(_) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn only_reading_statements_pass() {
        assert!(judge(Client::Psql, &words(&["-c", "SELECT 1"])).is_ok());
        assert!(judge(
            Client::Psql,
            &words(&["-c", "WITH x AS (SELECT 1) SELECT * FROM x"])
        )
        .is_ok());
        assert!(judge(Client::Psql, &words(&["-c", "SELECT 1 INTO t2"])).is_err());
        assert!(judge(Client::Psql, &words(&["-c", "SELECT 1; DROP TABLE t"])).is_err());
        assert!(judge(Client::Psql, &words(&["-c", "UPDATE t SET a = 1"])).is_err());
        assert!(judge(Client::Psql, &words(&["app"])).is_err());
        assert!(judge(Client::Sqlite, &words(&["db", ".tables"])).is_ok());
        assert!(judge(Client::Sqlite, &words(&["db", ".import x t"])).is_err());
        assert!(judge(Client::Redis, &words(&["-h", "h", "get", "k"])).is_ok());
        assert!(judge(Client::Redis, &words(&["FLUSHALL"])).is_err());
    }
}
