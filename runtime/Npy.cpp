//===- Npy.cpp - NumPy .npy files for attnc-run and the tests -------------===//
//
// The header is a Python dict literal; rather than a general literal parser we
// accept exactly what NumPy writes and documents: string keys `descr`,
// `fortran_order` and `shape` (each once, no others), a quoted descr, True or
// False, and a tuple of non-negative integers. Every length is checked before
// it is used and the data size is computed with overflow checks and compared
// with the file size before anything is allocated.
//
//===----------------------------------------------------------------------===//
#include "runtime/Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace attnc::runtime {

namespace {
constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// Shapes beyond 32 dimensions are NumPy's own limit (NPY_MAXDIMS in 1.x).
constexpr size_t kMaxRank = 32;
// Byte sizes stay below 2^62 so every later sum or product of them fits.
constexpr uint64_t kMaxBytes = uint64_t(1) << 62;
// NumPy refuses headers above 10000 bytes unless told otherwise; we allow
// more (a 32-d shape is short) but not megabytes of padding.
constexpr size_t kMaxHeader = 1 << 20;

struct DtypeRow {
  attn_dtype dtype;
  const char *descr;
};
// `<u1` and `=u1` are what some writers emit for one-byte types; NumPy itself
// writes `|u1`. One-byte data has no byte order, so all three mean u8.
// NumPy has no bfloat16: `<u2` is how bf16 travels, as its raw bits (the
// writer writes bf16 so); no kernel takes 16-bit integers. The first row of
// a dtype is the descr the writer uses.
const DtypeRow kDtypes[] = {{ATTN_F32, "<f4"}, {ATTN_I32, "<i4"},
                            {ATTN_U8, "|u1"},  {ATTN_U8, "<u1"},
                            {ATTN_U8, "=u1"},  {ATTN_F16, "<f2"},
                            {ATTN_BF16, "<u2"}};
constexpr char kExpectedDtypes[] =
    "expected '<f4' (f32), '<i4' (i32), '|u1' (u8), '<f2' (f16) or '<u2' "
    "(bf16 bits)";

/// A cursor over the header text with the few Python-literal pieces we need.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text_(text) {}

  bool parse(std::string &descr, bool &fortran, std::vector<int64_t> &shape,
             std::string &error) {
    bool seenDescr = false, seenFortran = false, seenShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("expected '{' at the start of the header dict", error);
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return fail("expected a quoted key in the header dict", error);
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after key '" + key + "'", error);
      skipSpace();
      if (key == "descr") {
        if (seenDescr)
          return fail("key 'descr' appears twice", error);
        seenDescr = true;
        if (peek() == '[')
          return fail("structured dtypes are not supported", error);
        if (!parseString(descr))
          return fail("expected a quoted string for 'descr'", error);
      } else if (key == "fortran_order") {
        if (seenFortran)
          return fail("key 'fortran_order' appears twice", error);
        seenFortran = true;
        if (consumeWord("True"))
          fortran = true;
        else if (consumeWord("False"))
          fortran = false;
        else
          return fail("expected True or False for 'fortran_order'", error);
      } else if (key == "shape") {
        if (seenShape)
          return fail("key 'shape' appears twice", error);
        seenShape = true;
        if (!parseShape(shape, error))
          return false;
      } else {
        return fail("unexpected key '" + key +
                        "' (a .npy header has exactly 'descr', "
                        "'fortran_order' and 'shape')",
                    error);
      }
      skipSpace();
      if (consume(','))
        continue;
      if (consume('}'))
        break;
      return fail("expected ',' or '}' after the value of '" + key + "'",
                  error);
    }
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected text after the header dict", error);
    if (!seenDescr || !seenFortran || !seenShape) {
      const char *missing = !seenDescr     ? "descr"
                            : !seenFortran ? "fortran_order"
                                           : "shape";
      return fail(std::string("missing key '") + missing + "'", error);
    }
    return true;
  }

private:
  static bool fail(const std::string &message, std::string &error) {
    error = "malformed .npy header: " + message;
    return false;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c || pos_ >= text_.size())
      return false;
    ++pos_;
    return true;
  }
  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0)
      return false;
    pos_ += n;
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r'))
      ++pos_;
  }
  bool parseString(std::string &out) {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return false;
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string::npos)
      return false;
    out = text_.substr(pos_ + 1, end - pos_ - 1);
    // Escapes never occur in the keys and descrs we accept.
    if (out.find('\\') != std::string::npos)
      return false;
    pos_ = end + 1;
    return true;
  }
  bool parseShape(std::vector<int64_t> &shape, std::string &error) {
    shape.clear();
    if (!consume('('))
      return fail("expected a tuple for 'shape'", error);
    skipSpace();
    if (consume(')'))
      return true;
    while (true) {
      skipSpace();
      if (peek() == '-')
        return fail("negative dimension in 'shape'", error);
      if (peek() < '0' || peek() > '9')
        return fail("expected an integer in 'shape'", error);
      uint64_t value = 0;
      while (peek() >= '0' && peek() <= '9') {
        value = value * 10 + uint64_t(peek() - '0');
        if (value >= kMaxBytes)
          return fail("dimension too large in 'shape'", error);
        ++pos_;
      }
      // Python 2 era writers append L to longs.
      consume('L');
      if (shape.size() == kMaxRank)
        return fail("more than 32 dimensions in 'shape'", error);
      shape.push_back(int64_t(value));
      skipSpace();
      bool comma = consume(',');
      skipSpace();
      if (consume(')')) {
        // (3) is an int in Python, not a tuple; NumPy always writes (3,).
        if (shape.size() == 1 && !comma)
          return fail("expected ',' in the one-element tuple 'shape'", error);
        return true;
      }
      if (!comma)
        return fail("expected ',' or ')' in 'shape'", error);
    }
  }

  const std::string &text_;
  size_t pos_ = 0;
};

uint32_t readLE(const uint8_t *p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

} // namespace

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

void NpyArray::Free::operator()(void *p) const { std::free(p); }

NpyArray::NpyArray(attn_dtype dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  std::string error;
  if (!npyByteSize(dtype_, shape_, bytes_, error))
    bytes_ = 0;
  // 64-byte alignment suits every vector width; size rounded up as
  // aligned_alloc requires, and never 0 so data() is never NULL.
  size_t rounded = (bytes_ + 63) / 64 * 64;
  data_.reset(std::aligned_alloc(64, rounded ? rounded : 64));
  if (data_)
    std::memset(data_.get(), 0, rounded ? rounded : 64);
}

int64_t NpyArray::elementCount() const {
  size_t size = attn_dtype_size(dtype_);
  return size ? int64_t(bytes_ / size) : 0;
}

attn_tensor NpyArray::view() {
  return {data(), dtype_, int32_t(shape_.size()), shape_.data(), nullptr};
}

bool npyByteSize(attn_dtype dtype, const std::vector<int64_t> &shape,
                 size_t &bytes, std::string &error) {
  uint64_t total = attn_dtype_size(dtype);
  if (!total) {
    error = "unknown element type";
    return false;
  }
  for (int64_t extent : shape) {
    if (extent < 0) {
      error = "negative extent " + std::to_string(extent);
      return false;
    }
    if (extent == 0) {
      total = 0;
      continue;
    }
    if (total > kMaxBytes / uint64_t(extent)) {
      error = "shape " + shapeText(shape) + " is too large (its byte size "
              "overflows)";
      return false;
    }
    total *= uint64_t(extent);
  }
  bytes = size_t(total);
  return true;
}

const char *npyDescr(attn_dtype dtype) {
  for (const DtypeRow &row : kDtypes)
    if (row.dtype == dtype)
      return row.descr;
  return "?";
}

bool parseNpyHeader(const uint8_t *bytes, size_t size, NpyHeader &result,
                    std::string &error) {
  if (size < kMagicSize || std::memcmp(bytes, kMagic, kMagicSize) != 0) {
    error = "not a .npy file (it does not start with \\x93NUMPY)";
    return false;
  }
  if (size < 8) {
    error = "truncated .npy file (no version)";
    return false;
  }
  int major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    error = "unsupported .npy version " + std::to_string(major) + "." +
            std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)";
    return false;
  }
  // Version 1 stores the header length in 2 bytes, 2 and 3 in 4 bytes.
  size_t lengthBytes = major == 1 ? 2 : 4;
  size_t prefix = 8 + lengthBytes;
  if (size < prefix) {
    error = "truncated .npy file (no header length)";
    return false;
  }
  size_t headerLength = readLE(bytes + 8, int(lengthBytes));
  if (headerLength > kMaxHeader) {
    error = "malformed .npy header: header length " +
            std::to_string(headerLength) + " is absurdly large";
    return false;
  }
  if (size - prefix < headerLength) {
    error = "truncated .npy file: the header needs " +
            std::to_string(headerLength) + " bytes but only " +
            std::to_string(size - prefix) + " follow";
    return false;
  }
  std::string header(reinterpret_cast<const char *>(bytes + prefix),
                     headerLength);
  // Versions 1 and 2 are latin-1 text; 3 allows UTF-8 (only in field names
  // of structured dtypes, which we reject anyway). A NUL is never valid.
  if (header.find('\0') != std::string::npos) {
    error = "malformed .npy header: it contains a NUL byte";
    return false;
  }

  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  if (!HeaderParser(header).parse(descr, fortran, shape, error))
    return false;

  const DtypeRow *row = nullptr;
  for (const DtypeRow &r : kDtypes)
    if (descr == r.descr)
      row = &r;
  if (!row) {
    std::string why;
    if (descr.size() == 3 && descr[0] == '>' &&
        (descr[1] == 'f' || descr[1] == 'i' || descr[1] == 'u') && descr[2] != '1')
      why = " (big-endian data)";
    error = "unsupported dtype '" + descr + "'" + why + "; " + kExpectedDtypes;
    return false;
  }
  if (fortran) {
    error = "Fortran-order arrays are not supported; save a C-order array "
            "(numpy.ascontiguousarray)";
    return false;
  }
  size_t dataBytes = 0;
  if (!npyByteSize(row->dtype, shape, dataBytes, error)) {
    error = "unsupported shape: " + error;
    return false;
  }
  result.dtype = row->dtype;
  result.shape = std::move(shape);
  result.dataOffset = prefix + headerLength;
  result.dataBytes = dataBytes;
  return true;
}

bool checkNpyDataSize(const NpyHeader &header, uint64_t available, std::string &error) {
  if (available < header.dataBytes) {
    error = "truncated .npy data: shape " + shapeText(header.shape) + " of " +
            attn_dtype_name(header.dtype) + " needs " +
            std::to_string(header.dataBytes) + " bytes but only " +
            std::to_string(available) + " follow the header";
    return false;
  }
  if (available > header.dataBytes) {
    error = "malformed .npy file: " + std::to_string(available - header.dataBytes) +
            " bytes after the data of shape " + shapeText(header.shape);
    return false;
  }
  return true;
}

bool parseNpy(const uint8_t *bytes, size_t size, NpyArray &array,
              std::string &error) {
  NpyHeader header;
  if (!parseNpyHeader(bytes, size, header, error) ||
      !checkNpyDataSize(header, size - header.dataOffset, error))
    return false;
  NpyArray result(header.dtype, header.shape);
  if (!result.data()) {
    error = "out of memory reading " + std::to_string(header.dataBytes) + " bytes";
    return false;
  }
  // The data is little-endian like every machine this runs on.
  if (header.dataBytes)
    std::memcpy(result.data(), bytes + header.dataOffset, header.dataBytes);
  array = std::move(result);
  return true;
}

std::string encodeNpy(attn_dtype dtype, const std::vector<int64_t> &shape,
                      const void *data) {
  std::string dict = std::string("{'descr': '") + npyDescr(dtype) +
                     "', 'fortran_order': False, 'shape': " + shapeText(shape) +
                     ", }";
  // Pad with spaces and end with '\n' so the data starts at a multiple of 64,
  // as NumPy does.
  bool v2 = dict.size() + 1 + 10 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicSize);
  out += char(v2 ? 2 : 1);
  out += char(0);
  uint32_t length = uint32_t(dict.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i)
    out += char((length >> (8 * i)) & 0xff);
  out += dict;
  size_t bytes = 0;
  std::string ignored;
  if (npyByteSize(dtype, shape, bytes, ignored) && bytes)
    out.append(static_cast<const char *>(data), bytes);
  return out;
}

} // namespace attnc::runtime
