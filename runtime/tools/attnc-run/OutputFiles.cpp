//===- OutputFiles.cpp - attnc-run never loses data it was given ----------===//
//
// A path that does not exist yet is compared by its normalized absolute form
// (the folder resolved with realpath when it exists, so `d/../x.npy`,
// `./x.npy` and a symlinked folder agree); existing files by identity, which
// also catches hard links.
//
//===----------------------------------------------------------------------===//
#include "runtime/tools/attnc-run/OutputFiles.h"

#include "runtime/Npy.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

namespace attnc::run {

namespace {

/// `path` made absolute with "." and ".." segments removed lexically.
std::string lexicallyNormal(const std::string &path) {
  std::string absolute = path;
  if (path.empty() || path[0] != '/') {
    char cwd[PATH_MAX];
    absolute = std::string(getcwd(cwd, sizeof cwd) ? cwd : ".") + "/" + path;
  }
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= absolute.size()) {
    size_t next = absolute.find('/', pos);
    if (next == std::string::npos)
      next = absolute.size();
    std::string part = absolute.substr(pos, next - pos);
    if (part == "..") {
      if (!parts.empty())
        parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    pos = next + 1;
  }
  std::string out;
  for (const std::string &part : parts)
    out += "/" + part;
  return out.empty() ? "/" : out;
}

/// What identifies the file `path` names, or would name once created.
struct Identity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string normal;
  bool operator==(const Identity &o) const {
    return exists && o.exists ? device == o.device && inode == o.inode
                              : !exists && !o.exists && normal == o.normal;
  }
};

Identity identify(const std::string &path) {
  Identity id;
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.device = st.st_dev;
    id.inode = st.st_ino;
    return id;
  }
  std::string normal = lexicallyNormal(path);
  size_t slash = normal.rfind('/');
  std::string dir = normal.substr(0, slash);
  char resolved[PATH_MAX];
  if (!dir.empty() && realpath(dir.c_str(), resolved))
    normal = std::string(resolved) + normal.substr(slash);
  id.normal = normal;
  return id;
}

} // namespace

bool checkOutputsAreDistinct(const std::vector<NamedFile> &readFiles,
                             const std::vector<NamedFile> &outputs, std::string &error) {
  std::vector<Identity> read, written;
  for (const NamedFile &f : readFiles)
    read.push_back(identify(f.path));
  for (size_t i = 0; i < outputs.size(); ++i) {
    Identity id = identify(outputs[i].path);
    for (size_t j = 0; j < readFiles.size(); ++j)
      if (id == read[j]) {
        error = outputs[i].role + " would overwrite " + readFiles[j].role + " ('" +
                outputs[i].path + "' is '" + readFiles[j].path +
                "'); write it to another file";
        return false;
      }
    for (size_t j = 0; j < i; ++j)
      if (id == written[j]) {
        error = outputs[j].role + " and " + outputs[i].role + " name the same file ('" +
                outputs[j].path + "', '" + outputs[i].path + "'); one would be lost";
        return false;
      }
    written.push_back(id);
  }
  return true;
}

void OutputBatch::add(std::string temporary, std::string path) {
  files_.emplace_back(std::move(temporary), std::move(path));
}

bool OutputBatch::commit(std::string &error) {
  while (!files_.empty()) {
    auto [temporary, path] = files_.front();
    files_.erase(files_.begin());
    if (!runtime::commitNpy(temporary, path, error))
      return false; // the destructor removes the rest
  }
  return true;
}

OutputBatch::~OutputBatch() {
  for (const auto &file : files_)
    unlink(file.first.c_str());
}

} // namespace attnc::run
