// volley/graph/json_checker.h — reads manifest JSON (volley.json, partitions.json) with precise
// errors.
//
//   JsonChecker check(path);
//   const auto json = check.parse(text);                     // a JSON object, or IoError
//   const int64_t nodes = check.integer(json, "num_nodes");  // a non-negative integer, or IoError
//
// Every failure is an IoError "PATH: FIELD: expected X, found Y" (PATH the manifest's path given
// at construction, FIELD the dotted key), the format of all Volley manifest errors. Used by the
// dataset reader (graph) and the partitioned-dataset reader (partition). Stateless apart from the
// path: const methods may be called from any thread.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "volley/core/error.h"

namespace volley {

class JsonChecker {
 public:
  using Json = nlohmann::ordered_json;

  explicit JsonChecker(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, std::string_view expected,
                         std::string_view found) const {
    throw IoError(fmt::format("{}: {}: expected {}, found {}", path_, field.empty() ? "top" : field,
                              expected, found));
  }
  const Json& require(const Json& object, const std::string& key,
                      const std::string& where = "") const {
    if (!object.is_object() || !object.contains(key)) {
      fail(where + key, "a value (it is required)", "none");
    }
    return object[key];
  }
  int64_t integer(const Json& object, const std::string& key, const std::string& where = "") const {
    const Json& value = require(object, key, where);
    if (!value.is_number_integer() || value.get<int64_t>() < 0) {
      fail(where + key, "a non-negative integer", brief(value));
    }
    return value.get<int64_t>();
  }
  std::string string(const Json& object, const std::string& key,
                     const std::string& where = "") const {
    const Json& value = require(object, key, where);
    if (!value.is_string()) fail(where + key, "a string", brief(value));
    return value.get<std::string>();
  }
  uint32_t crc(const Json& object, const std::string& key, const std::string& where = "") const {
    const std::string text = string(object, key, where);
    uint32_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    if (text.size() != 8 || error != std::errc() || end != text.data() + 8) {
      fail(where + key, "8 hex digits", fmt::format("\"{}\"", text));
    }
    return value;
  }
  std::optional<double> optional_number(const Json& object, const std::string& key) const {
    if (!object.contains(key) || object[key].is_null()) return std::nullopt;
    if (!object[key].is_number()) fail("quality." + key, "a number or null", brief(object[key]));
    return object[key].get<double>();
  }
  // The deepest nesting of arrays and objects a manifest may have (Volley's manifests use 3).
  static constexpr int kMaxDepth = 64;

  Json parse(const std::string& text) const {
    check_depth(text);
    try {
      Json json = Json::parse(text);
      if (!json.is_object()) fail("", "a JSON object", brief(json));
      return json;
    } catch (const Json::exception& error) {
      // parse_error, and out_of_range for a number too large for a double (1E400).
      throw IoError(fmt::format("{}: not valid JSON: {}", path_, error.what()));
    }
  }
  const std::string& path() const { return path_; }

  // A value for an error message: its JSON text, cut to 200 bytes with "..." after.
  static std::string brief(const Json& value) {
    std::string text = value.dump(-1, ' ', true, Json::error_handler_t::replace);
    if (text.size() > 200) text = text.substr(0, 200) + "...";
    return text;
  }

  // Refuses text whose arrays and objects nest deeper than kMaxDepth, before nlohmann's parser
  // and dump (which recurse) can exhaust the stack. Brackets inside strings do not count.
  void check_depth(const std::string& text) const {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        if (++depth > kMaxDepth) {
          throw IoError(
              fmt::format("{}: not a Volley manifest: arrays and objects nest deeper "
                          "than {} levels (at byte {})",
                          path_, kMaxDepth, i));
        }
      } else if (c == ']' || c == '}') {
        --depth;
      }
    }
  }

 private:
  std::string path_;
};

}  // namespace volley
