#include "core/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>
#include <vector>

namespace cortex {
namespace {

std::string Hex(const unsigned char* p, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[p[i] >> 4];
    out[2 * i + 1] = kHex[p[i] & 15];
  }
  return out;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  // Fetched once: an implicit fetch (EVP_sha256()) looks the algorithm up on every call,
  // which costs more than hashing a token.
  static EVP_MD* const kSha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (kSha256 == nullptr || EVP_Digest(data.data(), data.size(), md, &len, kSha256, nullptr) != 1) {
    throw std::runtime_error("EVP_Digest failed");
  }
  return Hex(md, len);
}

std::string Sha256Base64Url(std::string_view data) {
  static EVP_MD* const kSha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (kSha256 == nullptr || EVP_Digest(data.data(), data.size(), md, &len, kSha256, nullptr) != 1) {
    throw std::runtime_error("EVP_Digest failed");
  }
  unsigned char b64[2 * EVP_MAX_MD_SIZE];
  int n = EVP_EncodeBlock(b64, md, static_cast<int>(len));
  std::string out(reinterpret_cast<char*>(b64), static_cast<size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

std::string RandomHex(size_t n) {
  std::vector<unsigned char> buf(n);
  if (RAND_bytes(buf.data(), static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes");
  return Hex(buf.data(), n);
}

bool Base64Decode(std::string_view in, std::string* out) {
  if (in.size() % 4 != 0) return false;
  std::vector<unsigned char> buf(in.size() / 4 * 3 + 1);
  int n = EVP_DecodeBlock(buf.data(), reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  if (n < 0) return false;
  size_t pad = 0;
  if (!in.empty() && in.back() == '=') ++pad;
  if (in.size() > 1 && in[in.size() - 2] == '=') ++pad;
  out->assign(reinterpret_cast<char*>(buf.data()), static_cast<size_t>(n) - pad);
  return true;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string HmacSha256Hex(const std::string& key, const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), md, &len);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

}  // namespace cortex
