//! YAML as switchboard reads it: the YAML 1.2 core schema, where `true` and `false` are the
//! only booleans.
//!
//! serde-saphyr reads the YAML 1.1 booleans by default, so `on`, `off`, `yes`, `no`, `y` and `n`
//! become `true` or `false` wherever a value is not typed. In an agent's contract schema that
//! made a property named `on` or `n` a boolean key, and the whole agent failed to load with
//! "data did not match any variant of untagged enum SchemaSource"; `enum: [yes, no]` would have
//! become `[true, false]` and rejected the answers it was written to allow. YAML 1.2 (2009) has
//! only `true`/`false`; a typed `bool` field given `yes` is an error saying where, not a guess.
//!
//! Used for the files people write (agents, contracts, workflows, pipelines, eval suites, run
//! metadata). An answer's frontmatter is read by `contract::fields`, whose fast path types
//! scalars the way serde-saphyr's default does; it keeps that reading.

use serde::Deserialize;

/// The options every switchboard YAML file is read with (see the module doc).
fn options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options
}

/// Deserializes `text` as YAML 1.2 (see the module doc).
pub fn from_str<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, options())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn only_true_and_false_are_booleans() {
        let v: Value = from_str("on: {type: integer}\nn: [yes, no, off]\nok: true\nbad: False\n")
            .expect("YAML 1.2 reads these keys as strings");
        assert_eq!(
            v,
            json!({"on": {"type": "integer"}, "n": ["yes", "no", "off"], "ok": true, "bad": false})
        );
        // Read serde-saphyr's default way, the same values are booleans.
        let old: Value = serde_saphyr::from_str("n: [yes, no, off]\n").unwrap();
        assert_eq!(old, json!({"n": [true, false, false]}));
    }

    #[test]
    fn a_typed_boolean_given_yes_is_an_error() {
        #[derive(Debug, Deserialize)]
        struct Tools {
            #[allow(dead_code)]
            read: bool,
        }
        assert!(from_str::<Tools>("read: yes\n").is_err());
        assert!(from_str::<Tools>("read: true\n").is_ok());
    }
}
