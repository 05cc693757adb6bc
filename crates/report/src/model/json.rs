//! A model as JSON inside a page's `<script type="application/json">`: a chart's data, the
//! numbers' rule table.

use serde::Serialize;

/// `value` as JSON with `<`, `>` and `&` written as JSON escapes, so that nothing in it ends
/// the element or reads as markup.
pub(crate) fn in_script<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}
