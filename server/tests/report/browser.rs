//! Reading real pages as a person sees them: the pages are loaded in the
//! common kit's headless Chromium, served by its loopback server.

pub use patchperf_testkit::chromium::Chromium;

/// The text a user sees: tags, scripts and styles removed, entities of the
/// kinds our templates write decoded.
pub fn visible_text(dom: &str) -> String {
    let mut text = String::new();
    let mut rest = dom;
    while let Some(start) = rest.find('<') {
        text.push_str(&rest[..start]);
        let tag = &rest[start..];
        let skip_to = ["<script", "<style", "<svg"]
            .iter()
            .find(|t| tag.starts_with(**t))
            .map(|t| format!("</{}>", &t[1..]));
        let end = match skip_to {
            Some(close) => tag.find(&close).map_or(tag.len(), |i| i + close.len()),
            None => tag.find('>').map_or(tag.len(), |i| i + 1),
        };
        // Inline elements do not separate words; everything else does.
        let name = tag[1..]
            .trim_start_matches('/')
            .split(|c: char| !c.is_ascii_alphanumeric())
            .next()
            .unwrap_or("");
        if !matches!(name, "a" | "b" | "i" | "em" | "strong" | "span" | "code") {
            text.push(' ');
        }
        rest = &tag[end..];
    }
    text.push_str(rest);
    text.replace("&lt;", "<")
        .replace("&#60;", "<")
        .replace("&#62;", ">")
        .replace("&#38;", "&")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}
