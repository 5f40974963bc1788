//! Near-duplicate notes: two notes that say the same thing in nearly the same words should be one
//! note seen twice (reinforced), not two rows that crowd recall.
//!
//! Text is normalised (lower case, words only, punctuation and runs of space gone) and compared
//! by the Dice coefficient of character trigrams. Trigrams tolerate a changed word ending or a
//! typo, which word sets do not, and need no model.

use std::collections::HashSet;

/// Similarity at or above which a new note reinforces an existing one.
pub const DUPLICATE: f64 = 0.85;

/// `text` lower-cased, with every run of non-alphanumeric characters turned into one space.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut gap = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            gap = false;
            out.extend(c.to_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

fn trigrams(norm: &str) -> HashSet<[char; 3]> {
    let chars: Vec<char> = format!("  {norm} ").chars().collect();
    chars.windows(3).map(|w| [w[0], w[1], w[2]]).collect()
}

/// Dice coefficient of the trigram sets of two normalised texts, in 0..=1.
pub fn similarity(a_norm: &str, b_norm: &str) -> f64 {
    if a_norm == b_norm {
        return 1.0;
    }
    let (a, b) = (trigrams(a_norm), trigrams(b_norm));
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let shared = a.intersection(&b).count();
    2.0 * shared as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalising_drops_case_punctuation_and_spacing() {
        assert_eq!(
            normalise("  The Event-Log is  APPEND-only! "),
            "the event log is append only"
        );
    }

    #[test]
    fn near_duplicates_pass_the_threshold_and_different_notes_do_not() {
        let a = normalise("The event log is append-only.");
        let b = normalise("the event log is append only");
        let c = normalise("The event log is append-only and fsynced.");
        let d = normalise("Sessions resume from the last completed hop.");
        assert!(similarity(&a, &b) >= DUPLICATE);
        assert!(similarity(&a, &c) < 1.0);
        assert!(similarity(&a, &d) < 0.3, "{}", similarity(&a, &d));
    }
}
