//! Positions and file URIs: LSP counts columns in UTF-16 code units, models count characters.

use std::path::{Path, PathBuf};

/// The 1-based character column of a UTF-16 `offset` in `line`.
pub fn utf16_to_column(line: &str, offset: u32) -> u32 {
    let mut units = 0u32;
    let mut chars = 0u32;
    for c in line.chars() {
        if units >= offset {
            break;
        }
        units += c.len_utf16() as u32;
        chars += 1;
    }
    chars + 1
}

/// The UTF-16 offset of the 1-based character `column` in `line`.
pub fn column_to_utf16(line: &str, column: u32) -> u32 {
    line.chars()
        .take(column.saturating_sub(1) as usize)
        .map(|c| c.len_utf16() as u32)
        .sum()
}

/// The `index`th (0-based) line of `text`, without its line ending.
pub fn line_of(text: &str, index: u32) -> &str {
    let line = text.split('\n').nth(index as usize).unwrap_or("");
    line.strip_suffix('\r').unwrap_or(line)
}

/// `file://` URI of an absolute path, percent-encoding what a URI may not hold.
pub fn path_to_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &byte in path.as_os_str().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The path of a `file://` URI, or `None` for another scheme.
pub fn uri_to_path(uri: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let rest = uri.strip_prefix("file://")?;
    // `file://localhost/x` and `file:///x` both name `/x`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(hex) = rest.get(i + 1..i + 3)
            && let Ok(value) = u8::from_str_radix(hex, 16)
        {
            out.push(value);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_not_utf16_units() {
        let line = "a😀b = 1";
        // `b` is character 3 (1-based), UTF-16 offset 3 (the emoji is two units).
        assert_eq!(utf16_to_column(line, 3), 3);
        assert_eq!(column_to_utf16(line, 3), 3);
        assert_eq!(utf16_to_column(line, 0), 1);
        assert_eq!(column_to_utf16("ab", 1), 0);
        // Past the end stays past the end.
        assert_eq!(utf16_to_column("ab", 9), 3);
    }

    #[test]
    fn uris_round_trip_spaces_and_unicode() {
        let path = Path::new("/tmp/a dir/é#1.py");
        let uri = path_to_uri(path);
        assert_eq!(uri, "file:///tmp/a%20dir/%C3%A9%231.py");
        assert_eq!(uri_to_path(&uri).unwrap(), path);
        assert_eq!(uri_to_path("https://x"), None);
        assert_eq!(uri_to_path("file:///a%zzb").unwrap(), Path::new("/a%zzb"));
    }

    #[test]
    fn lines_lose_their_endings() {
        assert_eq!(line_of("a\r\nb\n", 0), "a");
        assert_eq!(line_of("a\r\nb\n", 1), "b");
        assert_eq!(line_of("a", 5), "");
    }
}
