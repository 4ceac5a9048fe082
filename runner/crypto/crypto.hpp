// SHA-256, base64, Ed25519 keys and signatures, DSSE PAE — all through OpenSSL 3 EVP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace prereg {

/// Lowercase hex SHA-256 of `bytes`.
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

/// Lowercase hex HMAC-SHA-256 (RFC 2104) of `bytes` under `key`.
[[nodiscard]] std::string hmac_sha256_hex(std::string_view key, std::string_view bytes);

/// `n` bytes from the system's random source (OpenSSL's RAND_bytes); throws `error` (exit 1)
/// if it fails.
[[nodiscard]] std::string random_bytes(std::size_t n);

/// Standard base64 (RFC 4648, with padding).
[[nodiscard]] std::string base64_encode(std::string_view bytes);
/// Decodes standard base64; throws `error` (exit 2) on malformed input.
[[nodiscard]] std::string base64_decode(std::string_view text);

/// DSSE v1 pre-authentication encoding: "DSSEv1 SP LEN(type) SP type SP LEN(body) SP body".
[[nodiscard]] std::string dsse_pae(std::string_view payload_type, std::string_view payload);

/// A public Ed25519 key (SPKI). Fingerprint = SHA-256 hex of the SPKI DER.
class public_key {
public:
  /// Parses a PEM SPKI Ed25519 key; throws `error` (exit 3) if it is not one.
  [[nodiscard]] static public_key from_pem(std::string_view pem, const std::string &where);
  [[nodiscard]] const std::string &pem() const noexcept { return m_pem; }
  [[nodiscard]] const std::string &fingerprint() const noexcept { return m_fingerprint; }
  /// True only if EVP_DigestVerify returns exactly 1.
  [[nodiscard]] bool verify(std::string_view message, std::string_view signature) const;

private:
  std::string m_pem;
  std::string m_der;
  std::string m_fingerprint;
};

/// An Ed25519 private key, loaded from a PKCS#8 PEM file of mode 0600 (or stricter).
class signing_key {
public:
  signing_key(signing_key &&) noexcept;
  signing_key &operator=(signing_key &&) noexcept;
  ~signing_key();

  /// A fresh key pair.
  [[nodiscard]] static signing_key generate();
  /// Loads the private key; a file readable or writable by group/others, or not an Ed25519
  /// PKCS#8 key, is refused with `error` (exit 3) naming the path and the fix.
  [[nodiscard]] static signing_key load(const std::filesystem::path &path);
  /// Parses an unencrypted PKCS#8 PEM Ed25519 private key; anything else is `error` (exit 3).
  [[nodiscard]] static signing_key from_pem(std::string_view pem, const std::string &where);
  /// Writes the private key (PKCS#8 PEM, mode 0600, atomically) and `<path minus .key>.pub`.
  /// Without `force`, refuses (exit 2) if either path holds anything, a dangling link included.
  void save(const std::filesystem::path &path, bool force = false) const;

  /// Raw 64-byte Ed25519 signature over `message`.
  [[nodiscard]] std::string sign(std::string_view message) const;
  [[nodiscard]] const public_key &public_part() const noexcept { return m_public; }
  [[nodiscard]] const std::string &fingerprint() const noexcept { return m_public.fingerprint(); }

private:
  struct impl;
  explicit signing_key(std::unique_ptr<impl> p, public_key pub);
  std::unique_ptr<impl> m_impl;
  public_key m_public;
};

/// Throws exit 3 if the folder of `key_path` is writable by others without the sticky bit
/// (anyone could replace the key); a missing folder passes.
void check_key_folder(const std::filesystem::path &key_path);

/// Whether `s` is a full SHA-256 in hex: 64 digits, lowercase.
[[nodiscard]] bool is_full_hash(std::string_view s);

} // namespace prereg
