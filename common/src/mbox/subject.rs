//! A patch subject as `git format-patch` and mailing lists write it:
//! `[PATCH v2 3/7] mm: make the thing faster`, with the bracketed prefix
//! read into version, position and the other tags (`RFC`, `net-next`).

/// A subject split into its `[...]` prefix and its title.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subject {
    /// The words of the prefix that are neither a version nor a position:
    /// `PATCH`, `RFC`, `net-next`, ...
    pub tags: Vec<String>,
    /// The series version: 2 for `v2`; `None` for a first posting.
    pub version: Option<u32>,
    /// The position in the series: `(3, 7)` for `3/7`; `(0, 7)` for a
    /// cover letter.
    pub position: Option<(u32, u32)>,
    /// The subject without the prefix(es) and a leading `Re:`: the commit
    /// title.
    pub title: String,
    /// Whether the subject answers another message: `Re:`, `Aw:`, `Fwd:`,
    /// or any other word of two or three letters and a colon before a
    /// `[` prefix (`Sv: [PATCH …]`), as b4 tells replies.
    pub reply: bool,
}

impl Subject {
    /// Whether `subject` is a cover letter's (`[PATCH v2 0/3] …`), not a
    /// reply to one.
    pub fn is_cover_letter(subject: &str) -> bool {
        let s = Subject::parse(subject);
        !s.reply && matches!(s.position, Some((0, n)) if n > 0)
    }

    /// Reads a decoded, unfolded subject. Every prefix in brackets at the
    /// start counts (`[RFC][PATCH 1/2]`); text that is not in that form is
    /// all title.
    pub fn parse(subject: &str) -> Subject {
        let mut out = Subject::default();
        let mut rest = subject.trim();
        if let Some(after) = reply_prefix(rest) {
            out.reply = true;
            rest = after.trim_start();
        }
        while let Some(inner_and_rest) = rest.strip_prefix('[') {
            let Some((inner, after)) = inner_and_rest.split_once(']') else {
                break;
            };
            for word in inner.split_whitespace() {
                out.read_word(word);
            }
            rest = after.trim_start();
        }
        out.title = rest.to_string();
        out
    }

    fn read_word(&mut self, word: &str) {
        // `[PATCHv3]`, as some write it, is `[PATCH v3]`.
        if let Some(v) =
            strip_prefix_ignore_case(word, "patchv").filter(|v| v.parse::<u32>().is_ok())
        {
            self.tags.push(word[..5].to_string());
            self.version = v.parse().ok();
        } else if let Some(v) = word
            .strip_prefix(['v', 'V'])
            .and_then(|n| n.parse::<u32>().ok())
        {
            self.version = Some(v);
        } else if let Some(position) = position(word) {
            self.position = Some(position);
        } else {
            self.tags.push(word.to_string());
        }
    }
}

/// `3/7` -> (3, 7).
fn position(word: &str) -> Option<(u32, u32)> {
    let (n, of) = word.split_once('/')?;
    Some((n.parse().ok()?, of.parse().ok()?))
}

/// What follows a reply's `Re:` (or `Aw:`, `Fwd:`, `Sv: [`…), if the
/// subject starts with one.
fn reply_prefix(subject: &str) -> Option<&str> {
    let (word, after) = subject.split_once(':')?;
    let short = (2..=3).contains(&word.len()) && word.chars().all(char::is_alphanumeric);
    let known = ["re", "aw", "fwd"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w));
    (known || (short && after.trim_start().starts_with('['))).then_some(after)
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_position_and_tags_are_read() {
        let s = Subject::parse("[PATCH v2 3/7] mm: make the thing faster");
        assert_eq!(s.tags, ["PATCH"]);
        assert_eq!(s.version, Some(2));
        assert_eq!(s.position, Some((3, 7)));
        assert_eq!(s.title, "mm: make the thing faster");
    }

    #[test]
    fn several_prefixes_and_replies() {
        let s = Subject::parse("Re: [RFC][PATCH net-next 0/2] net: two things");
        assert_eq!(s.tags, ["RFC", "PATCH", "net-next"]);
        assert_eq!(s.version, None);
        assert_eq!(s.position, Some((0, 2)));
        assert_eq!(s.title, "net: two things");
        assert!(s.reply);
        assert!(Subject::parse("AW: fs: x").reply);
        assert!(Subject::parse("Sv: [PATCH] fs: x").reply);
        assert!(!Subject::parse("fs: x").reply);
        assert!(!Subject::parse("[PATCH] net: fix").reply);
        let s = Subject::parse("[PATCHv3 2/5] x");
        assert_eq!(
            (s.tags, s.version, s.position),
            (vec!["PATCH".to_string()], Some(3), Some((2, 5)))
        );
    }

    #[test]
    fn a_subject_without_prefix_is_all_title() {
        let s = Subject::parse("fs: open faster");
        assert_eq!(
            s,
            Subject {
                title: "fs: open faster".into(),
                ..Subject::default()
            }
        );
        assert_eq!(Subject::parse("[unclosed x").title, "[unclosed x");
    }
}
