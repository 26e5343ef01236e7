//! A compact binary form for what the snapshot store keeps on disk: the files a change touched
//! and the stat cache. Paths are bytes, so neither JSON nor lines would carry every name.

use super::{Entry, Kind, RelPath};

/// Appends to a byte buffer.
#[derive(Default)]
pub(crate) struct Writer(pub(crate) Vec<u8>);

impl Writer {
    pub(crate) fn u8(&mut self, value: u8) {
        self.0.push(value);
    }

    pub(crate) fn u32(&mut self, value: u32) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn u64(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn i128(&mut self, value: i128) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn bytes(&mut self, value: &[u8]) {
        self.u32(value.len() as u32);
        self.0.extend_from_slice(value);
    }

    pub(crate) fn path(&mut self, path: &RelPath) {
        self.bytes(path.as_bytes());
    }

    pub(crate) fn entry(&mut self, entry: Option<&Entry>) {
        let Some(entry) = entry else {
            self.u8(0);
            return;
        };
        self.u8(match entry.kind {
            Kind::File => 1,
            Kind::Symlink => 2,
            Kind::Dir => 3,
        });
        self.u32(entry.mode);
        self.u64(entry.size);
        self.bytes(entry.hash.as_bytes());
        self.u8(u8::from(entry.kept));
    }
}

/// Reads what [`Writer`] wrote; every read is `None` past the end or on malformed input.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    pub(crate) fn i128(&mut self) -> Option<i128> {
        Some(i128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }

    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    pub(crate) fn path(&mut self) -> Option<RelPath> {
        RelPath::new(self.bytes()?)
    }

    pub(crate) fn entry(&mut self) -> Option<Option<Entry>> {
        let kind = match self.u8()? {
            0 => return Some(None),
            1 => Kind::File,
            2 => Kind::Symlink,
            3 => Kind::Dir,
            _ => return None,
        };
        let mode = self.u32()?;
        let size = self.u64()?;
        let hash = String::from_utf8(self.bytes()?.to_vec()).ok()?;
        let kept = self.u8()? == 1;
        Some(Some(Entry {
            kind,
            mode,
            size,
            hash,
            kept,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_and_byte_paths_round_trip() {
        let file = Entry {
            kind: Kind::File,
            mode: 0o644,
            size: 3,
            hash: "ab".repeat(32),
            kept: true,
        };
        let dir = Entry::dir(0o755);
        let mut w = Writer::default();
        let path = RelPath::new(&b"d\xff/x y\n"[..]).unwrap();
        w.path(&path);
        w.entry(Some(&file));
        w.entry(None);
        w.entry(Some(&dir));
        w.i128(-5);
        let mut r = Reader(&w.0);
        assert_eq!(r.path(), Some(path));
        assert_eq!(r.entry(), Some(Some(file)));
        assert_eq!(r.entry(), Some(None));
        assert_eq!(r.entry(), Some(Some(dir)));
        assert_eq!(r.i128(), Some(-5));
        assert!(r.is_empty());
        assert_eq!(Reader(&[9]).entry(), None);
    }
}
