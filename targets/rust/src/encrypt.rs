//! `/encrypt`'s work: AES-256-CBC with PKCS#7 padding under `SHA-256(SECRET)`, a random IV per
//! value, written as `IVHEX:CIPHERHEX`.

use aes::cipher::{block_padding::Pkcs7, BlockEncryptMut, KeyIvInit};
use rand::Rng;
use sha2::{Digest, Sha256};

type Encryptor = cbc::Encryptor<aes::Aes256>;

/// The key for `secret`.
pub fn key(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// `plain` encrypted under `key` with a fresh IV.
pub fn encrypt(key: &[u8; 32], plain: &str) -> String {
    let mut iv = [0u8; 16];
    rand::rng().fill_bytes(&mut iv);
    let cipher =
        Encryptor::new(key.into(), &iv.into()).encrypt_padded_vec_mut::<Pkcs7>(plain.as_bytes());
    format!("{}:{}", hex::encode(iv), hex::encode(cipher))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes::cipher::BlockDecryptMut;

    #[test]
    fn decrypts_with_the_key_and_the_iv() {
        let key = key("s3cret");
        let out = encrypt(&key, "user-42");
        let (iv, cipher) = out.split_once(':').unwrap_or_default();
        let iv: [u8; 16] = hex::decode(iv)
            .unwrap_or_default()
            .try_into()
            .unwrap_or([0; 16]);
        let mut cipher = hex::decode(cipher).unwrap_or_default();
        let plain = cbc::Decryptor::<aes::Aes256>::new(&key.into(), &iv.into())
            .decrypt_padded_mut::<Pkcs7>(&mut cipher)
            .map(|p| p.to_vec())
            .unwrap_or_default();
        assert_eq!(plain, b"user-42");
        assert_ne!(encrypt(&key, "user-42"), out, "a fresh IV every time");
    }
}
