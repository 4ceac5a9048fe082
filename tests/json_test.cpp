// Tests of the strict JSON parser and the RFC 8785 canonicaliser, against node-made vectors.
#include "base/json.hpp"
#include "prereg/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using prereg::canonical_json;
using prereg::exit_code;
using prereg::format_number;
using prereg::json;
using prereg::parse_json_strict;

namespace {

const std::filesystem::path data_dir = std::filesystem::path(PREREG_TEST_DATA) / "json";

std::string slurp(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Checks that parsing `text` fails with exit 2 at `where` and a message containing `what`.
void check_rejected(const std::string &text, const std::string &where, const std::string &what) {
  CAPTURE(text);
  try {
    (void)parse_json_strict(text, "t.json");
    FAIL("accepted invalid JSON");
  } catch (const prereg::error &e) {
    CHECK(e.code() == exit_code::invalid);
    CHECK(e.where() == where);
    CHECK_MESSAGE(std::string(e.what()).find(what) != std::string::npos, e.what());
  }
}

/// Checks that `f` throws `prereg::error` with exit 2.
template <class F> void check_invalid(F &&f) {
  try {
    f();
    FAIL("no error thrown");
  } catch (const prereg::error &e) {
    CHECK(e.code() == exit_code::invalid);
  }
}

} // namespace

TEST_CASE("format_number lays out shortest digits as ECMAScript Number::toString") {
  CHECK(format_number(1e21) == "1e+21");
  CHECK(format_number(1e20) == "100000000000000000000");
  CHECK(format_number(1e-7) == "1e-7");
  CHECK(format_number(123e-20) == "1.23e-18");
  CHECK(format_number(56.0) == "56");
  CHECK(format_number(0.000001) == "0.000001");
  CHECK(format_number(0.0000015) == "0.0000015");
  CHECK(format_number(5e-324) == "5e-324");
  CHECK(format_number(1.7976931348623157e308) == "1.7976931348623157e+308");
  CHECK(format_number(-1.5) == "-1.5");
  CHECK(format_number(0.1 + 0.2) == "0.30000000000000004");
  CHECK(format_number(123456.789) == "123456.789");
  CHECK(format_number(0.0) == "0");
  CHECK(format_number(-0.0) == "0");
  check_invalid([] { (void)format_number(std::numeric_limits<double>::quiet_NaN()); });
  check_invalid([] { (void)format_number(std::numeric_limits<double>::infinity()); });
  check_invalid([] { (void)format_number(-std::numeric_limits<double>::infinity()); });
}

TEST_CASE("format_number matches node's String(x) for every vector in numbers.txt") {
  std::istringstream lines(slurp(data_dir / "numbers.txt"));
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    CAPTURE(line);
    REQUIRE(line.size() > 17);
    REQUIRE(line[16] == ' ');
    const std::uint64_t bits = std::stoull(line.substr(0, 16), nullptr, 16);
    const std::string expected = line.substr(17);
    const double value = std::bit_cast<double>(bits);
    CHECK(format_number(value) == expected);
    // The text reads back as the same double (shortest digits still round-trip).
    const json back = parse_json_strict(expected, "numbers.txt");
    REQUIRE(back.is_number());
    CHECK(back.get<double>() == value);
    ++count;
  }
  CHECK(count >= 300);
}

TEST_CASE("RFC 8785 Appendix B: NaN and Infinity rows are errors") {
  check_invalid([] { (void)format_number(std::bit_cast<double>(0x7fffffffffffffffULL)); });
  check_invalid([] { (void)format_number(std::bit_cast<double>(0x7ff0000000000000ULL)); });
}

TEST_CASE("canonical_json reproduces the node-made pairs byte for byte") {
  int pairs = 0;
  std::vector<std::filesystem::path> inputs;
  for (const auto &entry : std::filesystem::directory_iterator(data_dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 8 && name.ends_with(".in.json"))
      inputs.push_back(entry.path());
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto &in : inputs) {
    const std::string name = in.filename().string();
    const std::string stem = name.substr(0, name.size() - 8);
    CAPTURE(stem);
    const json value = parse_json_strict(slurp(in), name);
    const std::string canonical = canonical_json(value);
    CHECK(canonical == slurp(data_dir / (stem + ".out.json")));
    // Canonical bytes are valid strict JSON and a fixed point of parse + canonicalise.
    CHECK(canonical_json(parse_json_strict(canonical, stem)) == canonical);
    ++pairs;
  }
  CHECK(pairs >= 8);
}

TEST_CASE("RFC 8785 section 3.2.3: keys sort by UTF-16 code units, not UTF-8 bytes") {
  // U+E000 is EE 80 80 in UTF-8 and E000 in UTF-16; U+10000 is F0 90 80 80 in UTF-8 and
  // D800 DC00 in UTF-16: byte order puts U+E000 first, code-unit order puts U+10000 first.
  json value = json::object();
  value["\xEE\x80\x80"] = 1;
  value["\xF0\x90\x80\x80"] = 2;
  value["\xEF\xBF\xBF"] = 3;     // U+FFFF
  value["\xF0\x9F\x98\x80"] = 4; // U+1F600
  CHECK(value.dump() == "{\"\xEE\x80\x80\":1,\"\xEF\xBF\xBF\":3,\"\xF0\x90\x80\x80\":2,"
                        "\"\xF0\x9F\x98\x80\":4}");
  CHECK(canonical_json(value) == "{\"\xF0\x90\x80\x80\":2,\"\xF0\x9F\x98\x80\":4,"
                                 "\"\xEE\x80\x80\":1,\"\xEF\xBF\xBF\":3}");
}

TEST_CASE("canonical_json escapes strings minimally") {
  std::string all_controls;
  for (int c = 0; c < 0x20; ++c)
    all_controls += static_cast<char>(c);
  CHECK(canonical_json(all_controls) ==
        "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r"
        "\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019"
        "\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\"");
  CHECK(canonical_json("\"\\/") == "\"\\\"\\\\/\"");
  // DEL, U+2028, U+2029 and other non-ASCII stay raw UTF-8.
  CHECK(canonical_json("\x7f\xE2\x80\xA8\xE2\x80\xA9\xC3\xA9") ==
        "\"\x7f\xE2\x80\xA8\xE2\x80\xA9\xC3\xA9\"");
  CHECK(canonical_json(json::object({{"\n", "\t"}})) == "{\"\\n\":\"\\t\"}");
}

TEST_CASE("canonical_json prints every number as the double it converts to") {
  CHECK(canonical_json(json(std::uint64_t{9007199254740993ULL})) == "9007199254740992");
  CHECK(canonical_json(json(std::int64_t{-9007199254740993LL})) == "-9007199254740992");
  CHECK(canonical_json(json(std::numeric_limits<std::uint64_t>::max())) == "18446744073709552000");
  CHECK(canonical_json(json(std::numeric_limits<std::int64_t>::min())) == "-9223372036854776000");
  CHECK(canonical_json(json(std::int64_t{0})) == "0");
  CHECK(canonical_json(json(-0.0)) == "0");
  CHECK(canonical_json(json(4.5)) == "4.5");
  CHECK(canonical_json(json(1e30)) == "1e+30");
  CHECK(canonical_json(json::array({1, 2.5, nullptr, true, false, "x"})) ==
        "[1,2.5,null,true,false,\"x\"]");
}

TEST_CASE("canonical_json rejects what has no canonical form") {
  SUBCASE("NaN and Infinity") {
    check_invalid([] { (void)canonical_json(json(std::numeric_limits<double>::quiet_NaN())); });
    check_invalid([] {
      (void)canonical_json(json::array({1, -std::numeric_limits<double>::infinity()}));
    });
  }
  SUBCASE("invalid UTF-8 in a value") {
    check_invalid([] { (void)canonical_json(json("ok\xC0\x80")); });
    check_invalid([] { (void)canonical_json(json("\xED\xA0\x80")); });
    check_invalid([] { (void)canonical_json(json("\xE2\x82")); });
    check_invalid([] { (void)canonical_json(json("\xF4\x90\x80\x80")); });
  }
  SUBCASE("invalid UTF-8 in a key") {
    check_invalid([] { (void)canonical_json(json::object({{"a\xFF", 1}})); });
    check_invalid([] { (void)canonical_json(json::object({{"\x80", 1}})); });
  }
  SUBCASE("binary values") {
    check_invalid([] { (void)canonical_json(json::binary({1, 2, 3})); });
  }
  SUBCASE("nesting deeper than the parser accepts") {
    json deep = json::array();
    for (int i = 1; i < 256; ++i)
      deep = json::array({deep});
    CHECK(canonical_json(deep) == std::string(256, '[') + std::string(256, ']'));
    json deeper = json::array({deep});
    check_invalid([&] { (void)canonical_json(deeper); });
  }
}

TEST_CASE("parse_json_strict builds nlohmann values") {
  const json v = parse_json_strict(
      R"({"a": [1, -2, 1.5, "s\u00e9\ud83d\ude00", true, false, null], "b": {}})", "t.json");
  CHECK(v["a"][0].is_number_unsigned());
  CHECK(v["a"][0] == 1);
  CHECK(v["a"][1].is_number_integer());
  CHECK(v["a"][1] == -2);
  CHECK(v["a"][2].is_number_float());
  CHECK(v["a"][3] == "s\xC3\xA9\xF0\x9F\x98\x80");
  CHECK(v["a"][4] == true);
  CHECK(v["a"][6].is_null());
  CHECK(v["b"].is_object());

  SUBCASE("integers stay integers while they fit in int64/uint64") {
    const json n = parse_json_strict("[9223372036854775807, -9223372036854775808, "
                                     "18446744073709551615, 18446744073709551616, "
                                     "-9223372036854775809, -0, 1.0, 1e2]",
                                     "t.json");
    CHECK(n[0].is_number_unsigned());
    CHECK(n[0].get<std::uint64_t>() == 9223372036854775807ULL);
    CHECK(n[1].is_number_integer());
    CHECK(n[1].get<std::int64_t>() == std::numeric_limits<std::int64_t>::min());
    CHECK(n[2].is_number_unsigned());
    CHECK(n[2].get<std::uint64_t>() == std::numeric_limits<std::uint64_t>::max());
    CHECK(n[3].is_number_float());
    CHECK(n[3].get<double>() == 18446744073709551616.0);
    CHECK(n[4].is_number_float());
    CHECK(n[5].is_number_integer());
    CHECK(n[5].get<std::int64_t>() == 0);
    CHECK(n[6].is_number_float());
    CHECK(n[7].is_number_float());
    CHECK(n[7].get<double>() == 100.0);
  }
  SUBCASE("underflow rounds to zero (as JSON.parse does); the largest double is accepted") {
    const json n = parse_json_strict("[1e-400, -1e-400, 0.0000001e-330, 2e-324, 3e-324, "
                                     "1.7976931348623158e308, 0e999999999999]",
                                     "t.json");
    CHECK(n[0].get<double>() == 0.0);
    CHECK_FALSE(std::signbit(n[0].get<double>()));
    CHECK(n[1].get<double>() == 0.0);
    CHECK(std::signbit(n[1].get<double>()));
    CHECK(n[2].get<double>() == 0.0);
    CHECK(n[3].get<double>() == 0.0);
    CHECK(n[4].get<double>() == 5e-324);
    CHECK(n[5].get<double>() == std::numeric_limits<double>::max());
    CHECK(n[6].get<double>() == 0.0);
    CHECK(canonical_json(n) == "[0,0,0,0,5e-324,1.7976931348623157e+308,0]");
  }
  SUBCASE("escapes, noncharacters and NUL are valid string content") {
    CHECK(parse_json_strict(R"("\u0000\"\\\/\b\f\n\r\t\uFFFF\uD834\uDD1E")", "t.json") ==
          std::string("\0\"\\/\b\f\n\r\t\xEF\xBF\xBF\xF0\x9D\x84\x9E", 16));
  }
  SUBCASE("whitespace around the value is fine") {
    CHECK(parse_json_strict(" \t\r\n 7 \n\t\r ", "t.json") == 7);
  }
  SUBCASE("nesting of exactly 256 levels is accepted") {
    const json a = parse_json_strict(std::string(256, '[') + std::string(256, ']'), "t.json");
    CHECK(canonical_json(a) == std::string(256, '[') + std::string(256, ']'));
    std::string objects;
    for (int i = 0; i < 256; ++i)
      objects += "{\"a\":";
    objects += "0" + std::string(256, '}');
    CHECK(canonical_json(parse_json_strict(objects, "t.json")) == objects);
  }
}

TEST_CASE("parse_json_strict rejects with exit 2 at file:line:column") {
  SUBCASE("empty input and a byte order mark") {
    check_rejected("", "t.json:1:1", "empty input");
    check_rejected("  \n  ", "t.json:2:3", "empty input");
    check_rejected("\xEF\xBB\xBF{}", "t.json:1:1", "byte order mark");
  }
  SUBCASE("duplicate keys, compared after unescaping") {
    check_rejected("{\"a\": 1,\n \"a\": 2}", "t.json:2:2", "duplicate object key");
    check_rejected(R"({"a":1,"\u0061":2})", "t.json:1:8", "duplicate object key");
    check_rejected(R"({"x":{"k":1,"j":2,"k":3}})", "t.json:1:19", "duplicate object key");
  }
  SUBCASE("lone surrogates") {
    check_rejected(R"(["\ud800"])", "t.json:1:3", "lone high surrogate");
    check_rejected(R"("\udc00x")", "t.json:1:2", "lone low surrogate");
    check_rejected(R"("ab\ud83d")", "t.json:1:4", "lone high surrogate");
    check_rejected(R"("\ud800\u0041")", "t.json:1:2", "lone high surrogate");
    check_rejected(R"("\ud800\ud800")", "t.json:1:2", "lone high surrogate");
    check_rejected(R"("\ud83d\ude00\ude00")", "t.json:1:14", "lone low surrogate");
  }
  SUBCASE("invalid UTF-8 in strings") {
    check_rejected("\"\xC0\x80\"", "t.json:1:2", "invalid UTF-8");         // overlong 2-byte
    check_rejected("\"\xC1\xBF\"", "t.json:1:2", "invalid UTF-8");         // overlong 2-byte
    check_rejected("\"a\xE0\x80\xAF\"", "t.json:1:3", "invalid UTF-8");    // overlong 3-byte
    check_rejected("\"\xF0\x80\x80\xAF\"", "t.json:1:2", "invalid UTF-8"); // overlong 4-byte
    check_rejected("\"\xED\xA0\x80\"", "t.json:1:2", "invalid UTF-8");     // U+D800 encoded
    check_rejected("\"\xED\xBF\xBF\"", "t.json:1:2", "invalid UTF-8");     // U+DFFF encoded
    check_rejected("\"\xF4\x90\x80\x80\"", "t.json:1:2", "invalid UTF-8"); // U+110000
    check_rejected("\"\xF5\x80\x80\x80\"", "t.json:1:2", "invalid UTF-8");
    check_rejected("\"\xE2\x82\"", "t.json:1:2", "invalid UTF-8"); // truncated
    check_rejected("\"\xE2\x82", "t.json:1:2", "invalid UTF-8");   // truncated at the end
    check_rejected("\"\x80\"", "t.json:1:2", "invalid UTF-8");     // lone continuation byte
    check_rejected("{\"k\xFF\": 1}", "t.json:1:4", "invalid UTF-8");
    check_rejected("[\n\"\xC3\xA9\xC3\"]", "t.json:2:4", "invalid UTF-8");
  }
  SUBCASE("NaN and Infinity") {
    check_rejected("NaN", "t.json:1:1", "NaN and Infinity");
    check_rejected("[Infinity]", "t.json:1:2", "NaN and Infinity");
    check_rejected("[1, -Infinity]", "t.json:1:5", "NaN and Infinity");
    check_rejected("nan", "t.json:1:2", "'null'");
  }
  SUBCASE("numbers that overflow a double") {
    check_rejected("1e400", "t.json:1:1", "outside the range of a double");
    check_rejected("[-1e400]", "t.json:1:2", "outside the range of a double");
    check_rejected("1.7976931348623159e308", "t.json:1:1", "outside the range of a double");
    check_rejected("0.00001e314", "t.json:1:1", "outside the range of a double");
    check_rejected("1" + std::string(400, '0'), "t.json:1:1", "outside the range of a double");
  }
  SUBCASE("number syntax") {
    check_rejected("01", "t.json:1:2", "leading zeros");
    check_rejected("-01", "t.json:1:3", "leading zeros");
    check_rejected("[0.5, 007]", "t.json:1:8", "leading zeros");
    check_rejected("1.", "t.json:1:3", "decimal point");
    check_rejected("1.e5", "t.json:1:3", "decimal point");
    check_rejected("1e", "t.json:1:3", "exponent");
    check_rejected("1e+", "t.json:1:4", "exponent");
    check_rejected("-", "t.json:1:2", "end of input");
    check_rejected("-a", "t.json:1:2", "'a'");
    check_rejected("+1", "t.json:1:1", "'+'");
    check_rejected(".5", "t.json:1:1", "'.'");
  }
  SUBCASE("trailing bytes after the value") {
    check_rejected("{} x", "t.json:1:4", "after the JSON value");
    check_rejected("1 2", "t.json:1:3", "after the JSON value");
    check_rejected("[]]", "t.json:1:3", "after the JSON value");
    check_rejected("{}\n\n  ,", "t.json:3:3", "after the JSON value");
    check_rejected(std::string("1\0", 2), "t.json:1:2", "after the JSON value");
  }
  SUBCASE("raw control characters in strings") {
    check_rejected("\"a\tb\"", "t.json:1:3", "control character 0x09");
    check_rejected("\"\x1f\"", "t.json:1:2", "control character 0x1F");
    check_rejected("\"a\nb\"", "t.json:1:3", "control character 0x0A");
    check_rejected(std::string("\"\0\"", 3), "t.json:1:2", "control character 0x00");
  }
  SUBCASE("nesting deeper than 256 levels, without unbounded recursion") {
    check_rejected(std::string(257, '[') + std::string(257, ']'), "t.json:1:257", "nesting");
    check_rejected(std::string(100000, '['), "t.json:1:257", "nesting");
    std::string objects;
    for (int i = 0; i < 100000; ++i)
      objects += "{\"a\":";
    check_rejected(objects, "t.json:1:1281", "nesting");
  }
  SUBCASE("other syntax errors") {
    check_rejected("[1,]", "t.json:1:4", "expected a value");
    check_rejected("[1 2]", "t.json:1:4", "expected ',' or ']'");
    check_rejected("{,}", "t.json:1:2", "expected a string key");
    check_rejected("{\"a\" 1}", "t.json:1:6", "expected ':'");
    check_rejected("{\"a\":1,}", "t.json:1:8", "expected a string key");
    check_rejected("{\"a\":1", "t.json:1:7", "end of input");
    check_rejected("{'a':1}", "t.json:1:2", "expected a string key");
    check_rejected("\"abc", "t.json:1:5", "end of input in a string");
    check_rejected(R"("\x")", "t.json:1:3", "invalid escape");
    check_rejected(R"("\u12g4")", "t.json:1:6", "\\u escape");
    check_rejected("tru", "t.json:1:4", "'true'");
    check_rejected("trUe", "t.json:1:3", "'true'");
    check_rejected("[\n  true,\n  fals ]", "t.json:3:7", "'false'");
  }
  SUBCASE("errors carry the file name given") {
    try {
      (void)parse_json_strict("[1,,2]", "dir/report.json");
      FAIL("accepted");
    } catch (const prereg::error &e) {
      CHECK(e.code() == exit_code::invalid);
      CHECK(e.where() == "dir/report.json:1:4");
      CHECK(e.line().ends_with("(dir/report.json:1:4)"));
    }
  }
}

TEST_CASE("parse(canonical(x)) round-trips") {
  json x = json::object();
  x["name"] = "prereg \xE2\x82\xAC \xF0\x9F\x98\x80 \"q\" \\ \x01";
  x["ints"] = json::array({0, 1, -1, 9007199254740992LL, -9007199254740992LL});
  x["doubles"] = json::array({0.5, -2.25, 1e-7, 1e21, 5e-324, 1.7976931348623157e308, 0.1});
  x["nested"] = json::object({{"\xEF\xAC\xB3", json::array({json::object(), json::array()})},
                              {"\xF0\x9F\x98\x80", nullptr},
                              {"", false}});
  const std::string bytes = canonical_json(x);
  const json back = parse_json_strict(bytes, "canonical");
  CHECK(back == x);
  CHECK(canonical_json(back) == bytes);
  CHECK(bytes.find('\n') == std::string::npos);
}
