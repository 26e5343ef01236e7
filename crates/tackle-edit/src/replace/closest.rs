//! The closest region of the file to an `old` that was not found, for the not-found error.
//!
//! Each content line gets a cheap score (1 if its trimmed text is one of `old`'s lines, else the
//! share of its word tokens that occur in `old`); a sliding window of `old`'s line count sums
//! those scores in linear time. Only the few best windows are compared character by character.

use rustc_hash::FxBuildHasher;
use std::collections::HashSet;

/// The sets hold short strings probed once per content line and token: a fast non-DoS hasher.
type FastSet<'a> = HashSet<&'a str, FxBuildHasher>;

use super::Closest;
use super::strategies::{Doc, Query, text_similarity};

/// How many top-scoring windows get the precise comparison.
const SHORTLIST: usize = 4;
/// Bounds on the diff shown to the model.
const MAX_DIFF_LINES: usize = 40;
const MAX_DIFF_BYTES: usize = 2000;

fn tokens(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
}

pub(super) fn find(doc: &Doc<'_>, q: &Query<'_>) -> Option<Closest> {
    let body = q.text.strip_suffix('\n').unwrap_or(q.text);
    let old_lines: Vec<&str> = body.split('\n').collect();
    let line_set: FastSet<'_> = old_lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    let token_set: FastSet<'_> = tokens(body).collect();

    let scores: Vec<f64> = doc
        .lines
        .iter()
        .map(|line| {
            let t = line.trim();
            if t.is_empty() {
                0.0
            } else if line_set.contains(t) {
                1.0
            } else {
                let (hit, all) = tokens(t).fold((0usize, 0usize), |(h, a), tok| {
                    (h + usize::from(token_set.contains(tok)), a + 1)
                });
                if all == 0 {
                    0.0
                } else {
                    0.8 * hit as f64 / all as f64
                }
            }
        })
        .collect();

    let n = scores.len();
    let w = old_lines.len().min(n);
    let mut sums = Vec::with_capacity(n - w + 1);
    let mut sum: f64 = scores[..w].iter().sum();
    sums.push((sum, 0usize));
    for i in 1..=n - w {
        sum += scores[i + w - 1] - scores[i - 1];
        sums.push((sum, i));
    }
    // The best windows, at least `w` lines apart; on ties the earliest. A few linear passes
    // instead of sorting every window.
    let mut shortlist: Vec<usize> = Vec::new();
    while shortlist.len() < SHORTLIST {
        let best = sums
            .iter()
            .filter(|&&(score, i)| {
                score > 1e-9 && shortlist.iter().all(|&j| j.abs_diff(i) >= w.max(1))
            })
            .fold(None::<(f64, usize)>, |b, &(score, i)| match b {
                Some((bs, _)) if bs >= score => b,
                _ => Some((score, i)),
            });
        match best {
            Some((_, i)) => shortlist.push(i),
            None => break,
        }
    }
    if shortlist.is_empty() {
        return None;
    }

    let (similarity, first) = shortlist
        .iter()
        .map(|&i| (text_similarity(body, &doc.lines[i..i + w].join("\n")), i))
        .fold(None::<(f64, usize)>, |best, cur| match best {
            Some(b) if b.0 >= cur.0 => Some(b),
            _ => Some(cur),
        })?;
    let region = doc.lines[first..first + w].join("\n");
    Some(Closest {
        first_line: first + 1,
        last_line: first + w,
        similarity,
        diff: diff(body, &region, first + 1),
    })
}

/// A short unified diff from `old` to the region, whitespace made visible on changed lines.
fn diff(old: &str, region: &str, first_line: usize) -> String {
    let (a, b) = (format!("{old}\n"), format!("{region}\n"));
    let text = similar::TextDiff::from_lines(&a, &b);
    let last_line = first_line + region.split('\n').count() - 1;
    let udiff = text
        .unified_diff()
        .context_radius(2)
        .header("oldString", &format!("file lines {first_line}-{last_line}"))
        .to_string();
    let mut out = String::new();
    for (k, line) in udiff.lines().enumerate() {
        if k == MAX_DIFF_LINES || out.len() + line.len() > MAX_DIFF_BYTES {
            out.push_str("… (diff truncated)\n");
            break;
        }
        let changed = (line.starts_with('-') && !line.starts_with("---"))
            || (line.starts_with('+') && !line.starts_with("+++"));
        if changed {
            out.push_str(&visible(line));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// Tabs as `→`, trailing spaces as `·`, carriage returns as `␍`.
fn visible(line: &str) -> String {
    let body = line.trim_end_matches(' ');
    let trailing = line.len() - body.len();
    let mut s: String = body
        .chars()
        .map(|c| match c {
            '\t' => '→',
            '\r' => '␍',
            c => c,
        })
        .collect();
    s.extend(std::iter::repeat_n('·', trailing));
    s
}
