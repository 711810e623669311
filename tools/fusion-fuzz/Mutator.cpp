//===- Mutator.cpp - structure-aware mutations of .mlir text --------------===//

#include "Mutator.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace fusion_fuzz {
namespace {

using Span = std::pair<size_t, size_t>; // [begin, end)

const char *const kDims[] = {"0", "1", "2", "3", "7", "8", "15", "16", "17", "31", "32",
                             "33", "64", "127", "128", "255", "256", "768", "1000", "1024",
                             "4096", "8192", "65536", "2147483648", "4294967296",
                             "1099511627776", "4611686018427387904", "?"};
const char *const kInts[] = {"0", "1", "-1", "2", "3", "7", "8", "16", "31", "32", "64",
                             "127", "128", "255", "256", "1024", "65535", "65536",
                             "2147483647", "2147483648", "-2147483648", "4294967296",
                             "1099511627776", "9223372036854775807",
                             "-9223372036854775808"};
const char *const kFloats[] = {"0.0", "-0.0", "1.0", "-1.0", "1.0e-45", "1.0e+30",
                               "-1.0e+30", "3.4e+38", "0x7FC00000", "0x7F800000",
                               "0xFF800000", "1.0e-05", "0.5"};
const char *const kElementTypes[] = {"bf16", "f16", "f32", "f64", "i1", "i8", "i16",
                                     "i32", "i64", "index", "f8E4M3FN", "tf32"};

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}

/// The dimension lists of `tensor<`, `memref<` and `vector<` types.
std::vector<Span> shapeDims(const std::string &text) {
  std::vector<Span> dims;
  for (const char *head : {"tensor<", "memref<", "vector<"}) {
    for (size_t at = text.find(head); at != std::string::npos; at = text.find(head, at + 1)) {
      size_t i = at + std::strlen(head);
      while (i < text.size()) {
        size_t b = i;
        if (text[i] == '?')
          ++i;
        else
          while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
            ++i;
        if (i == b || i >= text.size() || text[i] != 'x')
          break;
        dims.push_back({b, i});
        ++i;
      }
    }
  }
  return dims;
}

struct Tokens {
  std::vector<Span> idents, ints, floats, values;
};

Tokens tokenize(const std::string &text, const std::vector<Span> &dims) {
  Tokens t;
  std::vector<size_t> dimStarts;
  for (const Span &d : dims)
    dimStarts.push_back(d.first);
  std::sort(dimStarts.begin(), dimStarts.end());
  auto isDim = [&](size_t b) {
    return std::binary_search(dimStarts.begin(), dimStarts.end(), b);
  };
  size_t i = 0, n = text.size();
  while (i < n) {
    char c = text[i];
    if (c == '/' && i + 1 < n && text[i + 1] == '/') { // a comment
      while (i < n && text[i] != '\n')
        ++i;
    } else if (c == '"') { // a string
      for (++i; i < n && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      ++i;
    } else if (c == '%' || c == '^' || c == '@') {
      size_t b = i++;
      while (i < n && (isIdentChar(text[i]) || text[i] == '#'))
        ++i;
      if (c == '%')
        t.values.push_back({b, i});
    } else if (isIdentStart(c)) {
      size_t b = i;
      while (i < n && isIdentChar(text[i]))
        ++i;
      t.idents.push_back({b, i});
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '-' && i + 1 < n && std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      size_t b = i++;
      bool isFloat = false;
      if (text.compare(b, 2, "0x") == 0) {
        i = b + 2;
        while (i < n && std::isxdigit(static_cast<unsigned char>(text[i])))
          ++i;
      } else {
        while (i < n && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
                         text[i] == 'e' || text[i] == 'E' ||
                         ((text[i] == '+' || text[i] == '-') &&
                          (text[i - 1] == 'e' || text[i - 1] == 'E')))) {
          isFloat |= text[i] == '.' || text[i] == 'e' || text[i] == 'E';
          ++i;
        }
      }
      if (isDim(b))
        continue;
      (isFloat ? t.floats : t.ints).push_back({b, i});
    } else {
      ++i;
    }
  }
  return t;
}

/// Occurrences of element type keywords, on their own or closing a shape.
std::vector<Span> elementTypes(const std::string &text) {
  std::vector<Span> sites;
  for (const char *type : kElementTypes) {
    size_t len = std::strlen(type);
    for (size_t at = text.find(type); at != std::string::npos; at = text.find(type, at + 1)) {
      bool startOk = at == 0 || !isIdentChar(text[at - 1]) ||
                     (text[at - 1] == 'x' && at >= 2 &&
                      (std::isdigit(static_cast<unsigned char>(text[at - 2])) || text[at - 2] == '?'));
      bool endOk = at + len >= text.size() || !isIdentChar(text[at + len]);
      if (startOk && endOk)
        sites.push_back({at, at + len});
    }
  }
  return sites;
}

std::vector<Span> lines(const std::string &text) {
  std::vector<Span> out;
  size_t b = 0;
  while (b < text.size()) {
    size_t e = text.find('\n', b);
    e = e == std::string::npos ? text.size() : e + 1;
    out.push_back({b, e});
    b = e;
  }
  return out;
}

template <size_t N> const char *pick(const char *const (&values)[N], std::mt19937 &rng) {
  return values[rng() % N];
}

/// Replaces `site`, or with `everyEqual` every site with the same text.
void replace(std::string &text, const std::vector<Span> &sites, const Span &site,
             const std::string &with, bool everyEqual) {
  std::string old = text.substr(site.first, site.second - site.first);
  std::vector<Span> targets;
  for (const Span &s : sites)
    if (everyEqual ? text.compare(s.first, s.second - s.first, old) == 0 && s.second - s.first == old.size()
                   : s == site)
      targets.push_back(s);
  std::sort(targets.begin(), targets.end());
  for (auto it = targets.rbegin(); it != targets.rend(); ++it)
    text.replace(it->first, it->second - it->first, with);
}

} // namespace

bool mutateText(std::string &text, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Span> dims = shapeDims(text);
  Tokens tokens = tokenize(text, dims);
  auto any = [&](const std::vector<Span> &v) -> const Span & { return v[rng() % v.size()]; };
  switch (rng() % 9) {
  case 0: { // a shape dimension
    if (dims.empty())
      return false;
    replace(text, dims, any(dims), pick(kDims, rng), rng() % 2);
    return true;
  }
  case 1: { // an element type
    std::vector<Span> types = elementTypes(text);
    if (types.empty())
      return false;
    replace(text, types, any(types), pick(kElementTypes, rng), rng() % 2);
    return true;
  }
  case 2: { // an integer literal
    if (tokens.ints.empty())
      return false;
    replace(text, tokens.ints, any(tokens.ints), pick(kInts, rng), false);
    return true;
  }
  case 3: { // a float literal
    if (tokens.floats.empty())
      return false;
    replace(text, tokens.floats, any(tokens.floats), pick(kFloats, rng), false);
    return true;
  }
  case 4: { // a keyword for another one of the text
    if (tokens.idents.size() < 2)
      return false;
    const Span &from = any(tokens.idents), &to = any(tokens.idents);
    replace(text, tokens.idents, from, text.substr(to.first, to.second - to.first), false);
    return true;
  }
  case 5: { // an SSA operand for another one
    if (tokens.values.size() < 2)
      return false;
    const Span &from = any(tokens.values), &to = any(tokens.values);
    replace(text, tokens.values, from, text.substr(to.first, to.second - to.first), false);
    return true;
  }
  case 6: { // a line dropped, duplicated, or swapped with the next
    std::vector<Span> ls = lines(text);
    if (ls.size() < 2)
      return false;
    size_t k = rng() % (ls.size() - 1);
    Span a = ls[k], b = ls[k + 1];
    std::string la = text.substr(a.first, a.second - a.first);
    std::string lb = text.substr(b.first, b.second - b.first);
    switch (rng() % 3) {
    case 0: text.erase(a.first, a.second - a.first); break;
    case 1: text.insert(a.first, la); break;
    default: text.replace(a.first, b.second - a.first, lb + la); break;
    }
    return true;
  }
  case 7: { // a run of characters dropped
    if (text.size() < 2)
      return false;
    size_t b = rng() % text.size();
    size_t len = 1 + rng() % std::min<size_t>(16, text.size() - b);
    text.erase(b, len);
    return true;
  }
  default: { // truncated
    if (text.empty())
      return false;
    text.resize(rng() % text.size());
    return true;
  }
  }
}

size_t mutate(uint8_t *data, size_t size, size_t maxSize, unsigned seed) {
  std::mt19937 rng(seed);
  if (rng() % 8 != 0) {
    std::string text(reinterpret_cast<const char *>(data), size);
    for (int attempt = 0; attempt < 4; ++attempt) {
      std::string mutant = text;
      if (mutateText(mutant, rng()) && mutant.size() <= maxSize && mutant != text) {
        std::memcpy(data, mutant.data(), mutant.size());
        return mutant.size();
      }
    }
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}

} // namespace fusion_fuzz
