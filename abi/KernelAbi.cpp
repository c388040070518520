//===- KernelAbi.cpp - The argument contract shared by compiler and runtime ===//
#include "abi/KernelAbi.h"

namespace attnc {

static const ElemTypeInfo kElemTypes[] = {
    {ElemType::F32, "f32", "float", 4, 2},
    {ElemType::I32, "i32", "int32_t", 4, 0},
    {ElemType::U8, "u8", "uint8_t", 1, 1},
    {ElemType::F16, "f16", "uint16_t", 2, 2},
    {ElemType::BF16, "bf16", "uint16_t", 2, 4},
};

const ElemTypeInfo &info(ElemType type) {
  for (const ElemTypeInfo &row : kElemTypes)
    if (row.type == type)
      return row;
  return kElemTypes[0];
}

const char *toString(ElemType type) { return info(type).name; }

std::string formatShape(const ArgSpec &arg) {
  std::string s = std::string(toString(arg.type)) + "[";
  for (size_t i = 0; i < arg.shape.size(); ++i) {
    if (i)
      s += ", ";
    const ArgDim &d = arg.shape[i];
    s += d.name.empty() ? std::to_string(d.value) : d.name;
    if (!d.name.empty() && d.value)
      s += "=" + std::to_string(d.value);
  }
  return s + "]";
}

std::vector<ArgSpec> backwardArguments(const std::vector<ArgSpec> &forward) {
  std::vector<ArgSpec> args;
  const ArgSpec *out = nullptr, *lse = nullptr;
  for (const ArgSpec &arg : forward) {
    if (!arg.isOutput)
      args.push_back(arg);
    else if (arg.name == "out")
      out = &arg;
    else if (arg.name == "lse")
      lse = &arg;
  }
  if (!out || !lse)
    return {}; // not a kernel with a backward (it must return out and lse)
  for (const ArgSpec *given : {out, lse}) {
    args.push_back(*given);
    args.back().isOutput = false;
  }
  args.push_back(*out);
  args.back().name = "d_out";
  args.back().isOutput = false;
  for (const ArgSpec &arg : forward)
    if (!arg.isOutput && isFloat(arg.type)) {
      args.push_back(arg);
      args.back().name = "d_" + arg.name;
      args.back().isOutput = true;
      args.back().isWritten = false;
    }
  return args;
}

std::string encodeSignature(const std::vector<ArgSpec> &args) {
  std::string text;
  for (const ArgSpec &arg : args) {
    text += arg.name + (arg.isOutput ? " out " : arg.isWritten ? " inout " : " in ") +
            toString(arg.type) + " ";
    if (arg.shape.empty())
      text += "-";
    for (size_t i = 0; i < arg.shape.size(); ++i) {
      const ArgDim &d = arg.shape[i];
      if (i)
        text += ",";
      if (d.name.empty())
        text += std::to_string(d.value);
      else if (d.value)
        text += d.name + "=" + std::to_string(d.value);
      else
        text += d.name;
    }
    text += "\n";
  }
  return text;
}

static bool parseInt(const std::string &s, int64_t &value) {
  if (s.empty() || s.size() > 18)
    return false;
  value = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

static bool parseElemType(const std::string &s, ElemType &type) {
  for (const ElemTypeInfo &row : kElemTypes) {
    if (s == row.name) {
      type = row.type;
      return true;
    }
  }
  return false;
}

bool decodeSignature(const std::string &text, std::vector<ArgSpec> &args) {
  args.clear();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      return false;
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    std::vector<std::string> words;
    size_t w = 0;
    while (w <= line.size()) {
      size_t space = line.find(' ', w);
      if (space == std::string::npos)
        space = line.size();
      words.push_back(line.substr(w, space - w));
      w = space + 1;
    }
    if (words.size() != 4 || words[0].empty() ||
        (words[1] != "in" && words[1] != "out" && words[1] != "inout"))
      return false;
    ArgSpec arg;
    arg.name = words[0];
    arg.isOutput = words[1] == "out";
    arg.isWritten = words[1] == "inout";
    if (!parseElemType(words[2], arg.type))
      return false;
    if (words[3] != "-") {
      size_t d = 0;
      const std::string &dims = words[3];
      while (d <= dims.size()) {
        size_t comma = dims.find(',', d);
        if (comma == std::string::npos)
          comma = dims.size();
        std::string item = dims.substr(d, comma - d);
        d = comma + 1;
        ArgDim dim;
        size_t eq = item.find('=');
        if (eq != std::string::npos) {
          dim.name = item.substr(0, eq);
          if (dim.name.empty() || !parseInt(item.substr(eq + 1), dim.value))
            return false;
        } else if (!parseInt(item, dim.value)) {
          if (item.empty())
            return false;
          dim.name = item;
        }
        arg.shape.push_back(dim);
      }
    }
    args.push_back(std::move(arg));
  }
  return true;
}

} // namespace attnc
