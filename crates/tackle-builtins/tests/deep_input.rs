//! Deeply nested commands through the bash permission scan (tree-sitter-bash, then a walk of
//! the tree): any nesting of substitutions, subshells, groups, conditionals, strings and
//! arithmetic is scanned on an ordinary thread's stack. Long runs: `TACKLE_DEEP=1`.

use std::path::Path;

use proptest::prelude::*;
use tackle_builtins::tools::bash::scan::scan;

/// Ways to nest one level of a command: an opening and its closing text.
const NESTINGS: &[(&str, &str)] = &[
    ("$(", ")"),
    ("(", ")"),
    ("{ ", "; }"),
    ("if true; then ", "; fi"),
    ("\"$(echo ", ")\""),
    ("$((", "))"),
    ("`", "`"),
    ("<(", ")"),
    ("f() { ", "; }; "),
    ("while true; do ", "; done"),
];

fn deep() -> bool {
    std::env::var_os("TACKLE_DEEP").is_some()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if deep() { 128 } else { 8 }))]

    /// Scanning never overflows the stack, however the command nests.
    #[test]
    fn deeply_nested_commands_are_scanned_without_overflow(
        kinds in prop::collection::vec(prop::sample::select(NESTINGS), 1..6),
        depth in 1usize..if deep() { 200_000 } else { 5_000 },
        closed in any::<bool>(),
    ) {
        let mut command = String::from("cat ");
        for level in 0..depth {
            command.push_str(kinds[level % kinds.len()].0);
        }
        command.push_str("cp a /etc/x");
        if closed {
            for level in (0..depth).rev() {
                command.push_str(kinds[level % kinds.len()].1);
            }
        }
        let root = Path::new("/work/root");
        let scanned = scan(&command, root, root, None);
        // Whatever was understood, the command asks for something: it is never waved through.
        prop_assert!(!scanned.bash_patterns().is_empty());
    }
}

#[test]
fn a_command_substitution_nested_20000_deep_is_scanned() {
    // This overflowed the stack (and ended `tackle serve`) before the leaf walk lost its
    // recursion.
    let command = format!("echo {}x{}", "$(".repeat(20_000), ")".repeat(20_000));
    let root = Path::new("/work/root");
    let scanned = scan(&command, root, root, None);
    assert!(!scanned.bash_patterns().is_empty());
}
