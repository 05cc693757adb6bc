package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// decrypt undoes encrypt as the contract suite does: IVHEX:CIPHERHEX under SHA-256(secret).
func decrypt(t *testing.T, secret, value string) string {
	t.Helper()
	ivHex, dataHex, ok := strings.Cut(value, ":")
	if !ok || strings.ToLower(value) != value {
		t.Fatalf("%q is not lower-case IVHEX:CIPHERHEX", value)
	}
	iv, err := hex.DecodeString(ivHex)
	if err != nil || len(iv) != aes.BlockSize {
		t.Fatalf("%q: the IV is not 16 bytes of hex", value)
	}
	data, err := hex.DecodeString(dataHex)
	if err != nil || len(data) == 0 || len(data)%aes.BlockSize != 0 {
		t.Fatalf("%q: the cipher text is not whole blocks of hex", value)
	}
	key := sha256.Sum256([]byte(secret))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		t.Fatal(err)
	}
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(data, data)
	n := int(data[len(data)-1])
	if n < 1 || n > aes.BlockSize || !bytes.Equal(data[len(data)-n:], bytes.Repeat([]byte{byte(n)}, n)) {
		t.Fatalf("%q: bad PKCS#7 padding %x", value, data)
	}
	return string(data[:len(data)-n])
}

func TestEncryptionDecryptsWithTheKey(t *testing.T) {
	key := encryptionKey("s3cret")
	for _, plain := range []string{"u", "user-42", "exactly sixteen!", strings.Repeat("é", 255)} {
		out, err := encrypt(&key, plain)
		if err != nil {
			t.Fatal(err)
		}
		if got := decrypt(t, "s3cret", out); got != plain {
			t.Errorf("%q decrypted to %q", plain, got)
		}
		again, _ := encrypt(&key, plain)
		if again[:32] == out[:32] {
			t.Errorf("%q: the same IV twice", plain)
		}
	}
}

func TestPaddingIsAlwaysAddedAndWhole(t *testing.T) {
	for n := range 40 {
		padded := pkcs7Pad(bytes.Repeat([]byte{'a'}, n), aes.BlockSize)
		if len(padded)%aes.BlockSize != 0 || len(padded) <= n || len(padded) > n+aes.BlockSize {
			t.Errorf("%d bytes padded to %d", n, len(padded))
		}
	}
}
