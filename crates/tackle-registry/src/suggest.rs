//! Nearest advertised names for an unknown tool call.

/// Up to three advertised names close to `wanted`, best first.
///
/// A name that differs only in case or in `_`/`-` separators ranks first; otherwise names within
/// a small edit distance (a transposition counts as one edit) qualify.
pub(crate) fn nearest_names<'a>(wanted: &str, names: &[&'a str]) -> Vec<&'a str> {
    let normalized = normalize(wanted);
    let mut exactish: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| normalize(name) == normalized)
        .collect();
    if !exactish.is_empty() {
        exactish.truncate(3);
        return exactish;
    }
    let budget = (wanted.chars().count() / 3).clamp(1, 3);
    let mut scored: Vec<(usize, &str)> = names
        .iter()
        .map(|name| {
            (
                strsim::damerau_levenshtein(&normalized, &normalize(name)),
                *name,
            )
        })
        .filter(|(distance, _)| *distance <= budget)
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, name)| name).collect()
}

fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::nearest_names;

    #[test]
    fn case_and_separator_variants_rank_first() {
        let names = ["read_file", "read", "grep"];
        assert_eq!(nearest_names("Read_File", &names), vec!["read_file"]);
        assert_eq!(nearest_names("read-file", &names), vec!["read_file"]);
    }

    #[test]
    fn small_typos_are_suggested_and_distant_names_are_not() {
        let names = ["bash", "read", "grep", "glob"];
        assert_eq!(nearest_names("gerp", &names), vec!["grep"]);
        assert!(nearest_names("shell", &names).is_empty());
        assert!(nearest_names("webfetch", &names).is_empty());
    }
}
