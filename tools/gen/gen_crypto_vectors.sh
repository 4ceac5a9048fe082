#!/usr/bin/env bash
# Regenerates the crypto test vectors in tests/data/crypto with the openssl CLI (not with prereg).
#
# The two Ed25519 keys are built from fixed seeds (RFC 8032 section 7.1, TEST 1 and TEST 2), so
# every Ed25519 file below is byte-identical on each run; only the RSA and EC keys (which exist
# to be refused) are fresh each time.
set -euo pipefail

cd "$(dirname "$0")/../.."
out=tests/data/crypto
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# An unencrypted PKCS#8 Ed25519 private key is this fixed DER prefix + the 32-byte seed
# (RFC 8410 section 7).
pkcs8_prefix=302e020100300506032b657004220420

make_ed25519() { # name seed-hex
  echo "${pkcs8_prefix}$2" | xxd -r -p >"$tmp/$1.der"
  openssl pkey -inform DER -in "$tmp/$1.der" -out "$out/$1.key"
  openssl pkey -in "$out/$1.key" -pubout -out "$out/$1.pub"
}
make_ed25519 test 9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60
make_ed25519 other 4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb

# The message, its signature by test.key (raw 64 bytes, and base64), the fingerprint.
printf 'prereg crypto test vector: the quick brown fox jumps over the lazy dog.\n' >"$out/message.txt"
openssl pkeyutl -sign -rawin -inkey "$out/test.key" -in "$out/message.txt" -out "$out/message.sig"
base64 -w0 "$out/message.sig" >"$out/message.sig.b64"
echo >>"$out/message.sig.b64"
openssl pkey -pubin -in "$out/test.pub" -outform DER | sha256sum | cut -d' ' -f1 \
  >"$out/test.fingerprint"
openssl pkey -pubin -in "$out/other.pub" -outform DER | sha256sum | cut -d' ' -f1 \
  >"$out/other.fingerprint"

# The signature of the one-byte message 0x72 by other.key, which RFC 8032 TEST 2 gives (the
# CLI cannot sign TEST 1's empty message: pkeyutl refuses empty input).
printf '\x72' >"$tmp/r"
openssl pkeyutl -sign -rawin -inkey "$out/other.key" -in "$tmp/r" | xxd -p -c 64 \
  >"$out/rfc8032_test2.sig.hex"

# Keys of other types, which prereg must refuse.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$out/rsa.key" 2>/dev/null
openssl pkey -in "$out/rsa.key" -pubout -out "$out/rsa.pub"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$out/ec.key"
openssl pkey -in "$out/ec.key" -pubout -out "$out/ec.pub"
openssl genpkey -algorithm X25519 -out "$out/x25519.key"
openssl pkey -in "$out/x25519.key" -pubout -out "$out/x25519.pub"
# test.key itself, but encrypted (PKCS#8 "ENCRYPTED PRIVATE KEY"): prereg takes no passphrases.
openssl pkey -in "$out/test.key" -aes256 -passout pass:prereg-test -out "$out/test_encrypted.key"

# SHA-256 of one million 'a' bytes (a FIPS 180-2 example), by the CLI.
head -c 1000000 /dev/zero | tr '\0' a | sha256sum | cut -d' ' -f1 >"$out/million_a.sha256"

echo "wrote $(ls "$out" | wc -l) files to $out"
