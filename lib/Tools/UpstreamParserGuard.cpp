//===- UpstreamParserGuard.cpp - inputs libMLIR's parsers crash on --------===//
//
// A scan of the text, not a parse: for each linalg.broadcast / .transpose in
// the custom form, its first `dimensions` / `permutation` keyword at
// nesting depth 0 followed by `=` must be followed by what the attribute
// parser accepts, `[` integers that fit in 64 bits, comma-separated, `]`.
// Anything else is what the upstream parser reports and then crashes on.
// The scan of an op ends at its next top-level `%`, `"` or `}` (the next op,
// or the end of the region): a form that ends before the keyword fails in
// the upstream parser before the attribute, which it survives.
//
//===----------------------------------------------------------------------===//

#include "fusion/Tools/UpstreamParserGuard.h"

#include "llvm/ADT/APInt.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::fusion;
using llvm::StringRef;

/// A character of an MLIR bare identifier after its first (letters,
/// digits, `_`, `$`, `.`): op keywords, attribute names, type alias names.
static bool isBareIdChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
}

/// The text inside the balanced parentheses opening at `open`, or "".
static StringRef group(StringRef text, size_t open) {
  if (open >= text.size() || text[open] != '(')
    return "";
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '(')
      ++depth;
    else if (text[i] == ')' && --depth == 0)
      return text.slice(open + 1, i);
  }
  return "";
}

namespace {
class Scanner {
public:
  Scanner(StringRef text, size_t pos) : text(text), pos(pos) {}

  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[pos]; }

  /// Skips white space and `//` comments.
  void skipSpace() {
    while (!atEnd()) {
      if (llvm::isSpace(peek())) {
        ++pos;
      } else if (text.substr(pos).starts_with("//")) {
        size_t eol = text.find('\n', pos);
        pos = eol == StringRef::npos ? text.size() : eol + 1;
      } else {
        return;
      }
    }
  }

  /// Skips a string literal starting at `pos` (on its quote).
  void skipString() {
    for (++pos; !atEnd(); ++pos) {
      if (peek() == '\\') {
        ++pos;
      } else if (peek() == '"') {
        ++pos;
        return;
      }
    }
  }

  /// An integer the attribute parser takes as a 64-bit value: an optional
  /// '-', then decimal digits or 0x and hex digits.
  bool integer() {
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++pos;
    }
    size_t start = pos;
    unsigned radix = 10;
    if (text.substr(pos).starts_with("0x")) {
      radix = 16;
      pos += 2;
      start = pos;
    }
    while (!atEnd() && (radix == 16 ? llvm::isHexDigit(peek()) : llvm::isDigit(peek())))
      ++pos;
    if (pos == start)
      return false;
    llvm::APInt value;
    if (text.slice(start, pos).getAsInteger(radix, value))
      return false;
    // The magnitude must fit: INT64_MAX, or 2^63 when negative.
    unsigned bits = value.getActiveBits();
    if (bits > 64)
      return false;
    uint64_t magnitude = value.getZExtValue();
    return negative ? magnitude <= (uint64_t(1) << 63)
                    : magnitude <= uint64_t(INT64_MAX);
  }

  /// After white space, `keyword` and a parenthesized group: the group's
  /// text, the scan past it; or "" (the scan where it failed).
  StringRef keywordGroup(StringRef keyword) {
    skipSpace();
    if (!text.substr(pos).starts_with(keyword))
      return "";
    pos += keyword.size();
    skipSpace();
    StringRef inside = group(text, pos);
    if (!inside.empty())
      pos += inside.size() + 2;
    return inside;
  }

  /// `[` integers `]` (possibly empty).
  bool integerList() {
    if (peek() != '[')
      return false;
    ++pos;
    skipSpace();
    if (peek() == ']')
      return true;
    while (true) {
      skipSpace();
      if (!integer())
        return false;
      skipSpace();
      if (peek() == ']')
        return true;
      if (peek() != ',')
        return false;
      ++pos;
    }
  }

  StringRef text;
  size_t pos;
};
} // namespace

/// The hazard of the op whose name ends at `pos`, if any.
static std::optional<UpstreamParserHazard>
checkOp(StringRef text, size_t pos, StringRef op, StringRef keyword) {
  Scanner s(text, pos);
  int depth = 0;
  while (!s.atEnd()) {
    char c = s.peek();
    if (c == '/' && text.substr(s.pos).starts_with("//")) {
      s.skipSpace();
      continue;
    }
    if (c == '"') {
      if (depth == 0)
        return std::nullopt;
      s.skipString();
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0)
        return std::nullopt;
      --depth;
    } else if (depth == 0 && c == '%') {
      return std::nullopt;
    } else if (depth == 0 && (llvm::isAlpha(c) || c == '_')) {
      size_t start = s.pos;
      while (!s.atEnd() && isBareIdChar(s.peek()))
        ++s.pos;
      StringRef word = text.slice(start, s.pos);
      if (word != keyword)
        continue;
      s.skipSpace();
      if (s.peek() != '=')
        return std::nullopt; // fails before the attribute: survived
      ++s.pos;
      s.skipSpace();
      size_t listStart = s.pos;
      if (s.integerList())
        return std::nullopt;
      return UpstreamParserHazard{
          listStart,
          (op + "'s '" + keyword +
           "' must be a bracketed list of 64-bit integers, e.g. " + keyword +
           " = [0, 1]; refused before parsing, because libMLIR 22's parser "
           "crashes on a malformed one (an upstream bug)")
              .str()};
    }
    ++s.pos;
  }
  return std::nullopt;
}

/// Whether the types after the last ':' of an ins(...)/outs(...) group use
/// `index` elements (`...xindex>`, `<index>`).
static bool usesIndex(StringRef operands) {
  StringRef types = operands.substr(operands.rfind(':') + 1);
  return types.contains("xindex>") || types.contains("<index>");
}

/// A linalg named op in the custom form whose ins and outs mix `index`
/// elements with others: libMLIR 22's region builders of some named ops
/// (linalg.batch_matmul, for one) fail to cast between them and crash.
static std::optional<UpstreamParserHazard> checkNamedOpTypes(StringRef text) {
  for (size_t at = text.find("linalg."); at != StringRef::npos;
       at = text.find("linalg.", at + 7)) {
    if (at > 0 && (text[at - 1] == '"' || llvm::isAlnum(text[at - 1]) ||
                   text[at - 1] == '_' || text[at - 1] == '.'))
      continue;
    size_t end = at + 7;
    while (end < text.size() && (llvm::isAlnum(text[end]) || text[end] == '_'))
      ++end;
    StringRef name = text.slice(at, end);
    if (name == "linalg.generic" || name == "linalg.yield" || name == "linalg.index")
      continue;
    Scanner s(text, end);
    StringRef ins = s.keywordGroup("ins");
    StringRef outs = ins.empty() ? StringRef() : s.keywordGroup("outs");
    if (outs.empty() || usesIndex(ins) == usesIndex(outs))
      continue;
    return UpstreamParserHazard{
        at, (name + " mixes index elements with others between its ins and "
                    "outs; refused before parsing, because libMLIR 22's "
                    "region builders of linalg named ops crash on casts they "
                    "cannot make (an upstream bug)")
                .str()};
  }
  return std::nullopt;
}

/// tensor.from_elements in the custom form whose result type has 2^32
/// elements or more: the parser sizes its operand list by the type and
/// aborts in SmallVector's growth (LLVM ERROR) before it can say the
/// operands do not match.
static std::optional<UpstreamParserHazard> checkFromElements(StringRef text) {
  StringRef op = "tensor.from_elements";
  for (size_t at = text.find(op); at != StringRef::npos;
       at = text.find(op, at + op.size())) {
    if (at > 0 && text[at - 1] == '"')
      continue;
    StringRef line = text.substr(at).take_until([](char c) { return c == '\n'; });
    size_t type = line.find("tensor<");
    if (type == StringRef::npos)
      continue;
    StringRef dims = line.substr(type + 7);
    llvm::APInt count(128, 1);
    bool huge = false;
    while (!dims.empty() && llvm::isDigit(dims.front())) {
      StringRef digits = dims.take_while([](char c) { return llvm::isDigit(c); });
      llvm::APInt dim;
      if (digits.getAsInteger(10, dim) || dim.getActiveBits() > 64) {
        huge = true;
        break;
      }
      count = count * dim.zextOrTrunc(128);
      if (count.getActiveBits() > 64) {
        huge = true;
        break;
      }
      dims = dims.drop_front(digits.size());
      if (!dims.consume_front("x"))
        break;
    }
    if (huge || count.uge(llvm::APInt(128, 1).shl(32)))
      return UpstreamParserHazard{
          at + type, "tensor.from_elements with 2^32 or more elements; refused "
                     "before parsing, because libMLIR 22's parser sizes its "
                     "operand list by the type and aborts (an upstream bug)"};
  }
  return std::nullopt;
}

/// A dense array attribute of index elements, `array<index>` or
/// `array<index: 1, 2>` (also through a type alias `!t = index`, and with
/// white space or comments inside): libMLIR 22's parser takes index for an
/// integer or float type and crashes asking its bit width (Debian's mlir-opt
/// dies the same way). Outside string literals and comments.
static std::optional<UpstreamParserHazard> checkIndexArrays(StringRef text) {
  if (!text.contains("array"))
    return std::nullopt;
  // Type aliases that stand for index: `!name = index` or `!name = !other`
  // of one, at the start of a line.
  llvm::StringSet<> indexAliases;
  for (bool grew = true; grew;) {
    grew = false;
    for (StringRef rest = text; !rest.empty();) {
      auto [line, next] = rest.split('\n');
      rest = next;
      line = line.split("//").first.trim();
      if (!line.consume_front("!"))
        continue;
      auto [name, type] = line.split('=');
      name = name.trim();
      type = type.trim();
      bool index = type == "index" ||
                   (type.consume_front("!") && indexAliases.contains(type));
      if (!name.empty() && index && indexAliases.insert(name).second)
        grew = true;
    }
  }
  Scanner s(text, 0);
  while (!s.atEnd()) {
    char c = s.peek();
    if (c == '"') {
      s.skipString();
      continue;
    }
    if (c == '/' && text.substr(s.pos).starts_with("//")) {
      s.skipSpace();
      continue;
    }
    if (!text.substr(s.pos).starts_with("array") ||
        (s.pos > 0 && isBareIdChar(text[s.pos - 1]))) {
      ++s.pos;
      continue;
    }
    s.pos += 5;
    s.skipSpace();
    if (s.peek() != '<')
      continue;
    ++s.pos;
    s.skipSpace();
    size_t elementType = s.pos;
    StringRef rest = text.substr(s.pos);
    size_t length = 0;
    if (rest.starts_with("index")) {
      length = 5;
    } else if (rest.starts_with("!")) {
      size_t end = 1;
      while (end < rest.size() && isBareIdChar(rest[end]))
        ++end;
      if (indexAliases.contains(rest.slice(1, end)))
        length = end;
    }
    if (length && (length == rest.size() || !isBareIdChar(rest[length])))
      return UpstreamParserHazard{
          elementType,
          "a dense array of index elements (array<index: ...>) is refused "
          "before parsing, because libMLIR 22's parser crashes on one (an "
          "upstream bug); dense arrays take integer or float elements, e.g. "
          "array<i64: 0, 1>"};
  }
  return std::nullopt;
}

std::optional<UpstreamParserHazard>
mlir::fusion::findUpstreamParserHazard(StringRef text) {
  if (auto hazard = checkIndexArrays(text))
    return hazard;
  if (auto hazard = checkNamedOpTypes(text))
    return hazard;
  if (auto hazard = checkFromElements(text))
    return hazard;
  static const std::pair<StringRef, StringRef> ops[] = {
      {"linalg.broadcast", "dimensions"}, {"linalg.transpose", "permutation"}};
  for (auto [op, keyword] : ops) {
    for (size_t at = text.find(op); at != StringRef::npos;
         at = text.find(op, at + op.size())) {
      size_t end = at + op.size();
      // The custom form: not quoted (the generic form parses the attribute
      // generically), not part of a longer name.
      if (at > 0 && (text[at - 1] == '"' || llvm::isAlnum(text[at - 1]) ||
                     text[at - 1] == '_' || text[at - 1] == '.'))
        continue;
      if (end < text.size() && (llvm::isAlnum(text[end]) || text[end] == '_' ||
                                text[end] == '.' || text[end] == '"'))
        continue;
      if (auto hazard = checkOp(text, end, op, keyword))
        return hazard;
    }
  }
  return std::nullopt;
}
