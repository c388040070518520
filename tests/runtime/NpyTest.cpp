//===- NpyTest.cpp - .npy reading and writing -----------------------------===//
//
// Round trips of every supported dtype and rank, the three format versions,
// and one test per rejected input with its exact message: the reader is fed
// hand-built images so each malformation is isolated.
//
//===----------------------------------------------------------------------===//
#include "runtime/Npy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <utility>

using namespace attnc::runtime;

namespace {

/// A .npy image with the given version, header dict text (padded with
/// spaces and a newline unless `raw`) and data bytes.
std::string image(int major, const std::string &dict, const std::string &data,
                  bool raw = false) {
  std::string header = dict;
  if (!raw) {
    size_t prefix = major == 1 ? 10 : 12;
    while ((prefix + header.size() + 1) % 64)
      header += ' ';
    header += '\n';
  }
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  uint32_t n = uint32_t(header.size());
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i)
    out += char((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string dictFor(const std::string &descr, const std::string &shape,
                    const char *fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran +
         ", 'shape': " + shape + ", }";
}

std::string parseError(const std::string &bytes) {
  NpyArray array;
  std::string error;
  EXPECT_FALSE(parseNpy(reinterpret_cast<const uint8_t *>(bytes.data()),
                        bytes.size(), array, error));
  return error;
}

bool parseOk(const std::string &bytes, NpyArray &array) {
  std::string error;
  bool ok = parseNpy(reinterpret_cast<const uint8_t *>(bytes.data()),
                     bytes.size(), array, error);
  EXPECT_EQ(error, "");
  return ok;
}

std::string tempPath(const char *name) {
  return testing::TempDir() + "/npytest_" + std::to_string(getpid()) + "_" + name;
}

} // namespace

TEST(Npy, RoundTripF32Rank4) {
  std::vector<int64_t> shape = {2, 3, 1, 5};
  NpyArray a(ATTN_F32, shape);
  for (int64_t i = 0; i < a.elementCount(); ++i)
    a.as<float>()[i] = float(i) * 0.5f - 3.0f;
  std::string path = tempPath("f32.npy"), error;
  ASSERT_TRUE(writeNpy(path, a, error)) << error;
  NpyArray b;
  ASSERT_TRUE(readNpy(path, b, error)) << error;
  EXPECT_EQ(b.dtype(), ATTN_F32);
  EXPECT_EQ(b.shape(), shape);
  ASSERT_EQ(b.byteSize(), 30u * 4);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.byteSize()), 0);
  std::remove(path.c_str());
}

TEST(Npy, RoundTripI32U8F16Bf16AndScalar) {
  for (attn_dtype dtype : {ATTN_I32, ATTN_U8, ATTN_F16, ATTN_BF16}) {
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{}, std::vector<int64_t>{7},
          std::vector<int64_t>{0, 4}}) {
      NpyArray a(dtype, shape);
      for (size_t i = 0; i < a.byteSize(); ++i)
        static_cast<uint8_t *>(a.data())[i] = uint8_t(i * 37 + 1);
      std::string bytes = encodeNpy(dtype, shape, a.data());
      EXPECT_EQ(bytes.size() % 64, a.byteSize() % 64) << "header not padded";
      NpyArray b;
      ASSERT_TRUE(parseOk(bytes, b));
      EXPECT_EQ(b.dtype(), dtype);
      EXPECT_EQ(b.shape(), shape);
      ASSERT_EQ(b.byteSize(), a.byteSize());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.byteSize()), 0);
    }
  }
}

TEST(Npy, WritesNumPysHeaderText) {
  // What numpy.save writes for np.array([1, 2, 3], dtype='<f4'): the dict,
  // spaces up to byte 126, a newline, then the data at offset 128.
  float x[3] = {1, 2, 3};
  std::string bytes = encodeNpy(ATTN_F32, {3}, x);
  ASSERT_EQ(bytes.size(), 128u + 12);
  EXPECT_EQ(bytes.substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  EXPECT_EQ(bytes.substr(10, 118), dict + std::string(60, ' ') + "\n");
}

TEST(Npy, SixteenBitTypesKeepTheFilesOwnDescr) {
  // f16 is NumPy's float16; bf16 has no NumPy type and travels as `<u2`
  // bits, and a `<u2` file reads back as bf16 (the only 16-bit integer use).
  uint16_t bits[2] = {0x3c00, 0xc000};
  for (auto [dtype, descr] : {std::pair{ATTN_F16, "<f2"}, std::pair{ATTN_BF16, "<u2"}}) {
    EXPECT_STREQ(npyDescr(dtype), descr);
    std::string bytes = encodeNpy(dtype, {2}, bits);
    EXPECT_NE(bytes.find(std::string("'descr': '") + descr + "'"), std::string::npos);
    NpyArray a;
    ASSERT_TRUE(parseOk(image(1, dictFor(descr, "(2,)"), std::string(
                                     reinterpret_cast<const char *>(bits), 4)),
                        a));
    EXPECT_EQ(a.dtype(), dtype);
    EXPECT_EQ(a.byteSize(), 4u);
    EXPECT_EQ(a.as<uint16_t>()[1], 0xc000);
  }
}

TEST(Npy, ReadsVersions2And3AndDoubleQuotes) {
  int32_t data[2] = {-5, 9};
  std::string raw(reinterpret_cast<const char *>(data), 8);
  for (int major : {2, 3}) {
    NpyArray a;
    ASSERT_TRUE(parseOk(
        image(major, "{\"descr\": \"<i4\", \"fortran_order\": False, "
                     "\"shape\": (2,)}",
              raw),
        a));
    EXPECT_EQ(a.dtype(), ATTN_I32);
    EXPECT_EQ(a.as<int32_t>()[1], 9);
  }
}

TEST(Npy, AcceptsKeysInAnyOrderAndU1Spellings) {
  NpyArray a;
  ASSERT_TRUE(parseOk(
      image(1, "{'shape': (1, 2), 'fortran_order': False, 'descr': '<u1'}",
            "\x01\x02"),
      a));
  EXPECT_EQ(a.dtype(), ATTN_U8);
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{1, 2}));
}

TEST(Npy, RejectsBadMagic) {
  EXPECT_EQ(parseError("hello world, this is not numpy"),
            "not a .npy file (it does not start with \\x93NUMPY)");
  EXPECT_EQ(parseError(""), "not a .npy file (it does not start with \\x93NUMPY)");
}

TEST(Npy, RejectsTruncatedPrefix) {
  EXPECT_EQ(parseError("\x93NUMPY"), "truncated .npy file (no version)");
  EXPECT_EQ(parseError(std::string("\x93NUMPY\x01\x00\x10", 9)),
            "truncated .npy file (no header length)");
}

TEST(Npy, RejectsUnknownVersion) {
  std::string bytes = image(1, dictFor("<f4", "()"), "abcd");
  bytes[6] = 4;
  EXPECT_EQ(parseError(bytes),
            "unsupported .npy version 4.0 (supported: 1.0, 2.0, 3.0)");
  bytes[6] = 1;
  bytes[7] = 1;
  EXPECT_EQ(parseError(bytes),
            "unsupported .npy version 1.1 (supported: 1.0, 2.0, 3.0)");
}

TEST(Npy, RejectsTruncatedHeader) {
  std::string bytes = image(1, dictFor("<f4", "(2,)"), "");
  EXPECT_EQ(parseError(bytes.substr(0, 40)),
            "truncated .npy file: the header needs 118 bytes but only 30 follow");
}

TEST(Npy, RejectsAbsurdHeaderLength) {
  std::string bytes = image(2, dictFor("<f4", "()"), "abcd");
  bytes[11] = 0x7f; // header length ~2 GiB
  EXPECT_EQ(parseError(bytes),
            "malformed .npy header: header length 2130706548 is absurdly large");
}

TEST(Npy, RejectsMalformedDicts) {
  struct Case {
    const char *dict;
    const char *message;
  } cases[] = {
      {"'descr': '<f4'}", "expected '{' at the start of the header dict"},
      {"{descr: '<f4'}", "expected a quoted key in the header dict"},
      {"{'descr' '<f4'}", "expected ':' after key 'descr'"},
      {"{'descr': <f4}", "expected a quoted string for 'descr'"},
      {"{'descr': '<f4', 'descr': '<f4'}", "key 'descr' appears twice"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}",
       "structured dtypes are not supported"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': ()}",
       "expected True or False for 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}",
       "expected a tuple for 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
       "negative dimension in 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}",
       "expected ',' or ')' in 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (x,)}",
       "expected an integer in 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}",
       "expected ',' in the one-element tuple 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
       "dimension too large in 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (), 'extra': 1}",
       "unexpected key 'extra' (a .npy header has exactly 'descr', "
       "'fortran_order' and 'shape')"},
      {"{'descr': '<f4', 'shape': ()}", "missing key 'fortran_order'"},
      {"{'fortran_order': False, 'shape': ()}", "missing key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'descr': '<f4' 'fortran_order': False}",
       "expected ',' or '}' after the value of 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ()} junk",
       "unexpected text after the header dict"},
      {"{'descr': '<f4", "expected a quoted string for 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,", "expected an integer in 'shape'"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(parseError(image(1, c.dict, "")),
              std::string("malformed .npy header: ") + c.message)
        << c.dict;
}

TEST(Npy, RejectsTooManyDimensions) {
  std::string shape = "(";
  for (int i = 0; i < 33; ++i)
    shape += "1, ";
  shape += ")";
  EXPECT_EQ(parseError(image(1, dictFor("<f4", shape), "abcd")),
            "malformed .npy header: more than 32 dimensions in 'shape'");
}

TEST(Npy, RejectsNulInHeader) {
  EXPECT_EQ(parseError(image(1, std::string("{'descr'\0", 9), "")),
            "malformed .npy header: it contains a NUL byte");
}

TEST(Npy, RejectsOtherDtypes) {
  const std::string expected = "expected '<f4' (f32), '<i4' (i32), '|u1' (u8), "
                               "'<f2' (f16) or '<u2' (bf16 bits)";
  EXPECT_EQ(parseError(image(1, dictFor("<f8", "(1,)"), "12345678")),
            "unsupported dtype '<f8'; " + expected);
  EXPECT_EQ(parseError(image(1, dictFor(">f4", "(1,)"), "1234")),
            "unsupported dtype '>f4' (big-endian data); " + expected);
  EXPECT_EQ(parseError(image(1, dictFor(">f2", "(1,)"), "12")),
            "unsupported dtype '>f2' (big-endian data); " + expected);
  EXPECT_EQ(parseError(image(1, dictFor(">u2", "(1,)"), "12")),
            "unsupported dtype '>u2' (big-endian data); " + expected);
  EXPECT_EQ(parseError(image(1, dictFor("<i8", "(1,)"), "12345678")),
            "unsupported dtype '<i8'; " + expected);
  // Only the spellings NumPy writes for 2-byte data: it never writes `|f2`.
  EXPECT_EQ(parseError(image(1, dictFor("|f2", "(1,)"), "12")),
            "unsupported dtype '|f2'; " + expected);
  EXPECT_EQ(parseError(image(1, dictFor("<i2", "(1,)"), "12")),
            "unsupported dtype '<i2'; " + expected);
}

TEST(Npy, RejectsFortranOrder) {
  EXPECT_EQ(parseError(image(1, dictFor("<f4", "(1, 1)", "True"), "1234")),
            "Fortran-order arrays are not supported; save a C-order array "
            "(numpy.ascontiguousarray)");
}

TEST(Npy, RejectsShapesWhoseSizeOverflows) {
  EXPECT_EQ(parseError(image(1, dictFor("<f4", "(4294967296, 4294967296)"), "")),
            "unsupported shape: shape (4294967296, 4294967296) is too large "
            "(its byte size overflows)");
  EXPECT_EQ(
      parseError(image(1, dictFor("|u1", "(3037000499, 3037000499, 2)"), "")),
      "unsupported shape: shape (3037000499, 3037000499, 2) is too large (its "
      "byte size overflows)");
}

TEST(Npy, RejectsTruncatedAndOverlongData) {
  EXPECT_EQ(parseError(image(1, dictFor("<f4", "(2, 3)"), "12345678")),
            "truncated .npy data: shape (2, 3) of f32 needs 24 bytes but only "
            "8 follow the header");
  EXPECT_EQ(parseError(image(1, dictFor("<i4", "(1,)"), "12345")),
            "malformed .npy file: 1 bytes after the data of shape (1,)");
}

TEST(Npy, FileErrorsNameThePath) {
  NpyArray a;
  std::string error;
  EXPECT_FALSE(readNpy("/nonexistent/x.npy", a, error));
  EXPECT_EQ(error, "/nonexistent/x.npy: cannot open: No such file or directory");
  std::string path = tempPath("bad.npy");
  FILE *f = std::fopen(path.c_str(), "wb");
  std::fputs("garbage", f);
  std::fclose(f);
  EXPECT_FALSE(readNpy(path, a, error));
  EXPECT_EQ(error, path + ": not a .npy file (it does not start with \\x93NUMPY)");
  std::remove(path.c_str());
  EXPECT_FALSE(writeNpy("/nonexistent/y.npy", ATTN_F32, {1}, "abcd", error));
  EXPECT_EQ(error, "/nonexistent/y.npy: cannot create: No such file or directory");
}

// Every prefix of a valid image and every single-byte corruption of its
// header is rejected or accepted without crashing (run under ASan in CI).
TEST(Npy, NeverCrashesOnPrefixesOrCorruptions) {
  float x[6] = {1, 2, 3, 4, 5, 6};
  std::string good = encodeNpy(ATTN_F32, {2, 3}, x);
  for (size_t n = 0; n < good.size(); ++n) {
    NpyArray a;
    std::string error;
    EXPECT_FALSE(parseNpy(reinterpret_cast<const uint8_t *>(good.data()), n, a,
                          error));
    EXPECT_FALSE(error.empty());
  }
  for (size_t i = 0; i < 64; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = char(bad[i] ^ (1 << bit));
      NpyArray a;
      std::string error;
      parseNpy(reinterpret_cast<const uint8_t *>(bad.data()), bad.size(), a,
               error);
    }
  }
}
