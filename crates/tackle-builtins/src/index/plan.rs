//! Query planning: the trigrams any match of a regular expression must contain.
//!
//! The pattern's syntax tree (`regex-syntax`'s HIR) is reduced to an AND/OR formula of
//! trigrams. Each node either matches one of a small finite set of strings (a literal, a small
//! class, a concatenation or alternation of those), which is kept exactly, or contributes a
//! formula. A string shorter than three bytes requires nothing, so a pattern with no usable
//! literal plans to [`Plan::All`] and every file is searched. Trigrams are of ASCII-lowercased
//! bytes on both sides (the index and the plan), so case-insensitive patterns need no special
//! case: their classes (`[Kk]`, including the Kelvin sign) expand like any other.

use regex_syntax::hir::{Class, Hir, HirKind};

/// Strings kept exactly before a node gives up on exactness.
const MAX_SET: usize = 64;
/// Characters a class may have and still be expanded.
const MAX_CLASS: u32 = 16;

/// What a file must contain for the pattern to match in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Every file may match.
    All,
    /// No file can match.
    Nothing,
    /// The file holds every one of these trigrams.
    Trigrams(Vec<u32>),
    /// Every part holds.
    And(Vec<Plan>),
    /// Some part holds.
    Or(Vec<Plan>),
}

/// The plan for `pattern`, parsed as the grep tool's matcher parses it; a pattern the parser
/// refuses plans to [`Plan::All`] (the search then reports what is wrong).
pub(crate) fn plan(pattern: &str) -> Plan {
    match regex_syntax::ParserBuilder::new().build().parse(pattern) {
        Ok(hir) => finish(analyze(&hir)),
        Err(_) => Plan::All,
    }
}

/// The trigram of three bytes, ASCII-lowercased.
pub(crate) fn trigram(bytes: [u8; 3]) -> u32 {
    let [a, b, c] = bytes.map(|byte| byte.to_ascii_lowercase());
    (u32::from(a) << 16) | (u32::from(b) << 8) | u32::from(c)
}

/// What one node tells: the exact strings it matches, when few, else a formula.
enum Info {
    Exact(Vec<Vec<u8>>),
    Formula(Plan),
}

fn analyze(hir: &Hir) -> Info {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Info::Exact(vec![Vec::new()]),
        HirKind::Literal(literal) => Info::Exact(vec![literal.0.to_vec()]),
        HirKind::Class(class) => class_strings(class).map_or(Info::Formula(Plan::All), Info::Exact),
        HirKind::Capture(capture) => analyze(&capture.sub),
        HirKind::Repetition(repetition) => {
            if repetition.min == 0 {
                Info::Formula(Plan::All)
            } else {
                Info::Formula(finish(analyze(&repetition.sub)))
            }
        }
        HirKind::Concat(parts) => concat(parts),
        HirKind::Alternation(parts) => alternation(parts),
    }
}

/// The strings a small class matches, UTF-8 encoded; `None` for a large one.
fn class_strings(class: &Class) -> Option<Vec<Vec<u8>>> {
    match class {
        Class::Unicode(class) => {
            let mut count = 0u32;
            for range in class.iter() {
                count += u32::from(range.end()) - u32::from(range.start()) + 1;
                if count > MAX_CLASS {
                    return None;
                }
            }
            Some(
                class
                    .iter()
                    .flat_map(|range| range.start()..=range.end())
                    .map(|ch| ch.to_string().into_bytes())
                    .collect(),
            )
        }
        Class::Bytes(class) => {
            let mut count = 0u32;
            for range in class.iter() {
                count += u32::from(range.end()) - u32::from(range.start()) + 1;
                if count > MAX_CLASS {
                    return None;
                }
            }
            Some(
                class
                    .iter()
                    .flat_map(|range| range.start()..=range.end())
                    .map(|byte| vec![byte])
                    .collect(),
            )
        }
    }
}

fn concat(parts: &[Hir]) -> Info {
    let mut run: Vec<Vec<u8>> = vec![Vec::new()];
    let mut formulas = Vec::new();
    let mut exact = true;
    for part in parts {
        match analyze(part) {
            Info::Exact(strings) if run.len() * strings.len() <= MAX_SET => {
                run = run
                    .iter()
                    .flat_map(|head| {
                        strings.iter().map(move |tail| {
                            let mut joined = head.clone();
                            joined.extend_from_slice(tail);
                            joined
                        })
                    })
                    .collect();
            }
            Info::Exact(strings) => {
                formulas.push(exact_plan(&run));
                run = strings;
                exact = false;
            }
            Info::Formula(plan) => {
                formulas.push(exact_plan(&run));
                formulas.push(plan);
                run = vec![Vec::new()];
                exact = false;
            }
        }
    }
    if exact {
        return Info::Exact(run);
    }
    formulas.push(exact_plan(&run));
    Info::Formula(and(formulas))
}

fn alternation(parts: &[Hir]) -> Info {
    let infos: Vec<Info> = parts.iter().map(analyze).collect();
    let total: Option<usize> = infos
        .iter()
        .map(|info| match info {
            Info::Exact(strings) => Some(strings.len()),
            Info::Formula(_) => None,
        })
        .sum();
    if total.is_some_and(|total| total <= MAX_SET) {
        let mut strings = Vec::new();
        for info in infos {
            if let Info::Exact(part) = info {
                strings.extend(part);
            }
        }
        return Info::Exact(strings);
    }
    Info::Formula(or(infos.into_iter().map(finish).collect()))
}

fn finish(info: Info) -> Plan {
    match info {
        Info::Exact(strings) => exact_plan(&strings),
        Info::Formula(plan) => plan,
    }
}

/// A file holding a match of one of `strings` holds all of that string's trigrams.
fn exact_plan(strings: &[Vec<u8>]) -> Plan {
    or(strings
        .iter()
        .map(|string| {
            if string.len() < 3 {
                return Plan::All;
            }
            let mut trigrams: Vec<u32> = string
                .windows(3)
                .map(|window| trigram([window[0], window[1], window[2]]))
                .collect();
            trigrams.sort_unstable();
            trigrams.dedup();
            Plan::Trigrams(trigrams)
        })
        .collect())
}

fn and(parts: Vec<Plan>) -> Plan {
    let mut kept = Vec::new();
    for part in parts {
        match part {
            Plan::All => {}
            Plan::Nothing => return Plan::Nothing,
            Plan::And(inner) => kept.extend(inner),
            other => kept.push(other),
        }
    }
    match kept.len() {
        0 => Plan::All,
        1 => kept.pop().unwrap_or(Plan::All),
        _ => Plan::And(kept),
    }
}

fn or(parts: Vec<Plan>) -> Plan {
    let mut kept = Vec::new();
    for part in parts {
        match part {
            Plan::All => return Plan::All,
            Plan::Nothing => {}
            Plan::Or(inner) => kept.extend(inner),
            other => kept.push(other),
        }
    }
    match kept.len() {
        0 => Plan::Nothing,
        1 => kept.pop().unwrap_or(Plan::Nothing),
        _ => Plan::Or(kept),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> u32 {
        let b = text.as_bytes();
        trigram([b[0], b[1], b[2]])
    }

    #[test]
    fn a_literal_needs_each_of_its_trigrams_lowercased() {
        let Plan::Trigrams(mut want) = plan("Main") else {
            panic!()
        };
        want.sort_unstable();
        let mut expected = vec![t("mai"), t("ain")];
        expected.sort_unstable();
        assert_eq!(want, expected);
    }

    #[test]
    fn alternations_classes_and_case_folding_plan_to_an_or() {
        assert!(matches!(plan("foo|bar"), Plan::Or(parts) if parts.len() == 2));
        // (?i) expands to case variants, which lowercase to the same trigrams.
        assert!(matches!(plan("(?i)abc"), Plan::Or(_) | Plan::Trigrams(_)));
        assert_eq!(plan("a.c"), Plan::All);
        assert_eq!(plan(r"\w+"), Plan::All);
        assert_eq!(plan("ab"), Plan::All);
        assert!(matches!(plan(r"fn\s+main"), Plan::Trigrams(t) if t.len() == 2));
        assert!(matches!(plan("x*"), Plan::All));
    }
}
