//! A file written whole, in place of whatever had its name: the bytes go to a file of a random
//! name beside it, created exclusively with the mode asked for (so a link, or a file someone
//! else left, at a guessable name such as `NAME.tmp` is never written through), and that file is
//! renamed over the name. A reader sees the old file or the new one, never half of it, and a
//! symbolic link at the name is replaced, not followed. Every crate that writes a file a user
//! named or keeps (a key, a token, a Job's manifest, a page) writes it this way.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Writes `bytes` as the file `path` with permissions `mode` (0o600 for a secret), replacing
/// what is there.
pub fn replace(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // tempfile creates it O_EXCL, mode 0600, under a name no one can guess beforehand.
    let mut file = tempfile::Builder::new()
        .prefix(".showdown-")
        .tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.as_file().sync_all()?;
    file.persist(path).map(|_| ()).map_err(|e| e.error)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// A link at the name (or at the `NAME.tmp` a simpler writer would use) is replaced, never
    /// written through: the file it points at is left as it was; and the mode is the one asked
    /// for, even where a file of a wider mode was there.
    #[test]
    fn a_link_at_the_name_is_replaced_not_followed_and_the_mode_is_the_one_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let path = dir.path().join("job.yaml");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("job.tmp")).unwrap();
        replace(&path, b"new", 0o644).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert!(!std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink());
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "old").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        replace(&secret, b"token", 0o600).unwrap();
        assert_eq!(std::fs::metadata(&secret).unwrap().mode() & 0o777, 0o600);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".showdown-"))
            .collect();
        assert!(left.is_empty(), "nothing left beside it: {left:?}");
    }
}
