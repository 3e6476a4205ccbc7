//! Fuzzes what goes into a mail from outside (`patchperf_common::mail_header`):
//! names, subjects and addresses as a repository or a mailing list writes
//! them, and the text of the mail. A header value is always one clean line
//! within its bound, an accepted address could never open a header or a
//! second recipient, a name-addr reads back as written, and a mail's text
//! has no CR and no NUL left.

use patchperf_common::mail_header::{
    self, MAX_ADDRESS_LEN, MAX_NAME_CHARS, MAX_SUBJECT_CHARS, NameAddr,
};
use proptest::prelude::*;

/// Text as a hostile repository or list writes it: mostly plain, with line
/// breaks, NUL, quotes, brackets and any other character mixed in.
fn hostile(max: usize) -> impl Strategy<Value = String> {
    let c = prop_oneof![
        4 => proptest::char::range('a', 'z'),
        1 => any::<char>(),
        1 => prop::sample::select(vec![
            '\r', '\n', '\0', '\t', '\u{85}', '\u{2028}', '\u{202e}', '<', '>', '"', '@', ',',
            ':', ' ', '.', '[', ']',
        ]),
    ];
    prop::collection::vec(c, 0..max).prop_map(|v| v.into_iter().collect())
}

/// One clean line: nothing that breaks or reorders a line, no white space
/// but single spaces, none at either end.
fn clean_line(s: &str) -> bool {
    !s.chars().any(|c| {
        c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }) && !s.contains("  ")
        && s.trim() == s
        && s.chars().all(|c| c == ' ' || !c.is_whitespace())
}

proptest! {
    #[test]
    fn fuzz_names_and_subjects_are_one_clean_line_within_their_bound(s in hostile(400)) {
        let name = mail_header::display_name(&s);
        prop_assert!(clean_line(&name), "{name:?}");
        prop_assert!(!name.contains(['<', '>', '"']), "{name:?}");
        prop_assert!(name.chars().count() <= MAX_NAME_CHARS);
        let subject = mail_header::subject(&s);
        prop_assert!(clean_line(&subject), "{subject:?}");
        prop_assert!(subject.chars().count() <= MAX_SUBJECT_CHARS);
        // Cleaning what is clean changes nothing.
        prop_assert_eq!(mail_header::subject(&subject), subject.clone());
        prop_assert_eq!(mail_header::display_name(&name), name);
    }

    #[test]
    fn fuzz_an_accepted_address_cannot_open_a_header_or_a_recipient(
        s in prop_oneof![
            "[a-z]{1,8}(\\.[a-z]{1,4})?@[a-z0-9-]{1,8}\\.[a-z0-9]{1,4}",
            (hostile(6), "[a-zA-Z]{1,8}@[a-z]{1,8}\\.org", hostile(6)).prop_map(|(a, b, c)| format!("{a}{b}{c}")),
            hostile(40),
        ]
    ) {
        if mail_header::check_address(&s).is_ok() {
            prop_assert!(s.len() <= MAX_ADDRESS_LEN);
            prop_assert!(s.is_ascii());
            prop_assert!(!s.contains(['\r', '\n', '\0', ' ', '<', '>', ',', ';', ':', '"', '[', ']', '(', ')']), "{s:?}");
            prop_assert_eq!(s.matches('@').count(), 1);
            prop_assert_eq!(mail_header::address_key(&s), s.to_ascii_lowercase());
        }
    }

    #[test]
    fn fuzz_an_author_from_a_repository_reads_back_as_stored(name in hostile(60), address in hostile(40)) {
        let a = NameAddr::from_repository(&name, &address);
        if let Some(n) = &a.name {
            prop_assert!(clean_line(n) && !n.is_empty(), "{n:?}");
        }
        prop_assert!(!a.address.contains(['\r', '\n', '\0', '<', '>']), "{:?}", a.address);
        let header = a.header();
        prop_assert!(!header.contains(['\r', '\n', '\0']), "{header:?}");
        if !a.address.is_empty() {
            prop_assert_eq!(NameAddr::parse(&header), Some(a));
        }
    }

    #[test]
    fn fuzz_a_mail_text_has_no_cr_and_no_nul(s in hostile(400)) {
        let body = mail_header::body(&s);
        prop_assert!(!body.contains(['\r', '\0']), "{body:?}");
        // Each line break of the input is one line break of the text.
        let breaks = s.replace("\r\n", "\n").matches(['\r', '\n']).count();
        prop_assert_eq!(body.matches('\n').count(), breaks);
        prop_assert_eq!(mail_header::body(&body), body);
    }
}
