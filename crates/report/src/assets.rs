//! The files every site has beside its pages, written once into `assets/`: uPlot (vendored,
//! pinned in `assets/assets.lock` with its licence) and the pages' own script. Nothing is
//! fetched: a site opens from disk with the network off.

/// `(path under the site's root, bytes)`.
pub const FILES: [(&str, &[u8]); 4] = [
    (
        "assets/uPlot.iife.min.js",
        include_bytes!("../assets/uplot/uPlot.iife.min.js"),
    ),
    (
        "assets/uPlot.min.css",
        include_bytes!("../assets/uplot/uPlot.min.css"),
    ),
    (
        "assets/uPlot.LICENSE",
        include_bytes!("../assets/uplot/LICENSE"),
    ),
    (
        "assets/showdown.js",
        include_bytes!("../assets/showdown.js"),
    ),
];

#[cfg(test)]
mod tests {
    use sha2::Digest;

    /// Every vendored file is the one its line in assets.lock pins.
    #[test]
    fn the_vendored_files_are_the_pinned_ones() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/assets");
        let lock = std::fs::read_to_string(format!("{dir}/assets.lock")).unwrap();
        let mut checked = 0;
        for line in lock
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let words: Vec<&str> = line.split_whitespace().collect();
            let (file, sha) = (words[2], words[3]);
            let bytes = std::fs::read(format!("{dir}/{file}")).unwrap();
            assert_eq!(hex::encode(sha2::Sha256::digest(&bytes)), sha, "{file}");
            checked += 1;
        }
        assert_eq!(checked, 3);
        // And the pages' copies are those files.
        for (path, bytes) in super::FILES {
            assert!(!bytes.is_empty(), "{path}");
        }
    }
}
