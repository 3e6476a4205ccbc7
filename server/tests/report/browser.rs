//! Reading real pages as a person sees them: the pages are loaded in the
//! common kit's headless Chromium, served by its loopback server, and their
//! layout measured on a phone's screen.

pub use patchperf_testkit::chromium::{Chromium, Viewport};

/// A phone held upright: 390×844 CSS px (iPhone 12 to 15).
pub const PHONE: Viewport = Viewport {
    width: 390,
    height: 844,
};

/// How wide the page lays out, and the kinds of element (tag.class) that
/// stick out of the viewport outside any box that scrolls or clips them,
/// with how many, how far and an example (what to fix when it is too wide).
const WIDTH: &str = r#"(() => {
  const vw = document.documentElement.clientWidth;
  const kinds = new Map();
  const name = e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '');
  // `inside` and its ancestors: sticking out of one that scrolls or
  // clips is that box's business, not the page's.
  const note = (kind, inside, right, text) => {
    for (let p = inside; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== 'visible') return;
    }
    const k = kinds.get(kind) || { kind, count: 0, right: 0, example: '' };
    k.count += 1;
    if (right > k.right) { k.right = Math.round(right); k.example = text.trim().slice(0, 80); }
    kinds.set(kind, k);
  };
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.right > vw + 0.5) note(name(e), e.parentElement, r.right, e.textContent || '');
  }
  // Text can run out of a box that fits (a long word in a narrow block).
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let t = walk.nextNode(); t; t = walk.nextNode()) {
    const range = document.createRange();
    range.selectNodeContents(t);
    const r = range.getBoundingClientRect();
    if (r.right > vw + 0.5) note('text in ' + name(t.parentElement), t.parentElement, r.right, t.textContent);
  }
  return { width: document.documentElement.scrollWidth, sticking_out: [...kinds.values()] };
})()"#;

/// How wide the page at `url` lays out on a phone (printed); an error
/// naming what sticks out when that is wider than the phone's 390 px, so
/// that more than a table in its own scrolling box moves sideways.
async fn fits_a_phone(chromium: &Chromium, url: &str) -> Result<f64, String> {
    let measured = chromium.evaluate(url, PHONE, WIDTH).await;
    let width = measured["width"].as_f64().expect("a width");
    eprintln!("layout: {url} at 390×844 is {width} px wide");
    if width <= f64::from(PHONE.width) {
        Ok(width)
    } else {
        Err(format!(
            "{url} is {width} px wide on a 390 px phone; sticking out: {:#}",
            measured["sticking_out"]
        ))
    }
}

/// Asserts every page of `urls` fits a phone (see [`fits_a_phone`]),
/// measuring them all first so one failure shows every page too wide.
pub async fn assert_fit_a_phone(chromium: &Chromium, urls: &[String]) {
    let mut too_wide = Vec::new();
    for url in urls {
        if let Err(e) = fits_a_phone(chromium, url).await {
            too_wide.push(e);
        }
    }
    assert!(too_wide.is_empty(), "{}", too_wide.join("\n"));
}

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
