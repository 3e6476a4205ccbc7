//! The MIME tree of a message, walked with bounds: at most
//! [`MAX_MIME_PARTS`] parts and [`MAX_MIME_DEPTH`] levels of multipart, so
//! a message of ten thousand empty parts or a hundred nested ones costs no
//! more than a plain one. Yields the text parts a patch can be in (plain
//! text, `text/x-patch`, `text/x-diff`, an attachment named `*.patch` or
//! `*.diff`), each decoded from its transfer encoding (quoted-printable,
//! base64, 7bit, 8bit) and charset into UTF-8.

use charset::Charset;
use mailparse::{MailHeaderMap, ParsedContentType};

use super::Error;

/// Most MIME parts (containers and leaves) a message may have. A patch
/// mail has one; `git format-patch --attach` two per patch; a signed
/// reply with attachments a handful.
pub const MAX_MIME_PARTS: usize = 64;

/// Deepest nesting of multiparts: a signed (`multipart/signed`) mail with
/// an alternative (`multipart/alternative`) inside a `multipart/mixed` is
/// three deep.
pub const MAX_MIME_DEPTH: usize = 8;

/// One text part of a message, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPart {
    /// The lower-cased MIME type (`text/plain`, `text/x-patch`).
    pub mimetype: String,
    /// Whether it was sent as an attachment (`Content-Disposition:
    /// attachment`).
    pub attachment: bool,
    /// The text, with `\n` line ends (quoted-printable decodes to
    /// `\r\n`).
    pub text: String,
}

/// The text parts of `raw` (one message, headers and body), in the order
/// they appear; a part whose transfer encoding cannot be decoded is left
/// out. Fails when the headers of the message cannot be read or the tree
/// passes [`MAX_MIME_PARTS`] or [`MAX_MIME_DEPTH`].
pub fn text_parts(raw: &[u8]) -> Result<Vec<TextPart>, Error> {
    let mut out = Vec::new();
    let mut parts = 0;
    walk(raw, 0, &mut parts, &mut out)?;
    Ok(out)
}

fn walk(raw: &[u8], depth: usize, parts: &mut usize, out: &mut Vec<TextPart>) -> Result<(), Error> {
    *parts += 1;
    if *parts > MAX_MIME_PARTS {
        return Err(Error::MailStructure(format!(
            "more than {MAX_MIME_PARTS} MIME parts"
        )));
    }
    let (headers, body_at) = mailparse::parse_headers(raw)
        .map_err(|e| Error::MailStructure(format!("unreadable MIME headers: {e}")))?;
    let ctype = headers
        .get_first_value("Content-Type")
        .map(|v| mailparse::parse_content_type(&v))
        .unwrap_or_default();
    let body = raw.get(body_at..).unwrap_or_default();
    if ctype.mimetype.starts_with("multipart/") {
        let Some(boundary) = ctype.params.get("boundary").filter(|b| !b.is_empty()) else {
            return Ok(());
        };
        if depth + 1 > MAX_MIME_DEPTH {
            return Err(Error::MailStructure(format!(
                "MIME parts nested more than {MAX_MIME_DEPTH} deep"
            )));
        }
        for part in split_multipart(body, boundary.as_bytes()) {
            walk(part, depth + 1, parts, out)?;
        }
        return Ok(());
    }
    let disposition = headers
        .get_first_value("Content-Disposition")
        .map(|v| mailparse::parse_content_disposition(&v));
    let filename = disposition
        .as_ref()
        .and_then(|d| d.params.get("filename"))
        .or_else(|| ctype.params.get("name"))
        .map(|f| f.to_ascii_lowercase());
    let named_patch = filename
        .as_deref()
        .is_some_and(|f| f.ends_with(".patch") || f.ends_with(".diff"));
    let textual = matches!(
        ctype.mimetype.as_str(),
        "text/plain" | "text/x-patch" | "text/x-diff" | "application/x-patch"
    );
    if !(textual || named_patch) {
        return Ok(());
    }
    // The leaf is not a multipart, so mailparse reads it without recursing.
    let Ok(leaf) = mailparse::parse_mail(raw) else {
        return Ok(());
    };
    let Ok(bytes) = leaf.get_body_raw() else {
        return Ok(());
    };
    out.push(TextPart {
        mimetype: ctype.mimetype.clone(),
        attachment: disposition
            .is_some_and(|d| d.disposition == mailparse::DispositionType::Attachment),
        text: decode(&bytes, &ctype),
    });
    Ok(())
}

/// The bodies of the parts of a multipart body: what lies between
/// delimiter lines (`--boundary`), up to the closing one (`--boundary--`)
/// or the end. The line break before a delimiter belongs to it (RFC 2046).
fn split_multipart<'a>(body: &'a [u8], boundary: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    let mut start: Option<usize> = None;
    let mut offset = 0;
    for line in body.split_inclusive(|&b| b == b'\n') {
        let content = line
            .strip_prefix(b"--")
            .and_then(|l| l.strip_prefix(boundary));
        if let Some(rest) = content {
            let closing = rest.starts_with(b"--");
            let rest = if closing { &rest[2..] } else { rest };
            if rest.iter().all(u8::is_ascii_whitespace) {
                if let Some(s) = start {
                    parts.push(trim_line_break(&body[s..offset]));
                }
                if closing {
                    return parts;
                }
                start = Some(offset + line.len());
            }
        }
        offset += line.len();
    }
    if let Some(s) = start.filter(|&s| s < body.len()) {
        parts.push(&body[s..]);
    }
    parts
}

fn trim_line_break(part: &[u8]) -> &[u8] {
    let part = part.strip_suffix(b"\n").unwrap_or(part);
    part.strip_suffix(b"\r").unwrap_or(part)
}

/// `bytes` as text in the part's charset. Without one, or with ASCII
/// declared, bytes are read as UTF-8 (what git and kernel mailers send
/// unlabelled); an unknown charset too. Bytes a charset cannot map become
/// U+FFFD, as b4 and git do.
pub fn decode(bytes: &[u8], ctype: &ParsedContentType) -> String {
    let label = ctype
        .params
        .get("charset")
        .map(|c| c.trim().to_ascii_lowercase());
    let charset = match label.as_deref() {
        None | Some("us-ascii" | "ascii" | "utf-8" | "utf8" | "") => None,
        Some(label) => Charset::for_label(label.as_bytes()),
    };
    let text = match charset {
        Some(charset) => charset.decode(bytes).0.into_owned(),
        None => String::from_utf8_lossy(bytes).into_owned(),
    };
    text.replace("\r\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(raw: &str) -> Vec<TextPart> {
        text_parts(raw.as_bytes()).unwrap()
    }

    #[test]
    fn a_plain_message_is_one_part_decoded_from_quoted_printable() {
        let raw = "Content-Type: text/plain; charset=\"UTF-8\"\n\
                   Content-Transfer-Encoding: quoted-printable\n\n\
                   On Tue, Aug 6, 2024 at 4:32=E2=80=AFPM Jeff wrote:\n\
                   > =C2=A0 int i;\n\
                   soft=\nbreak\n";
        let got = parts(raw);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].text,
            "On Tue, Aug 6, 2024 at 4:32\u{202f}PM Jeff wrote:\n> \u{a0} int i;\nsoftbreak\n"
        );
    }

    #[test]
    fn base64_and_latin1_and_unlabelled_utf8_are_text() {
        let raw = "Content-Type: text/plain; charset=iso-8859-1\n\
                   Content-Transfer-Encoding: base64\n\nSvZyZwo=\n";
        assert_eq!(parts(raw)[0].text, "Jörg\n");
        let raw = "Content-Transfer-Encoding: 8bit\n\nJörg\n";
        assert_eq!(parts(raw)[0].text, "Jörg\n");
        let raw = b"Content-Type: text/plain; charset=x-unknown\n\n\xff\n";
        assert_eq!(text_parts(raw).unwrap()[0].text, "\u{fffd}\n");
    }

    #[test]
    fn attachments_named_patch_are_text_and_html_is_not() {
        let raw = "Content-Type: multipart/mixed; boundary=\"b\"\n\n\
                   preamble\n--b\nContent-Type: text/plain\n\nhello\n\
                   --b\nContent-Type: text/html\n\n<p>x</p>\n\
                   --b\nContent-Type: application/octet-stream; name=\"0001-x.patch\"\n\
                   Content-Disposition: attachment; filename=\"0001-x.patch\"\n\n\
                   diff --git a/x b/x\n--b--\nepilogue\n";
        let got = parts(raw);
        assert_eq!(got.len(), 2, "{got:#?}");
        assert_eq!(got[0].text, "hello");
        assert!(!got[0].attachment);
        assert_eq!(got[1].text, "diff --git a/x b/x");
        assert!(got[1].attachment);
    }

    #[test]
    fn too_many_or_too_deep_parts_are_refused() {
        let mut wide = String::from("Content-Type: multipart/mixed; boundary=b\n\n");
        for _ in 0..MAX_MIME_PARTS {
            wide.push_str("--b\n\nx\n");
        }
        wide.push_str("--b--\n");
        assert!(text_parts(wide.as_bytes()).is_err());
        let mut deep = String::new();
        for level in 0..=MAX_MIME_DEPTH {
            deep.push_str(&format!(
                "Content-Type: multipart/mixed; boundary=b{level}\n\n--b{level}\n"
            ));
        }
        deep.push_str("\nleaf\n");
        let err = text_parts(deep.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("nested"), "{err}");
        // One level less is read.
        let ok = deep
            .split_once('\n')
            .unwrap()
            .1
            .split_once("--b0\n")
            .unwrap()
            .1;
        assert_eq!(parts(ok).len(), 1);
    }
}
