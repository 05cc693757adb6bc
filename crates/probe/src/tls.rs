//! TLS on the probe's stream (rustls): the server's certificate, from files or generated once
//! and kept, and the two ways a subscriber trusts it: pinning its SHA-256 fingerprint (as SSH
//! pins a host key: no CA, no names, no expiry to manage) or verifying it against a CA.
//!
//! The token travels inside the TLS session, so it is checked only after the handshake.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use thiserror::Error;

/// Why TLS could not be set up.
#[derive(Debug, Error)]
pub enum TlsError {
    #[error("cannot read {what} {path}: {reason}")]
    Read {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Config(String),
    #[error("--probe-fingerprint {0:?} is not a SHA-256 fingerprint: give the 64 hex digits `probe serve` printed (colons allowed)")]
    Fingerprint(String),
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The SHA-256 fingerprint of a certificate (DER) as `openssl x509 -fingerprint -sha256`
/// prints it: upper-case hex pairs joined by colons.
pub fn fingerprint(der: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    let pairs: Vec<String> = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
    pairs.join(":")
}

/// Reads a fingerprint as a user may paste it: with or without colons, any case, an optional
/// `sha256:` or `SHA256 Fingerprint=` prefix.
pub fn parse_fingerprint(text: &str) -> Result<[u8; 32], TlsError> {
    let bad = || TlsError::Fingerprint(text.to_string());
    let trimmed = text.trim();
    let trimmed = trimmed
        .rsplit_once('=')
        .map_or(trimmed, |(_, v)| v)
        .trim_start_matches("sha256:")
        .trim_start_matches("SHA256:");
    let hex: String = trimmed.chars().filter(|c| *c != ':').collect();
    let bytes = hex::decode(&hex).map_err(|_| bad())?;
    bytes.try_into().map_err(|_| bad())
}

/// The probe's side: its certificate and key.
#[derive(Debug, Clone)]
pub struct ServerTls {
    pub config: Arc<rustls::ServerConfig>,
    /// The certificate's SHA-256 fingerprint, for subscribers to pin.
    pub fingerprint: String,
}

impl ServerTls {
    /// A certificate chain and its key from PEM files (`--tls-cert`, `--tls-key`).
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let read = |what, path: &Path, e: &dyn std::fmt::Display| TlsError::Read {
            what,
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let chain = CertificateDer::pem_file_iter(cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| read("the certificate", cert, &e))?;
        if chain.is_empty() {
            return Err(read(
                "the certificate",
                cert,
                &"no PEM certificate in it (--tls-cert wants a PEM file)",
            ));
        }
        let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| read("the key", key, &e))?;
        Self::new(chain, key_der)
    }

    /// `--tls-generate DIR`: the certificate and key in DIR (probe.crt, probe.key), made on
    /// first start for `names` (host names and addresses) and reused after, so that the
    /// fingerprint subscribers pinned stays valid across restarts.
    pub fn generate_or_load(dir: &Path, names: &[String]) -> Result<(Self, bool), TlsError> {
        let cert = dir.join("probe.crt");
        let key = dir.join("probe.key");
        if cert.exists() && key.exists() {
            return Ok((Self::from_pem_files(&cert, &key)?, false));
        }
        let made = rcgen::generate_simple_self_signed(names.to_vec())
            .map_err(|e| TlsError::Config(format!("cannot generate a certificate: {e}")))?;
        std::fs::create_dir_all(dir).map_err(|source| TlsError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
        write_private(&key, made.signing_key.serialize_pem().as_bytes())?;
        write_private(&cert, made.cert.pem().as_bytes())?;
        Ok((Self::from_pem_files(&cert, &key)?, true))
    }

    /// A certificate made now for `names` and kept in memory only: one a process pins for as
    /// long as it listens (the guns' rendezvous), its fingerprint handed to its peers.
    pub fn ephemeral(names: &[String]) -> Result<Self, TlsError> {
        let made = rcgen::generate_simple_self_signed(names.to_vec())
            .map_err(|e| TlsError::Config(format!("cannot generate a certificate: {e}")))?;
        let key = PrivateKeyDer::try_from(made.signing_key.serialize_der())
            .map_err(|e| TlsError::Config(format!("cannot use the generated key: {e}")))?;
        Self::new(vec![made.cert.der().clone()], key)
    }

    fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Self, TlsError> {
        let fingerprint = fingerprint(&chain[0]);
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
            .map_err(|e| {
                TlsError::Config(format!(
                    "the certificate and key do not make a TLS configuration: {e}"
                ))
            })?;
        Ok(ServerTls {
            config: Arc::new(config),
            fingerprint,
        })
    }
}

/// Writes a file readable by its owner only (the key), atomically, never through a link.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    crate::files::replace(path, bytes, 0o600).map_err(|source| TlsError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// How a subscriber trusts the probe.
#[derive(Debug, Clone)]
pub enum Trust {
    /// `--probe-fingerprint`: exactly this certificate, whatever its names.
    Fingerprint([u8; 32]),
    /// `--probe-ca FILE`: a certificate signed by one of these, for the name connected to.
    Ca(PathBuf),
    /// The same, the certificates given as PEM text (an order carries the file's contents).
    CaPem(String),
}

/// CA certificates of which none is usable.
#[derive(Debug, Error)]
#[error(
    "no usable PEM certificate in it (--probe-ca wants the CA's or the probe's certificate, PEM)"
)]
struct NoCertificate;

/// The roots to trust: every parsable certificate of `certs`, at least one.
fn roots(certs: Vec<CertificateDer<'static>>) -> Result<rustls::RootCertStore, NoCertificate> {
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(NoCertificate);
    }
    Ok(roots)
}

/// The subscriber's side.
#[derive(Debug, Clone)]
pub struct ClientTls {
    pub config: Arc<rustls::ClientConfig>,
}

impl ClientTls {
    pub fn new(trust: &Trust) -> Result<Self, TlsError> {
        let provider = provider();
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let config = match trust {
            Trust::Fingerprint(pin) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(PinnedCertificate {
                    pin: *pin,
                    provider,
                }))
                .with_no_client_auth(),
            Trust::Ca(path) => {
                let read = |reason: String| TlsError::Read {
                    what: "the CA certificates",
                    path: path.clone(),
                    reason,
                };
                let certs = CertificateDer::pem_file_iter(path)
                    .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| read(e.to_string()))?;
                builder
                    .with_root_certificates(roots(certs).map_err(|e| read(e.to_string()))?)
                    .with_no_client_auth()
            }
            Trust::CaPem(pem) => {
                let read =
                    |reason: String| TlsError::Config(format!("the CA certificates: {reason}"));
                let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| read(e.to_string()))?;
                builder
                    .with_root_certificates(roots(certs).map_err(|e| read(e.to_string()))?)
                    .with_no_client_auth()
            }
        };
        Ok(ClientTls {
            config: Arc::new(config),
        })
    }

    /// The name a certificate must carry for `host` (an address or a DNS name); pinning
    /// ignores it.
    pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        ServerName::try_from(host.to_string())
            .map_err(|_| TlsError::Config(format!("{host:?} is not a host name or address")))
    }
}

/// Accepts exactly one certificate, by its SHA-256 fingerprint; the handshake's signatures are
/// still verified, so only the holder of that certificate's key passes.
#[derive(Debug)]
struct PinnedCertificate {
    pin: [u8; 32],
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedCertificate {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let got = ring::digest::digest(&ring::digest::SHA256, end_entity);
        if got.as_ref() == self.pin {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the probe's certificate has the fingerprint {}, not the one --probe-fingerprint pins ({}): check the flag against what `probe serve` printed",
                fingerprint(end_entity),
                self.pin.map(|b| format!("{b:02X}")).join(":")
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_read_back_in_every_form_users_paste() -> Result<(), TlsError> {
        let printed = fingerprint(b"certificate");
        let bytes = parse_fingerprint(&printed)?;
        assert_eq!(
            parse_fingerprint(&printed.replace(':', "").to_lowercase())?,
            bytes
        );
        assert_eq!(
            parse_fingerprint(&format!("sha256 Fingerprint={printed}"))?,
            bytes
        );
        assert!(parse_fingerprint("AB:CD").is_err());
        assert!(parse_fingerprint(&"zz".repeat(32)).is_err());
        Ok(())
    }

    #[test]
    fn a_generated_certificate_is_kept_and_its_key_private(
    ) -> Result<(), Box<dyn std::error::Error>> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir()?;
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let (first, made) = ServerTls::generate_or_load(dir.path(), &names)?;
        assert!(made);
        let (again, made) = ServerTls::generate_or_load(dir.path(), &names)?;
        assert!(!made, "the second start reuses the certificate");
        assert_eq!(first.fingerprint, again.fingerprint);
        let mode = std::fs::metadata(dir.path().join("probe.key"))?
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the key is readable by its owner only");
        Ok(())
    }
}
