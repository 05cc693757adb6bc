//! A request's query string, percent-decoded (`form_urlencoded`, as a browser encodes a form):
//! `?ms=%31%30` is `ms=10`, and `+` is a space.

use http::Uri;

use crate::failure::Failure;

/// The decoded `name=value` pairs of a URI's query, in order.
#[derive(Debug, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    pub fn of(uri: &Uri) -> Query {
        let query = uri.query().unwrap_or("");
        Query(
            form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// A milliseconds parameter: an integer in `0..=max`, or `None` when absent.
    pub fn optional_ms(&self, name: &'static str, max: u64) -> Result<Option<u64>, Failure> {
        match self.get(name) {
            None => Ok(None),
            Some(value) => value
                .parse::<u64>()
                .ok()
                .filter(|ms| *ms <= max)
                .map(Some)
                .ok_or(Failure::BadParameter { name, max }),
        }
    }

    /// A milliseconds parameter that must be there.
    pub fn ms(&self, name: &'static str, max: u64) -> Result<u64, Failure> {
        self.optional_ms(name, max)?
            .ok_or(Failure::MissingParameter { name, max })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(uri: &str) -> Query {
        Query::of(&uri.parse().unwrap_or_default())
    }

    #[test]
    fn values_are_percent_decoded() {
        assert_eq!(query("/delay?ms=%31%30").ms("ms", 100).ok(), Some(10));
        assert_eq!(query("/x?a=b+c&ms=5").get("a"), Some("b c"));
        assert_eq!(query("/x?%6Ds=7").ms("ms", 100).ok(), Some(7));
    }

    #[test]
    fn absent_bad_and_out_of_range_are_told_apart() {
        assert!(matches!(
            query("/delay").ms("ms", 100),
            Err(Failure::MissingParameter { name: "ms", .. })
        ));
        assert_eq!(
            query("/compute?ms=1").optional_ms("delay_ms", 100).ok(),
            Some(None)
        );
        for bad in [
            "/delay?ms=",
            "/delay?ms=-1",
            "/delay?ms=101",
            "/delay?ms=1e2",
            "/delay?ms",
        ] {
            assert!(
                matches!(query(bad).ms("ms", 100), Err(Failure::BadParameter { .. })),
                "{bad}"
            );
        }
        // The first of repeated names counts.
        assert_eq!(query("/delay?ms=1&ms=2").ms("ms", 100).ok(), Some(1));
    }
}
