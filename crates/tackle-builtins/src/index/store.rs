//! The index on disk: saved after each full walk, loaded at the next start, then checked
//! against the tree by a walk that reads again only the files whose fingerprint changed.
//!
//! The format is private and versioned; a file that does not parse is ignored (the index is
//! built from scratch), so a crash while saving or a format change costs one full build.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::tree::{FileRecord, Fingerprint, Kind, Postings, Tree};

const MAGIC: &[u8] = b"tackle-index 1\n";
/// A file changed this close to the save may have changed again within the same tick of the
/// file system's clock, leaving its fingerprint as it was: it is read again at load.
const RACY: Duration = Duration::from_secs(2);

/// Where the index of `root` is kept under `dir`.
pub(crate) fn path_for(dir: &Path, root: &Path) -> PathBuf {
    let hash = blake3::hash(root.as_os_str().as_encoded_bytes()).to_hex();
    dir.join(format!("{}.index", &hash[..16]))
}

/// Writes `tree` to `path` through a temporary file renamed into place.
pub(crate) fn save(tree: &Tree, path: &Path) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(tree.memory());
    out.extend_from_slice(MAGIC);
    put_bytes(&mut out, tree.root.as_os_str().as_encoded_bytes());
    let saved_at = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    put_u64(&mut out, saved_at.as_secs());
    put_u32(&mut out, tree.files.len() as u32);
    for file in &tree.files {
        match file {
            None => out.push(0),
            Some(record) => {
                out.push(match record.kind {
                    Kind::Text => 1,
                    Kind::Binary => 2,
                    Kind::Live => 3,
                });
                let fingerprint = &record.fingerprint;
                put_u64(&mut out, fingerprint.len);
                let modified = fingerprint
                    .modified
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or_default();
                put_u64(&mut out, modified.as_secs());
                put_u32(&mut out, modified.subsec_nanos());
                put_u64(&mut out, fingerprint.changed.0 as u64);
                put_u64(&mut out, fingerprint.changed.1 as u64);
                put_u64(&mut out, fingerprint.inode);
            }
        }
    }
    put_u32(&mut out, tree.by_path.len() as u32);
    for (path, id) in &tree.by_path {
        put_bytes(&mut out, path.as_os_str().as_encoded_bytes());
        put_u32(&mut out, *id);
    }
    put_u32(&mut out, tree.dirs.len() as u32);
    for dir in &tree.dirs {
        put_bytes(&mut out, dir.as_os_str().as_encoded_bytes());
    }
    put_u32(&mut out, tree.postings.len() as u32);
    for (trigram, postings) in &tree.postings {
        put_u32(&mut out, *trigram);
        put_u32(&mut out, postings.last);
        put_bytes(&mut out, &postings.bytes);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut temp = tempfile::NamedTempFile::new_in(path.parent().unwrap_or(Path::new(".")))?;
    temp.write_all(&out)?;
    temp.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// The tree saved at `path` for `root`; `None` when there is none or it does not parse.
pub(crate) fn load(path: &Path, root: &Path) -> Option<Tree> {
    let bytes = std::fs::read(path).ok()?;
    let mut reader = Reader {
        bytes: &bytes,
        at: 0,
    };
    if reader.take(MAGIC.len())? != MAGIC {
        return None;
    }
    if reader.bytes_field()? != root.as_os_str().as_encoded_bytes() {
        return None;
    }
    let mut tree = Tree::new(root);
    let saved_at = SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(reader.u64()?))?;
    let racy_after = saved_at.checked_sub(RACY)?;
    let count = reader.u32()?;
    for _ in 0..count {
        let kind = match reader.take(1)?[0] {
            0 => {
                tree.files.push(None);
                continue;
            }
            1 => Kind::Text,
            2 => Kind::Binary,
            3 => Kind::Live,
            _ => return None,
        };
        let len = reader.u64()?;
        let seconds = reader.u64()?;
        let nanos = reader.u32()?;
        let modified = SystemTime::UNIX_EPOCH.checked_add(Duration::new(seconds, nanos))?;
        let changed = (reader.u64()? as i64, reader.u64()? as i64);
        let inode = reader.u64()?;
        let changed_at = SystemTime::UNIX_EPOCH.checked_add(Duration::new(
            changed.0.max(0) as u64,
            changed.1.clamp(0, 999_999_999) as u32,
        ))?;
        // A fingerprint that cannot be trusted matches no file, so the file is read again.
        let len = if modified >= racy_after || changed_at >= racy_after {
            u64::MAX
        } else {
            len
        };
        tree.files.push(Some(FileRecord {
            fingerprint: Fingerprint {
                len,
                modified,
                changed,
                inode,
            },
            kind,
        }));
    }
    for _ in 0..reader.u32()? {
        let path = path_of(reader.bytes_field()?);
        let id = reader.u32()?;
        tree.files.get(id as usize)?.as_ref()?;
        tree.by_path.insert(path, id);
    }
    for _ in 0..reader.u32()? {
        tree.dirs.insert(path_of(reader.bytes_field()?));
    }
    for _ in 0..reader.u32()? {
        let trigram = reader.u32()?;
        let last = reader.u32()?;
        let bytes = reader.bytes_field()?.to_vec();
        if last as usize >= tree.files.len().max(1) {
            return None;
        }
        tree.posting_bytes += bytes.len();
        tree.postings.insert(trigram, Postings { bytes, last });
    }
    (reader.at == bytes.len()).then_some(tree)
}

fn path_of(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, bytes.len() as u32);
    out.extend_from_slice(bytes);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let slice = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(slice)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes_field(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }
}
