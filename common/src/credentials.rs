//! A repository URL as anyone may read it: without the user and password
//! it may carry. Below both the API's checks and the wire types, which
//! each show URLs.

/// `url` as anyone may read it: a `scheme://` URL without the user and
/// password before its host (`https://user:token@host/x.git` →
/// `https://host/x.git`), since they are commonly the repository's secret;
/// anything else as it is (the scp form names at most an ssh user, an
/// absolute path none). Shown whole only to a ci or admin token.
pub fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_taken_out_of_urls_shown() {
        for (url, shown) in [
            (
                "https://user:s3cret@git.example.org/vfs.git",
                "https://git.example.org/vfs.git",
            ),
            ("https://ghp_token@github.com/a/b", "https://github.com/a/b"),
            ("http://u:p@10.0.0.1:8080", "http://10.0.0.1:8080"),
            (
                "https://h.example.org/p@q.git",
                "https://h.example.org/p@q.git",
            ),
            (
                "https://a:b@c@h.example.org/x?y=@z",
                "https://h.example.org/x?y=@z",
            ),
            (
                "git@github.com:torvalds/linux.git",
                "git@github.com:torvalds/linux.git",
            ),
            ("/srv/git/vfs.git", "/srv/git/vfs.git"),
        ] {
            assert_eq!(without_credentials(url), shown, "{url}");
        }
    }
}
