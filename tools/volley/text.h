// tools/volley/text.h — small text helpers shared by the commands.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace volley::cli {

// Thousands separators: 2708 -> "2,708", -1234567 -> "-1,234,567".
inline std::string grouped(int64_t value) {
  const std::string digits = std::to_string(value < 0 ? -value : value);
  std::string text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text.push_back(',');
    text.push_back(digits[i]);
  }
  return value < 0 ? "-" + text : text;
}

// A fraction as a percentage with one decimal: 0.1234 -> "12.3%".
inline std::string percent(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }

}  // namespace volley::cli
