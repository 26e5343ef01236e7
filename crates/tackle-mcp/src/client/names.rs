//! Model-facing names for an MCP server's tools: `<server>_<tool>`, made to fit the registry's
//! name grammar `^[A-Za-z][A-Za-z0-9_-]{0,63}$`.

use std::collections::HashSet;

/// The longest name the registry accepts.
const MAX_NAME: usize = 64;
/// Hex digits of the stable hash appended to truncated or colliding names.
const HASH_DIGITS: usize = 8;

/// Assigns a registry name to each tool of the server `server`.
///
/// Each name is `<server>_<tool>` with every character outside `[A-Za-z0-9_-]` replaced by `_`,
/// prefixed with `t` when it does not start with a letter, and cut to 64 characters with a
/// short stable hash of the full name appended when it is longer. Tools are assigned in order
/// of their original names, and a tool whose name is already taken gets a hash suffix instead,
/// so the result is deterministic and does not depend on the order the server listed them in.
///
/// Returns `(original, assigned)` pairs sorted by original name.
pub fn assign_tool_names<'a>(
    server: &str,
    tools: impl IntoIterator<Item = &'a str>,
) -> Vec<(String, String)> {
    let mut tools: Vec<&str> = tools.into_iter().collect();
    tools.sort_unstable();
    let mut taken = HashSet::new();
    let mut assigned = Vec::with_capacity(tools.len());
    for tool in tools {
        let full = format!("{server}_{tool}");
        let mut name = sanitize(&full);
        let mut attempt = 0u32;
        while taken.contains(&name) {
            let salted = if attempt == 0 {
                full.clone()
            } else {
                format!("{full}#{attempt}")
            };
            name = with_hash(&sanitize_chars(&full), &salted);
            attempt += 1;
        }
        taken.insert(name.clone());
        assigned.push((tool.to_owned(), name));
    }
    assigned
}

/// `full` mapped onto the grammar, with a hash suffix when it must be cut.
fn sanitize(full: &str) -> String {
    let name = sanitize_chars(full);
    if name.len() > MAX_NAME {
        with_hash(&name, full)
    } else {
        name
    }
}

/// Replaces characters outside the grammar and makes the name start with a letter.
fn sanitize_chars(full: &str) -> String {
    let mut name: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.insert(0, 't');
    }
    name
}

/// `name` cut to leave room for `_` and the hash of `key`, then that suffix.
fn with_hash(name: &str, key: &str) -> String {
    // Sanitized names are ASCII, so byte and character boundaries agree.
    let keep = name.len().min(MAX_NAME - 1 - HASH_DIGITS);
    format!("{}_{:08x}", &name[..keep], fnv1a(key) as u32)
}

/// 64-bit FNV-1a: small, stable across runs and platforms.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::assign_tool_names;

    fn grammatical(name: &str) -> bool {
        let mut chars = name.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && name.len() <= 64
    }

    #[test]
    fn plain_names_are_server_underscore_tool() {
        let names = assign_tool_names("github", ["search", "get-issue"]);
        assert_eq!(
            names,
            vec![
                ("get-issue".to_owned(), "github_get-issue".to_owned()),
                ("search".to_owned(), "github_search".to_owned()),
            ]
        );
    }

    #[test]
    fn foreign_characters_become_underscores_and_names_start_with_a_letter() {
        let names = assign_tool_names("9fs", ["read.file", "lecture é", "a/b"]);
        for (_, name) in &names {
            assert!(grammatical(name), "{name}");
        }
        let assigned: Vec<&str> = names.iter().map(|(_, name)| name.as_str()).collect();
        assert_eq!(assigned, ["t9fs_a_b", "t9fs_lecture__", "t9fs_read_file"]);
    }

    #[test]
    fn long_names_are_cut_to_64_with_a_stable_hash() {
        let long = "x".repeat(100);
        let other = format!("{long}y");
        let first = assign_tool_names("srv", [long.as_str(), other.as_str()]);
        for (_, name) in &first {
            assert!(grammatical(name), "{name}");
            assert_eq!(name.len(), 64);
        }
        assert_ne!(
            first[0].1, first[1].1,
            "different full names, different hashes"
        );
        assert_eq!(
            first,
            assign_tool_names("srv", [long.as_str(), other.as_str()])
        );
        // Exactly 64 characters is kept as is.
        let exact = "y".repeat(60);
        let names = assign_tool_names("srv", [exact.as_str()]);
        assert_eq!(names[0].1, format!("srv_{exact}"));
    }

    #[test]
    fn collisions_get_hash_suffixes_regardless_of_listing_order() {
        let forward = assign_tool_names("s", ["a.b", "a_b", "a b", "a-b"]);
        let backward = assign_tool_names("s", ["a-b", "a b", "a_b", "a.b"]);
        assert_eq!(forward, backward);
        let mut assigned: Vec<&str> = forward.iter().map(|(_, name)| name.as_str()).collect();
        for name in &assigned {
            assert!(grammatical(name), "{name}");
        }
        // Sorted originals: "a b" gets the plain name, the later collisions get hashes.
        assert_eq!(forward[0], ("a b".to_owned(), "s_a_b".to_owned()));
        assert_eq!(forward[1], ("a-b".to_owned(), "s_a-b".to_owned()));
        assert!(forward[2].1.starts_with("s_a_b_") && forward[2].1.len() == 14);
        assert!(forward[3].1.starts_with("s_a_b_") && forward[3].1.len() == 14);
        assigned.sort_unstable();
        assigned.dedup();
        assert_eq!(assigned.len(), 4, "every tool gets its own name");
    }
}
