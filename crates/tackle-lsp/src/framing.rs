//! The LSP base protocol: `Content-Length` framed JSON messages, read with every size bounded.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest message body accepted from a server.
pub const MAX_BODY: usize = 64 * 1024 * 1024;
/// The longest header line accepted.
const MAX_HEADER_LINE: usize = 8 * 1024;
/// The most header lines in one message.
const MAX_HEADERS: usize = 32;

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The stream ended between messages.
    #[error("the server closed its output")]
    Closed,
    /// The stream ended inside a message.
    #[error("the server's output ended inside a message")]
    Truncated,
    /// A header broke the protocol.
    #[error("malformed message header: {0}")]
    Header(String),
    /// A body larger than [`MAX_BODY`].
    #[error("a message of {0} bytes is larger than the {MAX_BODY}-byte limit")]
    TooLarge(usize),
    /// Reading failed.
    #[error("reading the server's output failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads one message body. Lines before the first header that are not headers (servers that
/// print to stdout by mistake) are skipped.
pub async fn read_frame<R: AsyncBufRead + Unpin>(reader: &mut R) -> Result<Vec<u8>, FrameError> {
    let mut length: Option<usize> = None;
    let mut headers = 0usize;
    let mut started = false;
    loop {
        let line = read_header_line(reader, started).await?;
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            // A blank line before any header is noise.
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            if started {
                return Err(FrameError::Header(format!("not a header: {line:?}")));
            }
            continue;
        };
        started = true;
        headers += 1;
        if headers > MAX_HEADERS {
            return Err(FrameError::Header("too many header lines".to_owned()));
        }
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value = value.trim();
            let n: usize = value
                .parse()
                .map_err(|_| FrameError::Header(format!("bad Content-Length {value:?}")))?;
            if n > MAX_BODY {
                return Err(FrameError::TooLarge(n));
            }
            length = Some(n);
        }
    }
    let n = length.unwrap_or_default();
    let mut body = vec![0; n];
    reader.read_exact(&mut body).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            FrameError::Truncated
        } else {
            FrameError::Io(e)
        }
    })?;
    Ok(body)
}

/// One header line without its line ending; bounded.
async fn read_header_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    started: bool,
) -> Result<String, FrameError> {
    let mut line = Vec::new();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Err(if started || !line.is_empty() {
                FrameError::Truncated
            } else {
                FrameError::Closed
            });
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if line.len() + take > MAX_HEADER_LINE {
            return Err(FrameError::Header("a header line is too long".to_owned()));
        }
        line.extend_from_slice(&available[..take]);
        reader.consume(take);
        if done {
            break;
        }
    }
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| FrameError::Header("a header is not UTF-8".to_owned()))
}

/// Writes one message.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    writer.write_all(header.as_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn frames(input: &[u8]) -> (Vec<Vec<u8>>, FrameError) {
        let mut reader = BufReader::with_capacity(3, input);
        let mut out = Vec::new();
        loop {
            match read_frame(&mut reader).await {
                Ok(body) => out.push(body),
                Err(e) => return (out, e),
            }
        }
    }

    #[tokio::test]
    async fn consecutive_frames_are_split_at_their_lengths_whatever_the_buffer_size() {
        let input =
            b"Content-Length: 2\r\n\r\n{}Content-Length: 7\r\nContent-Type: x\r\n\r\n[1,2,3]";
        let (out, end) = frames(input).await;
        assert_eq!(out, vec![b"{}".to_vec(), b"[1,2,3]".to_vec()]);
        assert!(matches!(end, FrameError::Closed), "{end:?}");
    }

    #[tokio::test]
    async fn stray_lines_before_a_header_are_skipped() {
        let (out, _) = frames(b"hello from the server\nContent-Length: 1\r\n\r\n1").await;
        assert_eq!(out, vec![b"1".to_vec()]);
    }

    #[tokio::test]
    async fn a_body_cut_short_is_truncated_not_closed() {
        let (out, end) = frames(b"Content-Length: 10\r\n\r\n{}").await;
        assert!(out.is_empty());
        assert!(matches!(end, FrameError::Truncated), "{end:?}");
    }

    #[tokio::test]
    async fn oversized_and_malformed_lengths_are_refused() {
        let huge = format!("Content-Length: {}\r\n\r\n", MAX_BODY + 1);
        assert!(matches!(
            frames(huge.as_bytes()).await.1,
            FrameError::TooLarge(_)
        ));
        assert!(matches!(
            frames(b"Content-Length: ten\r\n\r\n").await.1,
            FrameError::Header(_)
        ));
        let long = format!("X-Long: {}\r\n", "a".repeat(MAX_HEADER_LINE));
        assert!(matches!(
            frames(long.as_bytes()).await.1,
            FrameError::Header(_)
        ));
    }

    #[tokio::test]
    async fn written_frames_read_back() {
        let mut buffer = Vec::new();
        write_frame(&mut buffer, b"{\"a\":1}").await.unwrap();
        write_frame(&mut buffer, "é".as_bytes()).await.unwrap();
        let (out, _) = frames(&buffer).await;
        assert_eq!(out, vec![b"{\"a\":1}".to_vec(), "é".as_bytes().to_vec()]);
    }
}
