//! The probe behind `matchmaker health`: ask the daemon's `/readyz` (or `/healthz`) and exit 0 only on a
//! 2xx answer. The probe of container health checks and of the systemd unit's start-up
//! wait: the runtime image has no curl or wget, and this needs nothing but the binary.
//!
//! A plain HTTP/1.1 GET over TCP, for the daemon's own endpoints (`http://` only; no TLS,
//! no redirects, no proxies), read to the end of the connection.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};

/// One answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub reason: String,
    pub body: String,
}

/// GET `url` (`http://host[:port][/path]`).
pub fn get(url: &str, timeout: Duration) -> anyhow::Result<Answer> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("{url}: only http:// URLs are supported"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        bail!("{url}: no host");
    }
    // A port after the host (after the `]` of an IPv6 literal), else 80.
    let has_port = match authority.rfind(']') {
        Some(end) => authority[end..].contains(':'),
        None => authority.contains(':'),
    };
    let target = if has_port {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addr = target
        .to_socket_addrs()
        .with_context(|| format!("{url}: cannot resolve {target}"))?
        .next()
        .ok_or_else(|| anyhow!("{url}: {target} has no address"))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("{url}: cannot connect to {addr}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: matchmaker-health\r\n\
         Accept: text/plain\r\nConnection: close\r\n\r\n"
    )
    .with_context(|| format!("{url}: sending the request"))?;
    let mut raw = Vec::new();
    // At most 1 MiB: a health answer is a few lines.
    (&mut stream)
        .take(1 << 20)
        .read_to_end(&mut raw)
        .with_context(|| format!("{url}: reading the answer"))?;
    parse_response(&raw).with_context(|| format!("{url}: not an HTTP answer"))
}

/// Status line, headers and body of an HTTP/1.x response (a chunked body is decoded).
pub fn parse_response(raw: &[u8]) -> anyhow::Result<Answer> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| anyhow!("no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        bail!("status line {status_line:?}");
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("status line {status_line:?}"))?;
    let reason = parts.next().unwrap_or_default().to_string();
    let chunked = lines.any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.trim().eq_ignore_ascii_case("chunked")
        })
    });
    let body = &raw[split + 4..];
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok(Answer {
        status,
        reason,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut data: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| anyhow!("truncated chunk size"))?;
        let size_text = String::from_utf8_lossy(&data[..eol]);
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| anyhow!("bad chunk size {size_text:?}"))?;
        data = &data[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if data.len() < size {
            bail!("truncated chunk");
        }
        out.extend_from_slice(&data[..size]);
        data = data.get(size + 2..).unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked_answers() {
        let a = parse_response(
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 10\r\n\r\nnot ready\n",
        )
        .unwrap();
        assert_eq!((a.status, a.reason.as_str()), (503, "Service Unavailable"));
        assert_eq!(a.body, "not ready\n");
        let a = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nok\n\r\n4\r\nmore\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((a.status, a.body.as_str()), (200, "ok\nmore"));
        assert!(parse_response(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_err());
    }

    #[test]
    fn refuses_urls_it_cannot_ask() {
        let e = get("https://127.0.0.1:1/readyz", Duration::from_millis(100)).unwrap_err();
        assert!(e.to_string().contains("only http://"), "{e}");
        let e = get("http:///readyz", Duration::from_millis(100)).unwrap_err();
        assert!(e.to_string().contains("no host"), "{e}");
    }
}
