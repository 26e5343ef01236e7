//! The provider-neutral tool name grammar, checked at registration.

/// The grammar every registered name must match, as shown in error messages.
pub(crate) const NAME_GRAMMAR: &str = "^[A-Za-z][A-Za-z0-9_-]{0,63}$";

/// Checks `name` against [`NAME_GRAMMAR`]; on failure, says which rule it breaks.
pub(crate) fn check_name(name: &str) -> Result<(), &'static str> {
    let mut chars = name.chars();
    match chars.next() {
        None => return Err("it is empty"),
        Some(first) if !first.is_ascii_alphabetic() => {
            return Err("it must start with an ASCII letter");
        }
        Some(_) => {}
    }
    if chars.any(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')) {
        return Err("it may contain only ASCII letters, digits, `_` and `-`");
    }
    if name.len() > 64 {
        return Err("it is longer than 64 characters");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_name;

    #[test]
    fn accepts_the_grammar_and_nothing_else() {
        for good in [
            "a",
            "read",
            "apply_patch",
            "mcp-github_search",
            "A1",
            &"x".repeat(64),
        ] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        let cases = [
            ("", "it is empty"),
            ("1read", "it must start with an ASCII letter"),
            ("_read", "it must start with an ASCII letter"),
            (
                "read file",
                "it may contain only ASCII letters, digits, `_` and `-`",
            ),
            (
                "read.file",
                "it may contain only ASCII letters, digits, `_` and `-`",
            ),
            (
                "lecture_é",
                "it may contain only ASCII letters, digits, `_` and `-`",
            ),
        ];
        for (bad, why) in cases {
            assert_eq!(check_name(bad), Err(why), "{bad:?}");
        }
        assert_eq!(
            check_name(&"x".repeat(65)),
            Err("it is longer than 64 characters")
        );
    }
}
