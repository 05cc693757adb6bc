package main

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// /encrypt's work: AES-256-CBC with PKCS#7 padding under SHA-256(SECRET), a random IV per value,
// written as IVHEX:CIPHERHEX.

// encryptionKey is the key for secret: the 32 raw bytes of SHA-256 over its UTF-8 bytes.
func encryptionKey(secret string) [32]byte {
	return sha256.Sum256([]byte(secret))
}

// encrypt returns plain encrypted under key with a fresh random IV, as IVHEX:CIPHERHEX.
func encrypt(key *[32]byte, plain string) (string, error) {
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return "", err
	}
	var iv [aes.BlockSize]byte
	if _, err := rand.Read(iv[:]); err != nil {
		return "", err
	}
	data := pkcs7Pad([]byte(plain), aes.BlockSize)
	cipher.NewCBCEncrypter(block, iv[:]).CryptBlocks(data, data)

	out := make([]byte, 0, hex.EncodedLen(len(iv))+1+hex.EncodedLen(len(data)))
	out = hex.AppendEncode(out, iv[:])
	out = append(out, ':')
	out = hex.AppendEncode(out, data)
	return string(out), nil
}

// pkcs7Pad returns data followed by 1 to size bytes, each holding their count.
func pkcs7Pad(data []byte, size int) []byte {
	n := size - len(data)%size
	padded := make([]byte, len(data)+n)
	copy(padded, data)
	for i := len(data); i < len(padded); i++ {
		padded[i] = byte(n)
	}
	return padded
}
