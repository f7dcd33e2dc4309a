//! WebDriver over HTTP/1.1 by hand: a command on a fresh connection, when its response is
//! complete, the response's JSON body (chunked or not), a blocking DELETE for drop handlers, and
//! base64 screenshots.

use std::io::{Read as _, Write as _};
use std::net::Ipv4Addr;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::{COMMAND_TIMEOUT, CommandError};

/// One WebDriver command: an HTTP/1.1 request on a fresh connection; returns `value`.
pub(super) async fn request(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<Value, CommandError> {
    let exchange = async {
        let body = body.map(Value::to_string).unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Content-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            body.len()
        );
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await?;
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        // chromedriver keeps the connection open despite `Connection: close`, so the
        // response ends where its length says.
        let mut response = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        while !is_complete(&response) {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            response.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, std::io::Error>(response)
    };
    let response = tokio::time::timeout(COMMAND_TIMEOUT, exchange)
        .await
        .map_err(|_| CommandError(format!("no answer within {COMMAND_TIMEOUT:?}")))?
        .map_err(|e| CommandError(format!("chromedriver connection: {e}")))?;
    parse_response(&response)
}

/// Whether `response` holds a whole HTTP response: its head and as much body as
/// `Content-Length` says (or a chunked body's last chunk).
pub(super) fn is_complete(response: &[u8]) -> bool {
    let Some(end) = response.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
    let body = &response[end + 4..];
    let length = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        (name.trim() == "content-length").then(|| value.trim().parse::<usize>().ok())?
    });
    match length {
        Some(length) => body.len() >= length,
        None if head.contains("transfer-encoding: chunked") => body.ends_with(b"0\r\n\r\n"),
        None => false,
    }
}

/// Splits an HTTP response into its status and JSON body; a non-2xx status is an error.
pub(super) fn parse_response(response: &[u8]) -> Result<Value, CommandError> {
    let text = String::from_utf8_lossy(response);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| CommandError(format!("not an HTTP response: {text:?}")))?;
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| CommandError(format!("no status line: {head:?}")))?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    let json: Value = serde_json::from_str(&body)
        .map_err(|e| CommandError(format!("HTTP {status}, body not JSON ({e}): {body:?}")))?;
    if (200..300).contains(&status) {
        Ok(json["value"].clone())
    } else {
        let value = &json["value"];
        Err(CommandError(format!(
            "HTTP {status} {}: {}",
            value["error"].as_str().unwrap_or("error"),
            value["message"].as_str().unwrap_or_default()
        )))
    }
}

/// The payload of a chunked body.
pub(super) fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// `DELETE path` without an async runtime (for `Drop`); whether it succeeded.
pub(super) fn blocking_delete(port: u16, path: &str) -> bool {
    let attempt = || -> std::io::Result<Vec<u8>> {
        let mut stream = std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
        stream.set_read_timeout(Some(COMMAND_TIMEOUT))?;
        write!(
            stream,
            "DELETE {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        )?;
        let mut response = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        while !is_complete(&response) {
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            response.extend_from_slice(&chunk[..n]);
        }
        Ok(response)
    };
    attempt().is_ok_and(|response| parse_response(&response).is_ok())
}

/// JavaScript's truthiness for a JSON value.
pub(super) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// Standard base64 (WebDriver's screenshots); panics on a character outside the alphabet.
pub(super) fn decode_base64(text: &str) -> Vec<u8> {
    let sextet = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {:?}", char::from(c)),
        }
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let bits = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &c)| acc | (sextet(c) << (18 - 6 * i)));
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_every_padding() {
        assert_eq!(decode_base64("aGk="), b"hi");
        assert_eq!(decode_base64("aGV5"), b"hey");
        assert_eq!(decode_base64("aA=="), b"h");
        assert_eq!(decode_base64("iVBORw0KGgo="), b"\x89PNG\r\n\x1a\n");
    }

    #[test]
    fn a_response_is_complete_when_its_length_has_arrived() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length:11\r\n\r\n";
        assert!(!is_complete(b"HTTP/1.1 200 OK\r\nContent-Le"));
        assert!(!is_complete(&[&head[..], b"{\"value\""].concat()));
        assert!(is_complete(&[&head[..], b"{\"value\":1}"].concat()));
        assert!(is_complete(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
        ));
    }

    #[test]
    fn chunked_bodies_are_joined() {
        assert_eq!(dechunk("4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n"), "{\"a\":1}");
    }

    #[test]
    fn webdriver_errors_carry_their_message() {
        let response = b"HTTP/1.1 404 Not Found\r\nContent-Length:56\r\n\r\n\
                         {\"value\":{\"error\":\"no such element\",\"message\":\"gone\"}}";
        let err = parse_response(response).unwrap_err();
        assert_eq!(err.to_string(), "HTTP 404 no such element: gone");
    }
}
