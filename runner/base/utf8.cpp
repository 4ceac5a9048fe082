// The one UTF-8 validator.
#include "base/utf8.hpp"

namespace prereg {

int utf8_sequence(std::string_view s, std::size_t pos, char32_t &cp) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(pos);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  int len = 0;
  unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0)
      lo = 0xA0; // overlong
    if (b0 == 0xED)
      hi = 0x9F; // UTF-16 surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0)
      lo = 0x90; // overlong
    if (b0 == 0xF4)
      hi = 0x8F; // above U+10FFFF
  } else {
    return 0;
  }
  if (pos + static_cast<std::size_t>(len) > s.size())
    return 0;
  for (int i = 1; i < len; ++i) {
    const unsigned char b = byte(pos + static_cast<std::size_t>(i));
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
      return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  return len;
}

std::size_t invalid_utf8_offset(std::string_view text) {
  std::size_t i = 0;
  char32_t cp = 0;
  while (i < text.size()) {
    const int len = utf8_sequence(text, i, cp);
    if (len == 0)
      return i;
    i += static_cast<std::size_t>(len);
  }
  return std::string_view::npos;
}

} // namespace prereg
