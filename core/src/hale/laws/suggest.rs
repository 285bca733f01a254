//! "Did you mean": the declared name nearest a misspelled one.
//!
//! The distance is the optimal-string-alignment edit distance (insertions,
//! deletions, substitutions and transpositions of two adjacent characters
//! each cost one), so `plcae` is one edit from `place`. A name is offered
//! when it is at most `max(1, len / 3)` edits from what was written, `len`
//! counting the written name's characters — roughly rustc's rule. Among
//! names equally near, the one that is first in byte order wins, so the
//! suggestion does not depend on the order of the declarations.

/// The optimal-string-alignment distance between `a` and `b`, counted in
/// characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: the one two back (for transpositions), the previous and
    // the current.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The most edits a suggestion for `written` may be away from it.
pub fn threshold(written: &str) -> usize {
    (written.chars().count() / 3).max(1)
}

/// The candidate nearest `written`, when one is within [`threshold`] edits
/// and is not `written` itself; ties go to the first in byte order.
pub fn suggest<'a>(
    written: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = threshold(written);
    candidates
        .into_iter()
        .filter(|c| *c != written)
        .map(|c| (edit_distance(written, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

/// `; did you mean `NAME`?` for the nearest candidate, or nothing.
pub(super) fn did_you_mean<'a>(
    written: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    suggest(written, candidates).map_or_else(String::new, |c| format!("; did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("place", "place"), 0);
        assert_eq!(
            edit_distance("plcae", "place"),
            1,
            "a transposition is one edit"
        );
        assert_eq!(edit_distance("Ordrs", "Orders"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        // OSA, not full Damerau: `ca` → `abc` is 3 (no edit of a transposed pair).
        assert_eq!(edit_distance("ca", "abc"), 3);
        assert_eq!(edit_distance("é", "e"), 1, "characters, not bytes");
    }

    #[test]
    fn the_threshold_is_a_third_of_the_written_name() {
        assert_eq!(threshold("ab"), 1);
        assert_eq!(threshold("tradr"), 1);
        assert_eq!(threshold("abcdef"), 2);
        assert_eq!(suggest("tradr", ["trader", "operator"]), Some("trader"));
        assert_eq!(suggest("xyz", ["trader", "operator"]), None);
        // Two edits on a five-letter name is too far.
        assert_eq!(suggest("plxxe", ["place"]), None);
        assert_eq!(
            suggest("place", ["place"]),
            None,
            "the name itself is no suggestion"
        );
    }

    #[test]
    fn ties_go_to_the_first_in_byte_order() {
        assert_eq!(suggest("cat", ["hat", "bat", "rat"]), Some("bat"));
        assert_eq!(suggest("cat", ["rat", "hat", "bat"]), Some("bat"));
        assert_eq!(suggest("cart", ["carts", "cars", "bart"]), Some("bart"));
        // Nearer wins over earlier in byte order.
        assert_eq!(suggest("carts", ["bart", "cart"]), Some("cart"));
    }

    proptest! {
        #[test]
        fn distance_is_a_symmetric_bounded_measure(a in "[a-c]{0,8}", b in "[a-c]{0,8}") {
            let d = edit_distance(&a, &b);
            prop_assert_eq!(d, edit_distance(&b, &a));
            prop_assert!(d <= a.len().max(b.len()));
            prop_assert!(d >= a.len().abs_diff(b.len()));
            prop_assert_eq!(d == 0, a == b);
        }
    }
}
