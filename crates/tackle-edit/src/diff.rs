//! Line diffs of a change, in time linear in the size of the texts.
//!
//! A file tool needs a line diff three times per change: for the permission request, for the
//! model's result and for the journal. A whole-file diff (Myers over every line) is quadratic in
//! the number of changed lines, and a `replaceAll` over 20,000 lines, or a rewrite of a large
//! file, made it the slowest step of a call by far. This module never diffs what it already
//! knows:
//!
//! - When the engine knows which byte spans it replaced ([`Splice`]s, from
//!   [`replace`](crate::replace::replace) or from composing several edits with [`compose`]),
//!   [`LineDiff::from_splices`] widens each span to whole lines and diffs only inside those
//!   lines. Everything between them is equal by construction.
//! - When nothing is known (a `write` of new content), [`LineDiff::compute`] strips the common
//!   prefix and suffix and diffs only the middle, with a deadline. Past the deadline, or when the
//!   middle shares almost no lines, the middle is reported as one replacement: a coarser diff,
//!   never a wrong one.
//!
//! Both produce the same [`LineOp`] list, which [`LineDiff::unified`] renders in the standard
//! unified format and callers use to put each line's original ending back.

use std::ops::Range;
use std::time::{Duration, Instant};

use rustc_hash::FxHashSet;

/// How long the refinement of one diff may take before the rest is reported coarsely.
const DEADLINE: Duration = Duration::from_millis(30);

/// A middle this many lines long (on either side) is first checked for shared lines.
const LARGE_REGION: usize = 2_000;

/// One replaced span: `old` (a byte range of the text before) became `new` (a byte range of the
/// text after). The text between consecutive splices is the same on both sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Splice {
    /// The replaced bytes of the old text.
    pub old: Range<usize>,
    /// The bytes that took their place in the new text.
    pub new: Range<usize>,
}

impl Splice {
    fn delta(&self) -> isize {
        self.new.len() as isize - self.old.len() as isize
    }
}

/// Chains two changes: `first` turns text A into B, `second` turns B into C; the result turns A
/// into C. Both lists must be sorted and disjoint, as [`replace`](crate::replace::replace)
/// returns them. Splices that overlap in B are merged, so the result is coarser than
/// the inputs only where they interact.
pub fn compose(first: &[Splice], second: &[Splice]) -> Vec<Splice> {
    let (mut i, mut j) = (0, 0);
    let (mut before_first, mut before_second) = (0isize, 0isize);
    let mut out = Vec::with_capacity(first.len() + second.len());
    loop {
        // The next interval of B starts at the earlier of the two lists' next starts.
        let start = match (first.get(i), second.get(j)) {
            (None, None) => break,
            (Some(f), None) => f.new.start,
            (None, Some(s)) => s.old.start,
            (Some(f), Some(s)) => f.new.start.min(s.old.start),
        };
        let mut end = start;
        let (mut grouped_first, mut grouped_second) = (0isize, 0isize);
        let mut took_any = true;
        while took_any {
            took_any = false;
            // A splice joins the group when it starts inside it, or at its start.
            while let Some(f) = first
                .get(i)
                .filter(|f| f.new.start < end || f.new.start == start)
            {
                end = end.max(f.new.end);
                grouped_first += f.delta();
                i += 1;
                took_any = true;
            }
            while let Some(s) = second
                .get(j)
                .filter(|s| s.old.start < end || s.old.start == start)
            {
                end = end.max(s.old.end);
                grouped_second += s.delta();
                j += 1;
                took_any = true;
            }
        }
        let shift = |p: usize, d: isize| (p as isize + d) as usize;
        out.push(Splice {
            old: shift(start, -before_first)..shift(end, -before_first - grouped_first),
            new: shift(start, before_second)..shift(end, before_second + grouped_second),
        });
        before_first += grouped_first;
        before_second += grouped_second;
    }
    out
}

/// One step of a line diff, in line indices of the two texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineOp {
    /// `len` lines equal on both sides.
    Equal {
        /// The first old line.
        old: usize,
        /// The first new line.
        new: usize,
        /// How many lines.
        len: usize,
    },
    /// The old lines were replaced by the new lines (either side may be empty).
    Change {
        /// The removed lines of the old text.
        old: Range<usize>,
        /// The added lines of the new text.
        new: Range<usize>,
    },
}

/// A line diff of two `\n` texts: their lines (each with its `\n`, except a last line without
/// one) and the ops between them.
#[derive(Debug, Clone)]
pub struct LineDiff<'a> {
    old: Vec<&'a str>,
    new: Vec<&'a str>,
    ops: Vec<LineOp>,
}

impl<'a> LineDiff<'a> {
    /// The diff of a change whose replaced spans are known: linear in the texts' length plus
    /// the diff work inside the lines the splices touch. `splices` must be sorted, disjoint, and
    /// describe exactly how `old` became `new`. Splices that cancel out (the texts are equal)
    /// give a diff with no change.
    pub fn from_splices(old: &'a str, new: &'a str, splices: &[Splice]) -> Self {
        let splices = if old == new { &[] } else { splices };
        let regions = line_regions(old.as_bytes(), new.as_bytes(), splices);
        build(old, new, &regions, Instant::now() + DEADLINE)
    }

    /// The diff of two texts with nothing known about the change: the common prefix and suffix
    /// are equal lines, the middle is diffed under a deadline.
    pub fn compute(old: &'a str, new: &'a str) -> Self {
        let (o, n) = (old.as_bytes(), new.as_bytes());
        let prefix = o.iter().zip(n).take_while(|(a, b)| a == b).count();
        let max_suffix = o.len().min(n.len()) - prefix;
        let suffix = o
            .iter()
            .rev()
            .zip(n.iter().rev())
            .take(max_suffix)
            .take_while(|(a, b)| a == b)
            .count();
        let splices = if prefix == o.len() && prefix == n.len() {
            Vec::new()
        } else {
            vec![Splice {
                old: prefix..o.len() - suffix,
                new: prefix..n.len() - suffix,
            }]
        };
        Self::from_splices(old, new, &splices)
    }

    /// The ops, in order, covering every line of both texts.
    pub fn ops(&self) -> &[LineOp] {
        &self.ops
    }

    /// The old text's lines, each with its `\n` (the last one may lack it).
    pub fn old_lines(&self) -> &[&'a str] {
        &self.old
    }

    /// The new text's lines, each with its `\n` (the last one may lack it).
    pub fn new_lines(&self) -> &[&'a str] {
        &self.new
    }

    /// Lines added.
    pub fn additions(&self) -> usize {
        self.changes().map(|(_, new)| new.len()).sum()
    }

    /// Lines removed.
    pub fn deletions(&self) -> usize {
        self.changes().map(|(old, _)| old.len()).sum()
    }

    fn changes(&self) -> impl Iterator<Item = (&Range<usize>, &Range<usize>)> {
        self.ops.iter().filter_map(|op| match op {
            LineOp::Change { old, new } => Some((old, new)),
            LineOp::Equal { .. } => None,
        })
    }

    /// The diff in unified format with `context` lines around each change, headed `a/path` and
    /// `b/path`; empty when the texts are equal.
    pub fn unified(&self, path: &str, context: usize) -> String {
        if self.additions() + self.deletions() == 0 {
            return String::new();
        }
        let mut out = format!("--- a/{path}\n+++ b/{path}\n");
        for hunk in hunks(&self.ops, context) {
            self.render_hunk(&mut out, &hunk);
        }
        out
    }

    fn render_hunk(&self, out: &mut String, hunk: &[LineOp]) {
        let (old_start, new_start) = match &hunk[0] {
            LineOp::Equal { old, new, .. } => (*old, *new),
            LineOp::Change { old, new } => (old.start, new.start),
        };
        let (mut old_len, mut new_len) = (0, 0);
        for op in hunk {
            match op {
                LineOp::Equal { len, .. } => {
                    old_len += len;
                    new_len += len;
                }
                LineOp::Change { old, new } => {
                    old_len += old.len();
                    new_len += new.len();
                }
            }
        }
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            hunk_range(old_start, old_len),
            hunk_range(new_start, new_len)
        ));
        for op in hunk {
            match op {
                LineOp::Equal { old, len, .. } => {
                    for line in &self.old[*old..old + len] {
                        push_line(out, ' ', line);
                    }
                }
                LineOp::Change { old, new } => {
                    for line in &self.old[old.clone()] {
                        push_line(out, '-', line);
                    }
                    for line in &self.new[new.clone()] {
                        push_line(out, '+', line);
                    }
                }
            }
        }
    }
}

/// A hunk header's range: 1-based start and length, the length left out when it is 1, and the
/// line before the hunk named when it is empty.
fn hunk_range(start: usize, len: usize) -> String {
    match len {
        1 => format!("{}", start + 1),
        0 => format!("{start},0"),
        _ => format!("{},{len}", start + 1),
    }
}

fn push_line(out: &mut String, mark: char, line: &str) {
    out.push(mark);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

/// Groups ops into hunks: every change with up to `context` equal lines on each side, changes
/// closer than twice the context sharing a hunk.
fn hunks(ops: &[LineOp], context: usize) -> Vec<Vec<LineOp>> {
    let mut out = Vec::new();
    let mut current: Vec<LineOp> = Vec::new();
    let mut changed = false;
    let last = ops.len().saturating_sub(1);
    for (index, op) in ops.iter().enumerate() {
        let LineOp::Equal { old, new, len } = *op else {
            current.push(op.clone());
            changed = true;
            continue;
        };
        if changed && index != last && len <= 2 * context {
            current.push(op.clone());
            continue;
        }
        if changed {
            let take = len.min(context);
            if take > 0 {
                current.push(LineOp::Equal {
                    old,
                    new,
                    len: take,
                });
            }
            out.push(std::mem::take(&mut current));
            changed = false;
        }
        current.clear();
        let take = len.min(context);
        if index != last && take > 0 {
            current.push(LineOp::Equal {
                old: old + len - take,
                new: new + len - take,
                len: take,
            });
        }
    }
    if changed {
        out.push(current);
    }
    out
}

/// A changed region, widened to whole lines: byte ranges of the old and new texts.
struct Region {
    old: Range<usize>,
    new: Range<usize>,
}

fn at_line_start(text: &[u8], at: usize) -> bool {
    at == 0 || text[at - 1] == b'\n'
}

fn at_line_end(text: &[u8], at: usize) -> bool {
    at == text.len() || at_line_start(text, at)
}

/// Widens every splice to whole lines on both sides, merging splices whose lines overlap.
/// Regions that only touch stay apart, so a change on every line stays a change per line.
fn line_regions(old: &[u8], new: &[u8], splices: &[Splice]) -> Vec<Region> {
    let mut regions: Vec<Region> = Vec::with_capacity(splices.len());
    // Where the previous splice ended in the old text: the bytes after it are shared.
    let mut shared_from = 0;
    for splice in splices {
        if splice.old.is_empty() && splice.new.is_empty() {
            continue;
        }
        let (mut old_start, mut new_start) = (splice.old.start, splice.new.start);
        // Whether the widened start runs into the previous splice's bytes.
        let mut joins_previous = false;
        if !(at_line_start(old, old_start) && at_line_start(new, new_start)) {
            // The bytes before the splice, back to the previous one, are the same on both sides.
            match memchr::memrchr(b'\n', &old[shared_from..old_start]) {
                Some(nl) => {
                    let back = old_start - (shared_from + nl + 1);
                    old_start -= back;
                    new_start -= back;
                }
                None if shared_from == 0 => {
                    new_start -= old_start;
                    old_start = 0;
                }
                None => joins_previous = true,
            }
        }
        let (mut old_end, mut new_end) = (splice.old.end, splice.new.end);
        if !(at_line_end(old, old_end) && at_line_end(new, new_end)) {
            // Past the next splice this is wrong, but that splice then joins this region and
            // brings its own end.
            let ahead =
                memchr::memchr(b'\n', &old[old_end..]).map_or(old.len() - old_end, |nl| nl + 1);
            old_end += ahead;
            new_end = (new_end + ahead).min(new.len());
        }
        shared_from = splice.old.end;
        match regions.last_mut() {
            Some(last) if joins_previous || old_start < last.old.end => {
                last.old.end = old_end;
                last.new.end = new_end;
            }
            _ => regions.push(Region {
                old: old_start..old_end,
                new: new_start..new_end,
            }),
        }
    }
    regions
}

/// Line indices of byte offsets at line boundaries, for offsets visited in ascending order.
struct LineCounter<'t> {
    text: &'t [u8],
    at: usize,
    line: usize,
}

impl<'t> LineCounter<'t> {
    fn new(text: &'t [u8]) -> Self {
        LineCounter {
            text,
            at: 0,
            line: 0,
        }
    }

    /// How many lines end at or before `offset` (an unterminated last line ends at the end).
    fn lines_before(&mut self, offset: usize) -> usize {
        self.line += memchr::memchr_iter(b'\n', &self.text[self.at..offset]).count();
        self.at = offset;
        let partial_last =
            offset == self.text.len() && offset > 0 && self.text[offset - 1] != b'\n';
        self.line + usize::from(partial_last)
    }
}

fn build<'a>(old: &'a str, new: &'a str, regions: &[Region], deadline: Instant) -> LineDiff<'a> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let (mut old_count, mut new_count) = (
        LineCounter::new(old.as_bytes()),
        LineCounter::new(new.as_bytes()),
    );
    let mut ops = Vec::with_capacity(regions.len() * 2 + 1);
    let (mut old_at, mut new_at) = (0, 0);
    for region in regions {
        let old_range =
            old_count.lines_before(region.old.start)..old_count.lines_before(region.old.end);
        let new_range =
            new_count.lines_before(region.new.start)..new_count.lines_before(region.new.end);
        push_equal(&mut ops, old_at, new_at, old_range.start - old_at);
        refine(
            &mut ops,
            &old_lines,
            &new_lines,
            old_range.clone(),
            new_range.clone(),
            deadline,
        );
        old_at = old_range.end;
        new_at = new_range.end;
    }
    push_equal(&mut ops, old_at, new_at, old_lines.len() - old_at);
    debug_assert_eq!(new_lines.len() - new_at, old_lines.len() - old_at);
    LineDiff {
        old: old_lines,
        new: new_lines,
        ops,
    }
}

fn push_equal(ops: &mut Vec<LineOp>, old: usize, new: usize, len: usize) {
    if len == 0 {
        return;
    }
    if let Some(LineOp::Equal { len: last, .. }) = ops.last_mut() {
        *last += len;
    } else {
        ops.push(LineOp::Equal { old, new, len });
    }
}

fn push_change(ops: &mut Vec<LineOp>, old: Range<usize>, new: Range<usize>) {
    if old.is_empty() && new.is_empty() {
        return;
    }
    if let Some(LineOp::Change { old: o, new: n }) = ops.last_mut() {
        o.end = old.end;
        n.end = new.end;
    } else {
        ops.push(LineOp::Change { old, new });
    }
}

/// Diffs the lines of one region and appends the ops.
fn refine(
    ops: &mut Vec<LineOp>,
    old: &[&str],
    new: &[&str],
    old_range: Range<usize>,
    new_range: Range<usize>,
    deadline: Instant,
) {
    let (a, b) = (&old[old_range.clone()], &new[new_range.clone()]);
    let trivial = a.is_empty() || b.is_empty() || (a.len() == 1 && b.len() == 1);
    let unrelated = (a.len() > LARGE_REGION || b.len() > LARGE_REGION) && shares_few_lines(a, b);
    if trivial || unrelated || Instant::now() >= deadline {
        if a == b {
            push_equal(ops, old_range.start, new_range.start, a.len());
        } else {
            push_change(ops, old_range, new_range);
        }
        return;
    }
    // similar's ops are in order, but the index a delete gives for the other side (and an
    // insert for this side) is not always the cursor's, so positions come from the lengths.
    let (mut o, mut n) = (old_range.start, new_range.start);
    for op in similar::capture_diff_slices_deadline(similar::Algorithm::Myers, a, b, Some(deadline))
    {
        let (old_len, new_len) = (op.old_range().len(), op.new_range().len());
        match op.tag() {
            similar::DiffTag::Equal => push_equal(ops, o, n, old_len),
            _ => push_change(ops, o..o + old_len, n..n + new_len),
        }
        o += old_len;
        n += new_len;
    }
}

/// Whether fewer than one line in a hundred of the smaller side also occurs on the other side.
fn shares_few_lines(a: &[&str], b: &[&str]) -> bool {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let seen: FxHashSet<&str> = large.iter().copied().collect();
    let shared = small.iter().filter(|line| seen.contains(*line)).count();
    shared * 100 < small.len()
}

#[cfg(test)]
mod tests;
