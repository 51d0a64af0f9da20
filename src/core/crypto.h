// Hashing and randomness, from OpenSSL.
#pragma once

#include <string>
#include <string_view>

namespace cortex {

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

// Unpadded base64url SHA-256 of `data` (RFC 7636's S256 code challenge).
std::string Sha256Base64Url(std::string_view data);

// `n` bytes from the OS CSPRNG, as lowercase hex (2n characters).
std::string RandomHex(size_t n);

// Whether `a` equals `b`, in time that depends only on their lengths (for secrets).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// Lowercase hex HMAC-SHA-256 of `data` under `key`.
std::string HmacSha256Hex(const std::string& key, const std::string& data);

// Standard base64 decoding; returns false on malformed input.
bool Base64Decode(std::string_view in, std::string* out);

}  // namespace cortex
